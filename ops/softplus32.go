package ops

// The float32 softplus of SSD's step sizes, dt = softplus(x W_dt + dt_bias)
// (Wonderful Matrices listing 4; Mamba2), and its derivative σ. In float64
// Go math (math.Exp, math.Log1p, one call per element through mapUnary) the
// pair cost about 80 ns per element, some 6% of a (SM)4 training step at
// d_model 64; these run through exp32 and log1pUnit32 instead (about 11 ns
// per element, still 6% of a (SM)4 evaluation step at d_model 64). The
// pure-Go build runs them as they are; the openblas build runs the same
// arithmetic vectorised in C (wm_softplus, wm_sigmoid in
// activations_openblas.go, about 0.7 ns per element).

// log1pUnit32 is log(1+u) in float32 for u in [0, 1] (the range softplus
// needs; NaN gives NaN). With w = 1+u rounded, log(w) comes from w = 2^e·(1+m),
// m in [√½−1, √2−1), by the degree-9 polynomial of Cephes' logf (Moshier,
// Cephes Math Library, logf.c; about 1 ulp) with e·ln2 added in two parts
// (Cody–Waite), as exp32 does; the rounding of w is added back to first
// order, so tiny u keeps its relative precision.
func log1pUnit32(u float32) float32 {
	const (
		sqrt2 = 1.41421356237309505
		c1    = 0.693359375
		c2    = -2.12194440e-4
	)
	w := 1 + u
	if w == 1 {
		return u // also 0 for 0
	}
	m, e := w-1, float32(0)
	if w >= sqrt2 {
		m, e = 0.5*w-1, 1
	}
	z := m * m
	y := (((((((((7.0376836292e-2*m-1.1514610310e-1)*m+1.1676998740e-1)*m-1.2420140846e-1)*m+
		1.4249322787e-1)*m-1.6668057665e-1)*m+2.0000714765e-1)*m-2.4999993993e-1)*m +
		3.3333331174e-1) * m) * z
	y += c2 * e
	y -= 0.5 * z
	// c is the rounding error of w (exact: w−1 is exact for w in [1, 2]),
	// and log(1+u) = log(w) + log(1 + c/w) ≈ log(w) + c/w.
	c := u - (w - 1)
	return m + (y + c/w) + c1*e
}

// softplus32 is log(1+e^x) = max(x,0) + log(1+e^−|x|) in float32: no
// overflow for large x, full relative precision for very negative x (where it
// is e^x), +Inf at +Inf, 0 at −Inf and NaN for NaN.
func softplus32(x float32) float32 {
	if x > 0 {
		return x + log1pUnit32(exp32(-x))
	}
	return log1pUnit32(exp32(x))
}

// softplusGo32 sets dst[i] = softplus(x[i]) (times scale[i]).
func softplusGo32(dst, x, scale []float32) {
	x = x[:len(dst)]
	if scale == nil {
		for i, v := range x {
			dst[i] = softplus32(v)
		}
		return
	}
	scale = scale[:len(dst)]
	for i, v := range x {
		dst[i] = softplus32(v) * scale[i]
	}
}

// sigmoidGo32 sets dst[i] = σ(x[i]) (times scale[i]): softplus's derivative.
func sigmoidGo32(dst, x, scale []float32) {
	x = x[:len(dst)]
	if scale == nil {
		for i, v := range x {
			dst[i] = sigmoid32(v)
		}
		return
	}
	scale = scale[:len(dst)]
	for i, v := range x {
		dst[i] = sigmoid32(v) * scale[i]
	}
}
