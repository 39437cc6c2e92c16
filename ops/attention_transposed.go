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
// a [b, t, h, d] tensor (ldx): by xT, the head's [d, t] copy, when there
// is one, else by x itself. Heads of 64 with a copy take the 64-wide
// kernel on 64 keys at a time (gemmTiles64, or gemmTilesApart64 over a
// tiled copy).
func gemmHeadT[T floats](rows, n, d int, alpha T, a []T, lda int, x []T, ldx int, xT headT[T], c []T, ldc int) {
	switch {
	case xT.x != nil && xT.tile != width64:
		gemmTilesApart64(rows, n, d, alpha, a, lda, xT.x, xT.ld, xT.tile, c, ldc)
	case xT.x != nil && d == width64:
		gemmTiles64(rows, n, d, alpha, a, lda, xT.x, xT.ld, 0, c, ldc)
	case xT.x != nil:
		gemm(false, false, rows, n, d, alpha, a, lda, xT.x, xT.ld, 0, c, ldc)
	default:
		gemm(false, true, rows, n, d, alpha, a, lda, x, ldx, 0, c, ldc)
	}
}

// headT is one kv head's keys (or values) of a headCopies copy, transposed
// to [d, t]: x with leading dimension ld, the tile of keys [j, j+64) at
// x[(j/64)·tile:]. Copied whole by batchesTransposed, ld is t and tile 64
// (one matrix); by tiles (batchesTiled), ld is 64 and each tile of 64
// keys is [d, 64] in one piece, tile floats from the next. x nil: no copy.
type headT[T floats] struct {
	x        []T
	ld, tile int
}

// from is the head's keys from key on (a multiple of 64 when tiled).
func (h headT[T]) from(key int) headT[T] {
	if h.x == nil {
		return h
	}
	if h.tile != width64 && key%width64 != 0 {
		panic("ops: a tiled head starts at a multiple of 64 keys")
	}
	return headT[T]{x: h.x[key/width64*h.tile+key%width64:], ld: h.ld, tile: h.tile}
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
	return width64Heads[T](d) && k.tq >= attnBlock
}

// width64Heads says whether attention's products by heads d wide of
// element type T run on the 64-wide kernel: float32 heads of 64, with the
// kernel on in this build and on this CPU.
func width64Heads[T floats](d int) bool {
	var zero T
	_, f32 := any(zero).(float32)
	return f32 && d == width64 && width64On()
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
func headOfTransposed[T floats](xt []T, bi, hh, t, h, d int) headT[T] {
	return headT[T]{x: xt[(bi*h+hh)*d*t:], ld: t, tile: width64}
}

// Tiled copies. The scores q·kᵀ and the backward's dM = dy·vᵀ run on the
// 64-wide kernel 64 keys at a time (gemmTiles64), and the kernel copies
// each [d, 64] tile of a [d, t] copy into a panel 64 floats a row before
// the product (WM_W64_PACK_ROWS), since the tile's rows lie t floats
// apart: in an (AM)4 d_model 256 training step's profile those copies
// took about 0.9% of the samples. Transposed 64 keys at a time instead,
// each tile is [d, 64] in one piece and the kernel reads it where it is,
// the same values in the same order, so the scores keep their bits.

// tiledHeads says whether kernel k's headCopies of heads d wide are tiled
// (batchesTiled): float32 heads of 64 on the 64-wide kernel, not for
// OpenBLAS's small kernels (transposedHeads), and with the keys and the
// queries whole tiles of 64, so that every product starts at a tile
// (attnWideNT's first diagonal key, blockKeys(i0), is a multiple of 64).
func tiledHeads[T floats](k attnKernel, d int) bool {
	return attnTileHeads && width64Heads[T](d) && !k.transposedHeads() &&
		k.tk%width64 == 0 && k.tq%width64 == 0
}

// attnTileHeads turns the tiled copies off when false, for the test that
// holds them to the whole ones.
var attnTileHeads = true

// batchesTiled copies x [b, t, w] (t a multiple of 64) into a scratch of
// [b, t/64, w, 64]: each batch's keys 64 at a time, transposed, so that
// head hh (d wide) of tile j is the [d, 64] piece at ((bi·t/64 + j)·w +
// hh·d)·64 (headOfTiled). The caller releases it.
func batchesTiled[T floats](x []T, b, t, w int) []T {
	xt := scratchUninit[T](b * t * w) // every tile written whole below
	parallelFor(b*(t/width64), func(bj int) {
		o := bj * width64 * w
		transposeRows(xt[o:o+width64*w], x[o:o+width64*w], w, width64, w)
	})
	return xt
}

// headOfTiled is head hh (d wide) of batch bi in a batchesTiled copy of a
// [b, t, h, d] tensor.
func headOfTiled[T floats](xt []T, bi, hh, t, h, d int) headT[T] {
	w := h * d
	return headT[T]{x: xt[bi*t*w+hh*d*width64:], ld: width64, tile: width64 * w}
}

// headsTransposed is kernel k's copy of x [b, t, h, d] for its products by
// heads d wide (headCopies), tiled where tiledHeads holds, and the function
// that finds a head in it; nil when k takes no copy.
func headsTransposed[T floats](k attnKernel, x []T, h, d int) ([]T, func(bi, hh int) headT[T]) {
	switch {
	case !headCopies[T](k, d):
		return nil, func(int, int) headT[T] { return headT[T]{} }
	case tiledHeads[T](k, d):
		xt := batchesTiled(x, k.b, k.tk, h*d)
		return xt, func(bi, hh int) headT[T] { return headOfTiled(xt, bi, hh, k.tk, h, d) }
	default:
		xt := batchesTransposed(x, k.b, k.tk, h*d)
		return xt, func(bi, hh int) headT[T] { return headOfTransposed(xt, bi, hh, k.tk, h, d) }
	}
}
