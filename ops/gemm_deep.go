package ops

// Weight gradients: dw = xᵀ·dy for x [rows, din] and dy [rows, dout], a
// product whose inner dimension is the batch's rows (2048 at t 256 b 8) and
// whose output is a small [din, dout]. OpenBLAS runs it whole by packing
// both operands; cut along the rows into blocks small enough for its
// small-matrix kernels, which read the operands where they are, the same
// product ran 14–31% faster here (docs/performance.md, "Weight gradients in
// blocks of rows").

// deepRowBlock returns the rows per block of a weight gradient with an
// [m, n] output that this build's BLAS runs faster in blocks, or 0 to run it
// whole: OpenBLAS's SkylakeX family takes products of m·n·k ≤ 100³ through
// its small kernels (blasSmallMNK). Under 64 rows a block gained nothing (a
// 64 × 260 output, the output layer's at d_model 64, ran at the same speed),
// so larger outputs (every d_model 256 layer's) run whole.
func deepRowBlock(m, n int) int { return smallKernelRows(m*n, 64) }

// weightGrad computes dw = xᵀ·dy [din, dout] for x [rows, din] and dy
// [rows, dout], both packed: a layer's weight gradient, its output columns
// split over the workers and each column's sums in deepRowBlock's blocks of
// the whole output, so the split does not change them.
func weightGrad[T floats](dw, x []T, din int, dy []T, dout, rows int) {
	blk := deepRowBlock(din, dout)
	parallelRanges(dout, func(_, lo, hi int) {
		gemmDeep(blk, din, hi-lo, rows, x, din, dy[lo:], dout, 0, dw[lo:], dout)
	})
}

// gemmDeep computes c = aᵀ·b + beta·c for a [k, m] (lda) and b [k, n]
// (ldb): in blocks of about blk of the k rows, each added into c, when blk
// (from deepRowBlock) is nonzero and below k; else in one product. The
// blocks are of equal size (the last a little shorter) and fixed by k and
// blk alone, so callers that split c's columns over workers pass the blk of
// the whole output and get the same sums whatever the split.
func gemmDeep[T floats](blk, m, n, k int, a []T, lda int, b []T, ldb int, beta T, c []T, ldc int) {
	if blk == 0 || k <= blk {
		gemm(true, false, m, n, k, 1, a, lda, b, ldb, beta, c, ldc)
		return
	}
	blocks := (k + blk - 1) / blk
	step := (k + blocks - 1) / blocks
	for r := 0; r < k; r += step {
		gemm(true, false, m, n, min(step, k-r), 1, a[r*lda:], lda, b[r*ldb:], ldb, beta, c, ldc)
		beta = 1
	}
}
