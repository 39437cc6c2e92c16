package ops

// The routed MoE's row passes (Wonderful Matrices §3.4's mixture of SwiGLU
// experts, the "MoE" of the (SR) and (SH) patterns): each walks one
// expert's tokens, a row of d values per token, between the expert's own
// rows (its pass, in token order) and the tokens' rows of the layer's
// input or output, scattered by token index:
//
//	combine     dst_t += s·rows_r            (s = g_te forward, 1 backward)
//	gate grad   dg_te = <dy_t, Y_r>,  dY_r = g_te·dy_t
//
// In Go these were one value at a time: the gate gradient's dot a single
// float64 add chain, about 3% of a (SH)3 AH d_model 256 training step, and
// the combine about 2% of its evaluation. The float32 forms run in C under
// the openblas build (moe_rows_openblas.go) and agree with these
// definitions to the bit (TestMoERowsMatchGo): the dot products sum in
// dot8's eight lanes, the scaled rows are one multiply (and one add) per
// value.

// moeScatterRows adds, for each r, s·rows[r·d:(r+1)·d] to row tokens[r] of
// dst (rows of d), with s = g[tokens[r]·n + e], or 1 when g is nil. It is
// moeCombine's inner pass for one expert over one worker's tokens.
func moeScatterRows[T floats](dst, rows []T, tokens []int, g []T, n, e, d int) {
	if dst32, ok := any(dst).([]float32); ok {
		moeScatterRows32(dst32, any(rows).([]float32), tokens, any(g).([]float32), n, e, d)
		return
	}
	moeScatterRowsGo(dst, rows, tokens, g, n, e, d)
}

// moeScatterRowsGo is moeScatterRows in Go, for any float type.
func moeScatterRowsGo[T floats](dst, rows []T, tokens []int, g []T, n, e, d int) {
	for r, t := range tokens {
		scale := T(1)
		if g != nil {
			scale = g[t*n+e]
		}
		row, src := dst[t*d:(t+1)*d], rows[r*d:(r+1)*d]
		for j := range row {
			row[j] += scale * src[j]
		}
	}
}

// moeGateGrad is the first pass of expert e's backward over its tokens: for
// each r, with t = tokens[r], the gate's gradient dg[t·n + e] = <dy_t, Y_r>
// (float64, in dot8's order, rounded once to T) and the expert output's
// gradient dY_r = g[t·n + e]·dy_t. Rows have d values; dy and dg are the
// layer's (all tokens), Y and dY the expert's (its m rows).
func moeGateGrad[T floats](dg, dY, dy, Y, g []T, tokens []int, n, e, d int) {
	if dg32, ok := any(dg).([]float32); ok {
		moeGateGrad32(dg32, any(dY).([]float32), any(dy).([]float32), any(Y).([]float32), any(g).([]float32), tokens, n, e, d)
		return
	}
	moeGateGradGo(dg, dY, dy, Y, g, tokens, n, e, d)
}

// moeGateGradGo is moeGateGrad in Go, for any float type.
func moeGateGradGo[T floats](dg, dY, dy, Y, g []T, tokens []int, n, e, d int) {
	for r, t := range tokens {
		src, out := dy[t*d:(t+1)*d], dY[r*d:(r+1)*d]
		dg[t*n+e] = T(dot8(src, Y[r*d:(r+1)*d]))
		gt := g[t*n+e]
		for j, v := range src {
			out[j] = gt * v
		}
	}
}
