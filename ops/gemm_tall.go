package ops

// Products of a tall matrix with a small one: a linear layer's x [rows, din]
// times w [din, dout] at d_model 64 (rows in the thousands, din·dout in the
// thousands), and its input gradient dy·wᵀ. OpenBLAS runs such a product
// whole by packing both operands and, for beta 0, clearing c in a pass of
// its own before adding the product into it; its small-matrix kernels
// (tallRowBlock) read the operands where they are and write c once. Cut into
// row blocks small enough for them, the product ran 6–40% faster here with
// its operands out of cache, as they are in a step (BenchmarkGemmTall).

// gemmTall computes c = a·op(b) + beta·c for a [m, k] (row-major, lda) and
// op(b) [k, n] small (b [k, n] with ldb, or [n, k] when transB), its rows
// split over the workers: in row blocks of tallRowBlock(n, k), taken in
// turn by the workers, when this build's BLAS runs such blocks faster, else
// in one product per worker. When it blocks a transposed b it copies b
// once into [k, n] (its small kernels gain only on untransposed operands).
// Where OpenBLAS would pack the product and tallTiles64 holds, the rows run
// on the 64-wide kernel instead, in blocks of tallTileBlock(m) rows taken
// in turn. Each element of c is one sum over all of k, in one call, and
// the same bits whichever worker computes it.
func gemmTall[T floats](transB bool, m, n, k int, a []T, lda int, b []T, ldb int, beta T, c []T, ldc int) {
	gemmTallThen(transB, m, n, k, a, lda, b, ldb, beta, c, ldc, nil)
}

// gemmTallThen is gemmTall followed, for each range of rows [lo, hi) of c
// a worker has just computed, by then(lo, hi) on the same worker, while
// those rows are in cache (a block of the 64-wide kernel's or the small
// kernels' rows; a worker's whole share where OpenBLAS packs the product).
// then may be nil.
func gemmTallThen[T floats](transB bool, m, n, k int, a []T, lda int, b []T, ldb int, beta T, c []T, ldc int, then func(lo, hi int)) {
	after := func(lo, hi int) {
		if then != nil {
			then(lo, hi)
		}
	}
	blk := tallRowBlock(n, k)
	flops := gemmWork(m, n, k)
	if blk == 0 && tallTiles64(n, k, a) {
		rb := newRightOperand(transB, b, ldb, k, n, m)
		defer rb.release()
		parallelBlocksWork(m, tallTileBlock(m), flops, func(lo, hi int) {
			rb.mul(hi-lo, a[lo*lda:], lda, beta, c[lo*ldc:], ldc)
			after(lo, hi)
		})
		return
	}
	if blk == 0 || m <= blk {
		parallelRangesWork(m, flops, func(_, lo, hi int) {
			gemm(false, transB, hi-lo, n, k, 1, a[lo*lda:], lda, b, ldb, beta, c[lo*ldc:], ldc)
			after(lo, hi)
		})
		return
	}
	if transB {
		bt := transposedScratch(b, ldb, n, k)
		defer releaseScratch(bt)
		b, ldb = bt, n
	}
	parallelBlocksWork(m, blk, flops, func(r0, r1 int) {
		gemmTallSerial(false, r1-r0, n, k, a[r0*lda:], lda, b, ldb, beta, c[r0*ldc:], ldc)
		after(r0, r1)
	})
}

// tallTileRows is the most rows of a block of a tall product on the
// 64-wide kernel (tallTiles64): the kernel reads the block's rows of a once
// for every 64 columns of c, and 256 rows of depth 256 (256 KiB) stay in a
// core's L2 across them.
const tallTileRows = 256

// tallTileBlock is the rows of the blocks a tall product of m rows on the
// 64-wide kernel is cut into: tallTileRows, or fewer (but not under
// width64PanelRows) when m gives each worker under two blocks of it, so
// that the workers, taking the blocks in turn, have some to share out. A
// row of c is the same bits in any block (the kernel's sums run along k
// alone: TestRightOperandRowsIndependentOfBlocks), so the cut moves only
// where the rows are computed, not their values.
func tallTileBlock(m int) int {
	w := workerCount(m)
	return min(tallTileRows, max(width64PanelRows, (m+2*w-1)/(2*w)))
}

