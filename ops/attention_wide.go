package ops

// Wide row blocks. At d_model 256 (heads of 64, 1,024 keys) attention's
// products by blocks of attnBlock = 64 queries, S = q·kᵀ (64 × keys × 64)
// and y = M·v (64 × 64 × keys), ran at 150–167 GFLOP/s inside an (AM)4
// evaluation step, where the model's other products ran at about 235: a
// quarter of the step's work at two thirds of the rate. The backward's
// products by 64-query blocks fared worse: dv += Mᵀ·dy and dk += dSᵀ·q,
// keys × 64 × 64 deep, ran at 110–170 GFLOP/s in an (AM)4 training step,
// each block reading and writing all of the head's dv and dk again.
//
// A block of attnWideBlock = 128 queries therefore takes each product in
// two parts: one over the keys every query of the block sees (kr =
// blockKeys(i0) of them: 128 × kr × 64 and its transposes, 128 deep in the
// backward's key-side products), and one per 64-query part over the keys
// of the diagonal (blockKeys(s1) − kr of them). The products are larger,
// and no score above the diagonal is computed that the 64-query blocks did
// not compute. Replayed alone on one core, one (batch, head)'s forward
// products over 1,024 queries took 716 µs against 846 (docs/performance.md,
// "Wide row blocks for attention's evaluation forward").
//
// The entries a part does not compute (keys past its last query's last
// key) are written as zeros by attnWideNT: P's are zeros after the softmax
// anyway, and dM's must be, since the softmax gradient and the paper mask's
// gradient sum dM ∘ P over whole rows. Sums over the keys are split in two
// (the rectangle's, then the diagonal's added with β = 1), which rounds
// differently from one product over all of them: an op with wide blocks
// differs from one with 64-query blocks by rounding, the same every run.
//
// The forward and the backward take the same row block (rowBlock), so a
// saved P has the backward's layout and a P computed again equals the
// forward's to the bit. Ops on small heads, whose products go to OpenBLAS's
// small kernels (transposedHeads), keep blocks of 64 queries.
const attnWideBlock = 2 * attnBlock

// attnWideRows turns wide row blocks off when false, for the tests that
// hold wide blocks to 64-query ones.
var attnWideRows = true

// rowBlock is the op's row block of queries, the same in the forward and
// the backward: attnWideBlock when its heads are not small (transposedHeads)
// and it has that many queries, else attnBlock (or all the queries, when
// fewer).
func (k attnKernel) rowBlock() int {
	if attnWideRows && !k.transposedHeads() && k.tq >= attnWideBlock {
		return attnWideBlock
	}
	return min(attnBlock, k.tq)
}

// attnWideNT sets c (rows [i0, i1) of a wide block, leading dimension
// blockKeys(i1)) to alpha · a · xᵀ over the keys each attnBlock-query part
// sees, and to zero past them: a is a head's rows from query 0 (leading
// dimension lda), x a kv head's rows from key 0 (ldx), both depth wide, or
// xT its [depth, tk] copy when there is one (gemmHeadT). The scores S =
// q·kᵀ/√d and the backward's dM = dy·vᵀ.
func attnWideNT[T floats](k attnKernel, a []T, lda int, x []T, ldx int, xT headT[T], depth, i0, i1 int, alpha T, c []T) {
	kmax, kr := k.blockKeys(i1), k.blockKeys(i0)
	if kr > 0 {
		gemmHeadT(i1-i0, kr, depth, alpha, a[i0*lda:], lda, x, ldx, xT, c, kmax)
	}
	for s0 := i0; s0 < i1; s0 += attnBlock {
		s1 := min(s0+attnBlock, i1)
		last := k.blockKeys(s1)
		gemmHeadT(s1-s0, last-kr, depth, alpha, a[s0*lda:], lda, x[kr*ldx:], ldx, xT.from(kr), c[(s0-i0)*kmax+kr:], kmax)
		for r := s0 - i0; r < s1-i0 && last < kmax; r++ {
			clear(c[r*kmax+last : (r+1)*kmax])
		}
	}
}

// attnWideNN sets rows [i0, i1) of y (from query 0, leading dimension ldy)
// to alpha · m · x + beta · y, m a wide block's [i1 − i0, blockKeys(i1)]
// and x a kv head's rows from key 0 (ldx), width wide: the keys every
// query of the block sees, then each part's diagonal keys added. The
// forward's y = M·v (beta 0) and the backward's dq += dS·k/√d (beta 1).
func attnWideNN[T floats](k attnKernel, m, x []T, ldx, width, i0, i1 int, alpha, beta T, y []T, ldy int) {
	kmax, kr := k.blockKeys(i1), k.blockKeys(i0)
	if kr > 0 {
		gemmHeadN(false, i1-i0, width, kr, alpha, m, kmax, x, ldx, beta, y[i0*ldy:], ldy)
		beta = 1
	}
	for s0 := i0; s0 < i1; s0 += attnBlock {
		s1 := min(s0+attnBlock, i1)
		gemmHeadN(false, s1-s0, width, k.blockKeys(s1)-kr, alpha, m[(s0-i0)*kmax+kr:], kmax, x[kr*ldx:], ldx, beta, y[s0*ldy:], ldy)
	}
}

// attnWideTN adds alpha · mᵀ · a to x's first blockKeys(i1) rows (a kv
// head's, leading dimension ldx, width wide), m a wide block's
// [i1 − i0, blockKeys(i1)] and a a head's rows from query 0 (lda): one
// product i1 − i0 deep over the keys every query of the block sees, then
// each part's diagonal keys. The backward's dv += Mᵀ·dy and dk +=
// dSᵀ·q/√d.
func attnWideTN[T floats](k attnKernel, m, a []T, lda, width, i0, i1 int, alpha T, x []T, ldx int) {
	kmax, kr := k.blockKeys(i1), k.blockKeys(i0)
	if kr > 0 {
		gemmHeadN(true, kr, width, i1-i0, alpha, m, kmax, a[i0*lda:], lda, 1, x, ldx)
	}
	for s0 := i0; s0 < i1; s0 += attnBlock {
		s1 := min(s0+attnBlock, i1)
		gemmHeadN(true, k.blockKeys(s1)-kr, width, s1-s0, alpha, m[(s0-i0)*kmax+kr:], kmax, a[s0*lda:], lda, 1, x[kr*ldx:], ldx)
	}
}
