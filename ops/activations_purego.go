//go:build !openblas

package ops

// Without the openblas build tag (no cgo), the float32 activations are the
// Go kernels of activations32.go.

func silu32(dst, x, scale []float32)                            { siluGo32(dst, x, scale) }
func siluGrad32(dst, x, scale []float32)                        { siluGradGo32(dst, x, scale) }
func softplusVec32(dst, x, scale []float32)                     { softplusGo32(dst, x, scale) }
func sigmoidVec32(dst, x, scale []float32)                      { sigmoidGo32(dst, x, scale) }
func gatedSiLU32(y, x, z []float32)                             { gatedSiLUGo32(y, x, z) }
func gatedSiLUGrad32(dx, dz, g, x, z []float32)                 { gatedSiLUGradGo32(dx, dz, g, x, z) }
func expShift32(row []float32, m float32)                       { expShiftGo32(row, m) }
func softmaxRows32(p []float32, rows, n, last0 int)             { softmaxRowsGo(p, rows, n, last0) }
func softmaxGradRows32(d, p, g []float32, rows, n int)          { softmaxGradRowsGo(d, p, g, rows, n) }
func ssdMask32(gm, src, seg []float32, row, r []float64, L int) { ssdMaskGo(gm, src, seg, row, r, L) }
func ssdMaskGrad32(gm, seg, dG []float32, dcum []float64, acc []float32, L int) {
	ssdMaskGradGo(gm, seg, dG, dcum, acc, L)
}

// gatedSiLUBoth32 is the two Go kernels one after the other.
func gatedSiLUBoth32(y, dx, dz, g, x, z []float32) {
	gatedSiLUGo32(y, x, z)
	gatedSiLUGradGo32(dx, dz, g, x, z)
}

// KernelISA names the vector instructions of the float32 kernels: "go" in
// the pure-Go build, which has no C kernels (see the openblas build's).
func KernelISA() string { return "go" }

// cdmoeExpertsC has no C kernels in the pure-Go build: it reports false and
// CDMoE runs its Go loops.
func cdmoeExpertsC(cdmoeRangeBufs) bool { return false }

// retrieveRows32 has no C search in the pure-Go build: it reports false
// and CDMoE runs retrieve.
func retrieveRows32(cdmoeKernel, []float32, int, int, []expertChoice) bool { return false }

// innerFuncRowsC has no C loop in the pure-Go build: it reports false and
// the inner-function value runs innerFuncRowsGo.
func innerFuncRowsC(innerFuncKernel, []float32, []float32, []float32, []float32, int, int) bool {
	return false
}

// retrieveQueriesOK is false in the pure-Go build: CDMoE forms the
// similarities with keySims and searches them with retrieve.
func retrieveQueriesOK(cdmoeKernel) bool { return false }

// retrieveQueries32 is never called in the pure-Go build (retrieveQueriesOK
// is false).
func retrieveQueries32(cdmoeKernel, []float32, []float32, int, int, []expertChoice) {
	panic("ops: retrieveQueries32 without the openblas build")
}

// lseParts32 returns the largest of row (maxOf) and Σ e^(row−m) in
// float64, leaving e^(row−m) in e (len(row) values); row is not empty.
func lseParts32(row, e []float32) (m float32, sum float64) {
	m = maxOf(row)
	e = e[:len(row)]
	copy(e, row)
	expShiftGo32(e, m)
	return m, sum64(e)
}

// lsePartsRows32 is lseParts32 of each of the rows rows of n values of x
// ([rows, n]): maxima in max, sums in sum, e^(row−m) in e.
func lsePartsRows32(x, e, max []float32, sum []float64, rows, n int) {
	for i := range rows {
		max[i], sum[i] = lseParts32(x[i*n:(i+1)*n], e[i*n:(i+1)*n])
	}
}

// scaleRows32 multiplies row i of e ([rows, n]) by f[i].
func scaleRows32(e, f []float32, rows, n int) {
	for i := range rows {
		for j := range e[i*n : (i+1)*n] {
			e[i*n+j] *= f[i]
		}
	}
}

func rmsnormForwardRows32(y, x, w []float32, eps float64, inv []float64) {
	rmsnormForwardRows(y, x, w, eps, inv)
}
func rmsnormBackwardRows32(dx, res, dy, x, w []float32, dw []float64, eps float64, inv []float64) {
	rmsnormBackwardRows(dx, res, dy, x, w, dw, eps, inv)
}

func ssdScaleInputs32(U, W, x []float32, ldx int, dt []float32, ldt int, w []float64, wst, L, hb, p, P int) {
	ssdScaleInputsGo(U, W, x, ldx, dt, ldt, w, wst, L, hb, p, P)
}
func ssdCombineOutput32(y []float32, ld int, Yc, tmp []float32, P int, e, s []float64, est int, D, x []float32, L, hb, p int) {
	ssdCombineOutputGo(y, ld, Yc, tmp, P, e, s, est, D, x, L, hb, p)
}
func ssdRowsDotScale32(dots []float64, a []float32, lda int, b []float32, ldb int, c []float32, ldc int, scale []float32, ssi, ssj, L, hb, p int, add bool) {
	ssdRowsDotScaleGo(dots, a, lda, b, ldb, c, ldc, scale, ssi, ssj, L, hb, p, add)
}
func add32(y, a, b []float32)             { addVecGo(y, a, b) }
func mul32(y, a, b []float32)             { mulVecGo(y, a, b) }
func mulGrad32(da, db, g, a, b []float32) { mulGradVecGo(da, db, g, a, b) }
func moeScatterRows32(dst, rows []float32, tokens []int, g []float32, n, e, d int) {
	moeScatterRowsGo(dst, rows, tokens, g, n, e, d)
}
func moeGateGrad32(dg, dY, dy, Y, g []float32, tokens []int, n, e, d int) {
	moeGateGradGo(dg, dY, dy, Y, g, tokens, n, e, d)
}
func paperMaskRows32(M, P, l []float32, rows, n int) { paperMaskRowsGo(M, P, l, rows, n) }
func paperMaskBackwardRows32(P, dM, l []float32, dl []float64, rows, n int) {
	paperMaskBackwardRowsGo(P, dM, l, dl, rows, n)
}
func ropeRows32(dst, x []float32, cos, sin []float64, lo, hi, t, h, d int, sign float64) {
	ropeRowsGo(dst, x, cos, sin, lo, hi, t, h, d, sign)
}
func moeChoices32(g []float32, tokens, n int) (all, counts []int) { return moeChoicesGo(g, tokens, n) }