// tallTiles64 says whether a tall product that OpenBLAS would pack
// (tallRowBlock 0) runs on the 64-wide kernel instead, by blocks of
// at most tallTileRows rows and 64 columns, with a transposed b copied
// once into [k, n]: float32 with the kernel on, n at least 64 (the last
// tile masked) and k at most 256 (the products of a d_model-256 layer's
// input: attention's and SSD's projections, the CDMoE's). (gemmTallSerial,
// the routed experts' backward, stays on OpenBLAS: their dA = dY·W2ᵀ on
// the kernel over a copy of W2ᵀ made a two-shard step 2.6% slower.) With its
// operands out of cache, as in a step, the kernel ran [1024, 256]·[256,
// 256] at 239 GFLOP/s where OpenBLAS ran 188, and dy·wᵀ over the copy at
// 222 against 184; over depth 344 and 688 (a d_model-256 MLP's dx) it lost
// (150–198 against 180–204), as the block of a and all of b no longer fit
// in L2 together (docs/performance.md, "Projections and the MLP's inputs
// on the 64-wide kernel").
func tallTiles64[T floats](n, k int, a []T) bool {
	_, f32 := any(a).([]float32)
	return f32 && width64On() && n >= width64 && k <= 256
}

// gemmTallSerial is gemmTall on the calling goroutine, for callers that
// already run one product per worker (the MoE's experts).
func gemmTallSerial[T floats](transB bool, m, n, k int, a []T, lda int, b []T, ldb int, beta T, c []T, ldc int) {
	blk := tallRowBlock(n, k)
	if blk == 0 || m <= blk {
		gemm(false, transB, m, n, k, 1, a, lda, b, ldb, beta, c, ldc)
		return
	}
	if transB {
		bt := transposedScratch(b, ldb, n, k)
		defer releaseScratch(bt)
		b, ldb = bt, n
	}
	for r := 0; r < m; r += blk {
		gemm(false, false, min(blk, m-r), n, k, 1, a[r*lda:], lda, b, ldb, beta, c[r*ldc:], ldc)
	}
}

// transposedScratch copies b [n, k] (leading dimension ldb) into a scratch
// [k, n]; the caller releases it.
func transposedScratch[T floats](b []T, ldb, n, k int) []T {
	bt := scratchUninit[T](k * n)
	transposeRows(bt, b, ldb, n, k)
	return bt
}

// blasSmallMNK is the largest m·n·k OpenBLAS 0.3.21's SkylakeX family runs
// through its small-matrix sgemm kernels (100³).
const blasSmallMNK = 100 * 100 * 100

// tallRowBlock returns the rows of a block of a tall product with a small
// [k, n] right operand that this build's BLAS runs without packing, or 0
// when it has no such kernels for the product: OpenBLAS 0.3.21's SkylakeX
// family (SkylakeX, Cooperlake, SapphireRapids; not Haswell or Zen) takes
// products of m·n·k ≤ 100³ through its small-matrix kernels. Blocks under
// 32 rows would cost more in calls than they save, so n·k above 31250 (a
// d_model 256 layer's) runs whole.
func tallRowBlock(n, k int) int { return smallKernelRows(n*k, 32) }

// smallKernelRows returns the most rows a block of a product can have for
// OpenBLAS's small-matrix kernels to take it (blasSmallMNK / mn, with mn the
// product of its other two dimensions), or 0 when this build's BLAS has no
// such kernels, mn is 0, or the block would be under minRows.
func smallKernelRows(mn, minRows int) int {
	if !blasSmallKernels || mn == 0 {
		return 0
	}
	if blk := blasSmallMNK / mn; blk >= minRows {
		return blk
	}
	return 0
}
