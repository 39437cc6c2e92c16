package ops

// A small product by a transposed right operand, c = a·bᵀ, runs as a·(bᵀ)
// with bᵀ copied out first where OpenBLAS's small-matrix kernels would take
// the untransposed product: in row-major order OpenBLAS 0.3.21 passes a·bᵀ
// to its packing path, not to those kernels. Replayed alone on one core of
// the Zen 4 (Cooperlake kernels), 64 × 64 outputs took, by inner dimension
// k, 2.49 against 1.56 µs (k 16), 3.87 against 2.64 (k 32) and 6.88 against
// 5.04 (k 64) transposed and untransposed; the copy of bᵀ (transposeRows,
// 8 × 8 tiles in C: 0.11 µs for 64 × 16, 0.30 for 64 × 64, against 0.49
// and 1.63 in Go) costs a small part of the difference. The SSD scan's
// chunk products (C·Bᵀ, C·Hᵀ, B·dHᵀ, dY·Uᵀ, inner dimension d_state or
// the head's width) are such products; attention's q·kᵀ copies its keys
// once per batch instead (attention_transposed.go).
//
// The sums are the untransposed kernel's, which may round differently from
// the transposed product's (on the Zen 4 they do not: a (SM)4 checkpoint
// after 20 steps has the same SHA-256 either way); the choice depends only
// on the shape and on the BLAS, so a given build computes the same bits
// every time.

// untransposeB says whether gemm copies bᵀ out for a product of this
// shape: a·bᵀ (a untransposed) that OpenBLAS's small-matrix kernels take
// whole.
func untransposeB(transA, transB bool, m, n, k int) bool {
	return transB && !transA && blasSmallKernels && k > 0 && m*n*k <= blasSmallMNK
}

// gemmUntransposedB is gemm for a·bᵀ through a copy of bᵀ [k, n].
func gemmUntransposedB[T floats](m, n, k int, alpha T, a []T, lda int, b []T, ldb int, beta T, c []T, ldc int) {
	bt := scratchUninit[T](k * n) // written whole
	transposeRows(bt, b, ldb, n, k)
	gemm(false, false, m, n, k, alpha, a, lda, bt, n, beta, c, ldc)
	releaseScratch(bt)
}
