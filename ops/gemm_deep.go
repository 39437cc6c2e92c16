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
// the whole output, so that on gonum's BLAS and OpenBLAS's small-matrix
// kernels the split does not change them (OpenBLAS's Haswell kernels order
// a column's sum by its column range: there the bits are the worker
// count's, as elsewhere in the package). A gradient the
// blocks leave whole (every d_model 256 layer's) over at least
// weightGradHalfRows rows is summed in two halves of the rows instead
// (weightGradHalves).
func weightGrad[T floats](dw, x []T, din int, dy []T, dout, rows int) {
	blk := deepRowBlock(din, dout)
	if blk == 0 && rows >= weightGradHalfRows {
		weightGradHalves(dw, x, din, dy, dout, rows)
		return
	}
	parallelRangesWork(dout, gemmWork(din, dout, rows), func(_, lo, hi int) {
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

// weightGradHalfRows is the fewest rows over which weightGrad sums a whole
// weight gradient in two halves: 2,048, the fewest measured to gain (one
// shard's rows at d_model 256, 1,024 tokens, batch 4 over two shards).
const weightGradHalfRows = 2048

// weightGradHalves computes dw = xᵀ·dy as the sum of the two halves of the
// rows, dw = x[:h]ᵀ·dy[:h] + x[h:]ᵀ·dy[h:] with h = rows/2: the first half
// into dw, the second into a scratch added to it after. On two cores each
// half runs on one, reading half of x and half of dy, where splitting dw's
// columns had each core read all of x: the (SM)3 AM and (SH)3 AH training
// steps at d_model 256 on two cores ran 2.4% and 1.9% faster, one core's
// the same (docs/performance.md, "Weight gradients in two halves of the
// rows"). With more workers each half's columns are split over its share
// of them. The halves are fixed by rows alone and each element of a half is
// one product's sum over that half's rows, so dw does not depend on the
// worker count; it differs in the last bits from the sum over all rows at
// once.
func weightGradHalves[T floats](dw, x []T, din int, dy []T, dout, rows int) {
	h := rows / 2
	part := scratchUninit[T](din * dout) // written whole by its half's products (beta 0)
	defer releaseScratch(part)
	per := max(1, workerCount(2*dout)/2) // column ranges per half
	parallelForWork(2*per, gemmWork(din, dout, rows), func(i int) {
		half, r := i/per, i%per
		lo, hi := r*dout/per, (r+1)*dout/per
		r0, r1, c := 0, h, dw
		if half == 1 {
			r0, r1, c = h, rows, part
		}
		gemm(true, false, din, hi-lo, r1-r0, 1, x[r0*din:], din, dy[r0*dout+lo:], dout, 0, c[lo:], dout)
	})
	parallelRanges(din*dout, func(_, lo, hi int) { addVec(dw[lo:hi], dw[lo:hi], part[lo:hi]) })
}
