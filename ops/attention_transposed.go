package ops

// Attention's q·kᵀ and dy·vᵀ as untransposed products.
//
// A row block's scores S = q·kᵀ and the backward's dM = dy·vᵀ multiply by
// a transposed operand whose inner dimension is one head (16 at d_model 64
// with 4 heads). OpenBLAS's small-matrix sgemm kernels run such a product
// about 1.5× faster when that operand is stored [d, keys] rather than
// [keys, d]: 64 rows × 64–256 keys × 16 replayed at 65–72 GFLOP/s
// transposed and 102–106 untransposed on the Zen 4 (Cooperlake kernels).
// Where a full row block's product is small enough for those kernels, the
// op therefore copies all of k (in the backward, v) once into [b, h·d, t]
// before its (batch, head) loop, and every row block multiplies by its
// head's [d, t] part. The copy reads k row by row, as one stream. A copy
// made per (batch, head) instead reads one head's 16 values of each
// 256-byte row: inside a step it missed the cache on nearly every row and
// cost more than the products gained. Larger heads (d_model 256) go
// through OpenBLAS's packed kernels, which read a transposed operand as
// fast, and keep the transposed product. docs/performance.md, "Attention's
// scores as untransposed products", has the measurements.
//
// Float32 heads of 64 take the same copies where the 64-wide kernel is on
// (headCopies): the scores and dM then run on that kernel 64 keys at a
// time (gemmTiles64). (AM)4 at d_model 256, two shards: training −1.1%
// (medians of 7), evaluation unchanged (+0.3%, medians of 5).

// attnTransposeHeads turns the copies off when false, for the tests that
// hold the two forms to each other.
var attnTransposeHeads = true

// transposedHeads says whether kernel k multiplies by [d, tk] copies of its
// keys and values: when this build's BLAS has small-matrix kernels, the
// query blocks are full (not a decoding step's single query, for which
// the copy would cost more than the product) and a full block's product
// attnBlock × tk × d is within the small kernels' reach.
func (k attnKernel) transposedHeads() bool {
	return attnTransposeHeads && blasSmallKernels && k.tq >= attnBlock &&
		attnBlock*k.tk*max(k.d, k.dv) <= blasSmallMNK
}

// gemmHeadT computes c = alpha · a · xᵀ, c [rows, n] with leading
// dimension ldc, for a [rows, d] (lda) and the first n rows of a head x of
// a [b, t, h, d] tensor (ldx): by xT, the head's [d, t] copy (leading
// dimension t), when there is one, else by x itself. Heads of 64 with a
// copy take the 64-wide kernel on 64 keys at a time (gemmTiles64).
func gemmHeadT[T floats](rows, n, d int, alpha T, a []T, lda int, x []T, ldx int, xT []T, t int, c []T, ldc int) {
	switch {
	case xT != nil && d == width64:
		gemmTiles64(rows, n, d, alpha, a, lda, xT, t, 0, c, ldc)
	case xT != nil:
		gemm(false, false, rows, n, d, alpha, a, lda, xT, t, 0, c, ldc)
	default:
		gemm(false, true, rows, n, d, alpha, a, lda, x, ldx, 0, c, ldc)
	}
}

// headCopies says whether attention over heads d wide of element type T
// multiplies by [d, t] copies of its keys (d = k.d) or values (d = k.dv):
// for OpenBLAS's small kernels (transposedHeads), or, for float32 heads of
// 64 where the 64-wide kernel is on, so that the scores q·kᵀ and the
// backward's dy·vᵀ run on it 64 keys at a time (gemmTiles64).
func headCopies[T floats](k attnKernel, d int) bool {
	if k.transposedHeads() {
		return true
	}
	var zero T
	_, f32 := any(zero).(float32)
	return f32 && d == width64 && width64On() && k.tq >= attnBlock
}

// batchesTransposed copies x [b, t, w] into a scratch [b, w, t], batches
// split over the workers; the caller releases it. Head hh of batch bi of a
// [b, t, h, d] tensor is then the [d, t] matrix at bi·w·t + hh·d·t
// (headOfTransposed), leading dimension t.
func batchesTransposed[T floats](x []T, b, t, w int) []T {
	xt := scratchUninit[T](b * t * w)
	parallelFor(b, func(bi int) {
		transposeRows(xt[bi*t*w:(bi+1)*t*w], x[bi*t*w:(bi+1)*t*w], w, t, w)
	})
	return xt
}

// headOfTransposed is head hh (of width d) of batch bi in a
// batchesTransposed copy of a [b, t, h, d] tensor: [d, t], leading
// dimension t.
func headOfTransposed[T floats](xt []T, bi, hh, t, h, d int) []T {
	return xt[(bi*h+hh)*d*t:]
}
