package ops

// Wide row blocks for a forward that keeps no probabilities. At d_model 256
// (heads of 64, 1,024 keys) attention's products by blocks of attnBlock =
// 64 queries, S = q·kᵀ (64 × keys × 64) and y = M·v (64 × 64 × keys), ran
// at 150–167 GFLOP/s inside an (AM)4 evaluation step, where the model's
// other products ran at about 235: a quarter of the step's work at two
// thirds of the rate. A block of attnWideBlock = 128 queries takes its
// products in two parts: one over the keys every query of the block sees
// (128 × kr × 64 and 128 × 64 × kr, kr = blockKeys(i0)), and one per
// 64-query part over the keys of the diagonal (64 × (blockKeys(s1) − kr) ×
// 64), so the products are larger and no score above the diagonal is
// computed that the 64-query blocks did not compute. Replayed alone on one
// core, one (batch, head)'s two products over 1,024 queries took 716 µs
// against 846 (docs/performance.md, "Wide row blocks for attention's
// evaluation forward").
//
// The scores a part does not compute (keys past a query's last in the
// diagonal) are left as the buffer held them; the softmax reads only the
// keys each query sees and writes zeros past them, and y's diagonal parts
// read only up to blockKeys(s1), so they are never used. y's sums over the
// keys are split in two (the rectangle's, then the diagonal's added with β
// = 1), which rounds differently from one product over all of them: an
// evaluation forward's y differs from a training forward's (64-query blocks,
// kept for the backward's layout) by rounding, the same every run.
//
// Only forwards that keep no probabilities (evaluation, and training above
// attnSaveLimit) and multiply by k itself (not transposedHeads, whose small
// products take 64-query blocks for OpenBLAS's small kernels) take wide
// blocks. In training above attnSaveLimit the backward computes P again by
// 64-query blocks, so the P it differentiates may differ from the forward's
// by rounding.
const attnWideBlock = 2 * attnBlock

// forwardRows is the forward's row block: attnWideBlock queries when it
// keeps no probabilities, multiplies by k itself and has that many queries,
// else attnBlock (or all the queries, when fewer).
func (k attnKernel) forwardRows(keepsProbs, transposed bool) int {
	if !keepsProbs && !transposed && k.tq >= attnWideBlock {
		return attnWideBlock
	}
	return min(attnBlock, k.tq)
}

// attnWideScores sets P's rows [i0, i1) (i1 − i0 ≤ attnWideBlock, leading
// dimension blockKeys(i1)) to scale · q kᵀ over the keys each 64-query part
// of the block sees, for the head whose q and k start at offsets qo and ko.
func attnWideScores[T floats](k attnKernel, in [][]T, qo, ko, i0, i1 int, scale T, P []T) {
	ldq, ldk := k.h*k.d, k.hk*k.d
	kmax, kr := k.blockKeys(i1), k.blockKeys(i0)
	q, keys := in[0][qo:], in[1][ko:]
	if kr > 0 {
		gemm(false, true, i1-i0, kr, k.d, scale, q[i0*ldq:], ldq, keys, ldk, 0, P, kmax)
	}
	for s0 := i0; s0 < i1; s0 += attnBlock {
		s1 := min(s0+attnBlock, i1)
		gemm(false, true, s1-s0, k.blockKeys(s1)-kr, k.d, scale, q[s0*ldq:], ldq, keys[kr*ldk:], ldk, 0, P[(s0-i0)*kmax+kr:], kmax)
	}
}

// attnWideValues sets rows [i0, i1) of the head's y (y from the head's
// offset, leading dimension h·dv) to M v, M [i1 − i0, blockKeys(i1)] and v
// from the kv head's offset: the keys every query of the block sees, then
// the diagonal's keys of each 64-query part added.
func attnWideValues[T floats](k attnKernel, M, v []T, i0, i1 int, y []T) {
	ldv, ldy := k.hk*k.dv, k.h*k.dv
	kmax, kr := k.blockKeys(i1), k.blockKeys(i0)
	var beta T
	if kr > 0 {
		gemm(false, false, i1-i0, k.dv, kr, 1, M, kmax, v, ldv, 0, y[i0*ldy:], ldy)
		beta = 1
	}
	for s0 := i0; s0 < i1; s0 += attnBlock {
		s1 := min(s0+attnBlock, i1)
		gemm(false, false, s1-s0, k.dv, k.blockKeys(s1)-kr, 1, M[(s0-i0)*kmax+kr:], kmax, v[kr*ldv:], ldv, beta, y[s0*ldy:], ldy)
	}
}
