package ops

// expInPlace sets x[i] = e^x[i] in float64. The SSD scan's decays (one
// exponential per token and head, r_i = exp(dt_i·A), in decayChains) take
// it. In the openblas build it runs in C four values at a time (exp64C);
// the pure-Go build calls math.Exp.
func expInPlace(x []float64) { expInPlace64(x) }
