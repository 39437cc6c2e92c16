package ops

import (
	"fmt"

	"github.com/pkg/errors"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// SwiGLU is the gated MLP of Llama-style stacks as one op (SPEC §3 MLP;
// Shazeer 2020, "GLU Variants Improve Transformer", FFN_SwiGLU):
//
//	y = (silu(x W1) ⊙ x W3) W2
//
// with x [..., d], W1 and W3 [d, f], W2 [f, d]. Where this build's BLAS
// runs the products in row blocks (tallRowBlock: d_model 64 on OpenBLAS's
// AVX-512 kernels) it is one op that runs the whole MLP one block of rows at
// a time, forward and backward, so that a block's hidden activations are
// still in cache for its gate, its down-projection and its share of the
// weights' gradients, instead of making a round trip through memory between
// graph nodes. Where OpenBLAS runs them on its packed kernels instead
// (d_model 256, or any size on kernels without the small ones) the op runs
// blocks of swigluPackedRows rows. In the small kernels' blocks its forward
// computes what Linear, GatedSiLU and Linear compute to the bit; in the
// packed kernels' blocks OpenBLAS can round a row differently by where it
// falls in a product, so the last bits can differ from the nodes'. Its
// weights' gradients sum the blocks in another order (swigluGradGroups). A
// forward in a graph that takes its gradient keeps x W1 and x W3 for the
// backward (swigluSaved); an evaluation forward keeps nothing of [rows, f].
// In the pure-Go build it builds those three nodes (swigluNodes).
func SwiGLU(x, w1, w3, w2 *G.Node) (*G.Node, error) {
	return swiglu(x, w1, w3, w2, nil, nil)
}

// swiglu is SwiGLU, or with r the block's output r.x + SwiGLU(x) (x is
// r.h), the residual added in each block of rows right after its
// down-projection (Residual.SwiGLU); with plus too (of x's shape), r.x +
// (SwiGLU(x) + plus), plus added to the block's rows just before the
// residual (Residual.SwiGLUPlus).
func swiglu(x, w1, w3, w2 *G.Node, r *Residual, plus *G.Node) (*G.Node, error) {
	xs, s1 := x.Shape(), w1.Shape()
	if xs.Dims() < 1 || s1.Dims() != 2 || s1[0] != xs[xs.Dims()-1] {
		return nil, errors.Errorf("swiglu: W1 %v must be [d, f] with d = x's last axis (x %v)", s1, xs)
	}
	k := swigluKernel{x: xs.Clone(), d: s1[0], f: s1[1], saved: &swigluSaved{}}
	if r != nil {
		k.res = r.link
		k.plus = plus != nil
	}
	k.blk = swigluRowBlock(k.f, k.d)
	if !w3.Shape().Eq(s1) {
		return nil, errors.Errorf("swiglu: W3 must be W1's shape %v, got %v", s1, w3.Shape())
	}
	if s2 := w2.Shape(); s2.Dims() != 2 || s2[0] != k.f || s2[1] != k.d {
		return nil, errors.Errorf("swiglu: W2 must be [f=%d, d=%d], got %v", k.f, k.d, s2)
	}
	if k.blk == 0 {
		y, err := swigluNodes(x, w1, w3, w2)
		if err != nil || r == nil {
			return y, err
		}
		if plus != nil {
			if y, err = Add(plus, y); err != nil {
				return nil, err
			}
		}
		return r.add(y)
	}
	if r != nil {
		if err := r.close(k.x); err != nil {
			return nil, err
		}
		if plus != nil {
			return apply(k, x, w1, w3, w2, r.x, plus)
		}
		return apply(k, x, w1, w3, w2, r.x)
	}
	return apply(k, x, w1, w3, w2)
}

// swigluPackedRows is the rows of SwiGLU's blocks where OpenBLAS runs its
// products on the packed kernels (tallRowBlock is 0). At d_model 256 (f =
// 688) a block's H1, H3 and A take 2 MiB, about a Zen 5 core's L2 twice
// over, and the products of 256 rows still run at the packed kernels' rate.
// Against the three nodes, (SM)4 at d_model 256 (medians of 5, Zen 5):
// evaluation −5.9% on two shards and −2.9% on one core, training −0.4% and
// −1.8%; blocks of 128 gained less (−1.4% in evaluation on two shards) and
// blocks of 512 lost 2% to 256. On OpenBLAS's Haswell kernels, which have
// no small-matrix ones, (SM)4 at d_model 64 on one core: training −3.7%,
// evaluation −0.7%.
const swigluPackedRows = 256

// swigluRowBlock is the rows of one block of SwiGLU's fused passes for W1
// [d, f]: the small-matrix kernels' blocks where they take the products
// (tallRowBlock; the same for x W1, n f and k d, and for A W2, n d and k
// f), else swigluPackedRows with OpenBLAS's packed kernels, else 0 (the
// three nodes; gonum's BLAS, which was not measured blocked).
func swigluRowBlock(f, d int) int {
	if blk := tallRowBlock(f, d); blk > 0 {
		return blk
	}
	if blasPackedBlocks {
		return swigluPackedRows
	}
	return 0
}

// swigluNodes is SwiGLU as three nodes, for the builds whose products are
// not run by blocks (swigluRowBlock). Before SwiGLU blocked the packed
// kernels' products, the one op without blocks was slower than these nodes
// ((SM)4 at d_model 256, one core, training +1.4%): its backward computes A
// again and takes its [rows, f] buffers from the scratch pools, where the
// nodes keep theirs.
func swigluNodes(x, w1, w3, w2 *G.Node) (*G.Node, error) {
	h3, err := Linear(x, w3)
	if err != nil {
		return nil, errors.Wrap(err, "swiglu")
	}
	h1, err := Linear(x, w1)
	if err != nil {
		return nil, errors.Wrap(err, "swiglu")
	}
	a, err := GatedSiLU(h3, h1)
	if err != nil {
		return nil, errors.Wrap(err, "swiglu")
	}
	y, err := Linear(a, w2)
	return y, errors.Wrap(err, "swiglu")
}

type swigluKernel struct {
	x    tensor.Shape
	d, f int
	// blk is the rows of one block of the fused passes, or 0 to run each
	// step over all the rows (swigluRowBlock).
	blk int
	// saved is shared by the op and its gradient op (not an attribute: no
	// hash).
	saved *swigluSaved
	// res, when not nil, makes the op close a pre-norm block: a fifth
	// input, the residual stream x, is added to y, and y's upstream
	// gradient, x's share, goes to the block's norm (Residual.SwiGLU).
	res *residualLink
	// plus (with res) is a sixth input, added to y before x; its gradient
	// is the upstream gradient (addends; Residual.SwiGLUPlus).
	plus bool
}

// swigluSaved is what a SwiGLU forward keeps for its backward in the same
// run, for the same x and weights (forwardSave): H1 = x W1 and H3 = x W3,
// [rows, f] each. The backward computes A = silu(H1) ⊙ H3 again from them
// (one pass, against a product to spare). They are kept only when the graph
// takes the op's gradient (wanted, set by SymDiff).
type swigluSaved struct {
	forwardSave
	wanted bool
	h1, h3 any // []float32 or []float64 from the scratch pools, or nil
}

func (k swigluKernel) gradientWanted() {
	if k.saved != nil {
		k.saved.wanted = true
	}
}

// release hands the saved activations back to the pools.
func (sv *swigluSaved) release() {
	releaseScratchAny(sv.h1)
	releaseScratchAny(sv.h3)
	sv.h1, sv.h3 = nil, nil
	sv.drop()
}

// releaseSaved is called by ReleaseBuffers.
func (k swigluKernel) releaseSaved() {
	if k.saved != nil {
		k.saved.release()
	}
}

func (k swigluKernel) name() string { return "swiglu" }
func (k swigluKernel) attrs() string {
	if k.res != nil {
		return fmt.Sprintf("blk=%d,block=%d,plus=%v", k.blk, k.res.id, k.plus)
	}
	return fmt.Sprintf("blk=%d", k.blk)
}

// residual is the block the op closes, or nil (see fusedOp.SymDiff).
func (k swigluKernel) residual() *residualLink { return k.res }

// addends marks plus, whose gradient is the upstream one (addendInputs).
func (k swigluKernel) addends() []bool {
	if !k.plus {
		return nil
	}
	return []bool{false, false, false, false, false, true}
}

func (k swigluKernel) rows() int { return k.x.TotalSize() / k.d }

// productFLOPs is the work of n of the op's [rows, d]×[d, f]-sized products
// (the forward has 3, the backward 6), for parallelForWork.
func (k swigluKernel) productFLOPs(n int) float64 {
	return float64(n) * gemmWork(k.rows(), k.d, k.f)
}
func (k swigluKernel) inShapes() []tensor.Shape {
	if k.plus {
		return []tensor.Shape{k.x, {k.d, k.f}, {k.d, k.f}, {k.f, k.d}, k.x, k.x}
	}
	if k.res != nil {
		return []tensor.Shape{k.x, {k.d, k.f}, {k.d, k.f}, {k.f, k.d}, k.x}
	}
	return []tensor.Shape{k.x, {k.d, k.f}, {k.d, k.f}, {k.f, k.d}}
}
func (k swigluKernel) outShape() tensor.Shape { return k.x }
func (k swigluKernel) diffWRT() []bool {
	if k.plus {
		return []bool{true, true, true, true, false, false}
	}
	if k.res != nil {
		return []bool{true, true, true, true, false}
	}
	return []bool{true, true, true, true}
}

// gemm with beta 0 writes every element of y, dx and the weights' gradients.
func (k swigluKernel) writesWholeOutput() bool    { return true }
func (k swigluKernel) writesWholeGradients() bool { return true }

func (k swigluKernel) forward(in []any, out any) error {
	switch y := out.(type) {
	case []float32:
		swigluForward(y, as[float32](in), k)
	case []float64:
		swigluForward(y, as[float64](in), k)
	}
	return nil
}

func (k swigluKernel) backward(in []any, out, dOut any, dIn []any) error {
	switch dy := dOut.(type) {
	case []float32:
		swigluBackward(as[float32](dIn), dy, as[float32](in), k)
	case []float64:
		swigluBackward(as[float64](dIn), dy, as[float64](in), k)
	}
	return nil
}

// swigluForward writes y, plus the residual stream in[4] when the op
// closes a block (k.res) and before it in[5] (k.plus), and when the graph
// takes the gradient keeps H1 and H3 in k.saved.
func swigluForward[T floats](y []T, in [][]T, k swigluKernel) {
	x, w1, w3, w2 := in[0], in[1], in[2], in[3]
	var xres, plus []T
	if k.res != nil {
		xres = in[4]
	}
	if k.plus {
		plus = in[5]
	}
	rows, sv := k.rows(), k.saved
	sv.release() // a save nobody used (an evaluation run) goes back first
	var h1, h3 []T
	if sv.wanted {
		h1, h3 = scratchUninit[T](rows*k.f), scratchUninit[T](rows*k.f) // written whole below
	}
	blk := k.blk
	if blk == 0 || rows <= blk {
		// Whole: three products split over the workers, the gate between.
		if h1 == nil {
			t1, t3 := scratchUninit[T](rows*k.f), scratchUninit[T](rows*k.f)
			defer releaseScratch(t1)
			defer releaseScratch(t3)
			h1, h3 = t1, t3
		}
		a := scratchUninit[T](rows * k.f)
		defer releaseScratch(a)
		gemmTall(false, rows, k.f, k.d, x, k.d, w1, k.f, 0, h1, k.f)
		gemmTall(false, rows, k.f, k.d, x, k.d, w3, k.f, 0, h3, k.f)
		parallelRanges(len(a), func(_, lo, hi int) { gatedSiLU(a[lo:hi], h3[lo:hi], h1[lo:hi]) })
		gemmTall(false, rows, k.d, k.f, a, k.f, w2, k.d, 0, y, k.d)
		if xres != nil {
			parallelRanges(len(y), func(_, lo, hi int) { closeRows(y[lo:hi], plus, xres, lo, hi) })
		}
	} else {
		keep := h1 != nil
		r1, r3 := swigluInputOperands(w1, w3, k)
		defer r1.release()
		defer r3.release()
		r2 := newRightOperand(false, w2, k.d, k.f, k.d, rows)
		defer r2.release()
		// The blocks go to whichever worker is free: each is the same
		// products, at the same rows, whoever runs it.
		parallelBlocksWork(rows, blk, k.productFLOPs(3), func(r0, end int) {
			m := end - r0
			a := scratchUninit[T](blk * k.f)[:m*k.f] // every block's from one size class
			defer releaseScratch(a)
			var p1, p3 []T
			if keep {
				p1, p3 = h1[r0*k.f:end*k.f], h3[r0*k.f:end*k.f]
			} else {
				p1, p3 = scratchUninit[T](blk * k.f)[:m*k.f], scratchUninit[T](blk * k.f)[:m*k.f]
				defer releaseScratch(p1)
				defer releaseScratch(p3)
			}
			swigluHiddenBlock(p1, p3, x, r1, r3, r0, m, k)
			gatedSiLU(a, p3, p1)
			r2.mul(m, a, k.f, 0, y[r0*k.d:], k.d)
			if xres != nil {
				// The block's rows of y are in cache: the residual add
				// reads x's (and plus's) rows alone.
				closeRows(y[r0*k.d:end*k.d], plus, xres, r0*k.d, end*k.d)
			}
		})
	}
	if sv.wanted {
		sv.h1, sv.h3 = h1, h3
		sv.keep(x, w1, w3)
	}
}

// swigluInputOperands is W1 and W3 as the blocks' products read them
// (newRightOperand); the caller releases them.
func swigluInputOperands[T floats](w1, w3 []T, k swigluKernel) (r1, r3 rightOperand[T]) {
	return newRightOperand(false, w1, k.f, k.d, k.f, k.rows()), newRightOperand(false, w3, k.f, k.d, k.f, k.rows())
}

// swigluHiddenBlock writes H1 = x W1 and H3 = x W3 of rows [r0, r0+m)
// into p1 and p3 ([m, f] each): the products the blocked forward runs for
// a block.
func swigluHiddenBlock[T floats](p1, p3, x []T, w1, w3 rightOperand[T], r0, m int, k swigluKernel) {
	w1.mul(m, x[r0*k.d:], k.d, 0, p1, k.f)
	w3.mul(m, x[r0*k.d:], k.d, 0, p3, k.f)
}

// swigluHidden writes H1 and H3 of all the rows with the forward's own
// products, so that a backward without a save computes them to the bits
// the forward would have kept: by its blocks, or whole. (OpenBLAS's packed
// kernels can round a row differently by where it falls in the product.)
func swigluHidden[T floats](h1, h3, x, w1, w3 []T, k swigluKernel) {
	rows, blk := k.rows(), k.blk
	if blk == 0 || rows <= blk {
		gemmTall(false, rows, k.f, k.d, x, k.d, w1, k.f, 0, h1, k.f)
		gemmTall(false, rows, k.f, k.d, x, k.d, w3, k.f, 0, h3, k.f)
		return
	}
	r1, r3 := swigluInputOperands(w1, w3, k)
	defer r1.release()
	defer r3.release()
	parallelBlocksWork(rows, blk, k.productFLOPs(2), func(r0, end int) {
		swigluHiddenBlock(h1[r0*k.f:], h3[r0*k.f:], x, r1, r3, r0, end-r0, k)
	})
}

// swigluBackward writes dx, dW1, dW3 and dW2 (d[0..3]) from the saved H1
// and H3, or from the products again when there is no save for these
// inputs: A = silu(H1) ⊙ H3, dA = dy W2ᵀ, the gate's gradients dH1 and
// dH3, dx = dH1 W1ᵀ + dH3 W3ᵀ, dW1 = xᵀ dH1, dW3 = xᵀ dH3, dW2 = Aᵀ dy. By
// blocks of rows (swigluBackwardBlocks) when k.blk cuts the rows, else each
// over all of them, the weights' gradients as Linear's backward takes them.
func swigluBackward[T floats](d [][]T, dy []T, in [][]T, k swigluKernel) {
	x, w1, w3, w2 := in[0], in[1], in[2], in[3]
	rows, sv := k.rows(), k.saved
	var h1, h3 []T
	if sv.take(x, w1, w3) {
		h1, _ = sv.h1.([]T)
		h3, _ = sv.h3.([]T)
	}
	if h1 == nil || h3 == nil {
		sv.release()
		h1, h3 = scratchUninit[T](rows*k.f), scratchUninit[T](rows*k.f) // written whole
		swigluHidden(h1, h3, x, w1, w3, k)
	}
	sv.h1, sv.h3 = nil, nil // this pass owns them now
	sv.drop()
	defer releaseScratch(h1)
	defer releaseScratch(h3)

	blk := k.blk
	if blk == 0 || rows <= blk {
		// Whole: each step over all the rows, the products split over the
		// workers.
		n, dx := rows*k.f, d[0]
		a, da, dh1, dh3 := scratchUninit[T](n), scratchUninit[T](n), scratchUninit[T](n), scratchUninit[T](n) // written whole below
		defer releaseScratch(a)
		defer releaseScratch(da)
		defer releaseScratch(dh1)
		defer releaseScratch(dh3)
		gemmTall(true, rows, k.f, k.d, dy, k.d, w2, k.d, 0, da, k.f)
		parallelRanges(n, func(_, lo, hi int) {
			gatedSiLUBoth(a[lo:hi], dh3[lo:hi], dh1[lo:hi], da[lo:hi], h3[lo:hi], h1[lo:hi])
		})
		gemmTall(true, rows, k.d, k.f, dh1, k.f, w1, k.f, 0, dx, k.d)
		gemmTall(true, rows, k.d, k.f, dh3, k.f, w3, k.f, 1, dx, k.d)
		weightGrad(d[1], x, k.d, dh1, k.f, rows)
		weightGrad(d[2], x, k.d, dh3, k.f, rows)
		weightGrad(d[3], a, k.f, dy, k.d, rows)
		return
	}
	swigluBackwardBlocks(d, dy, x, h1, h3, in[1], in[2], in[3], k)
}

// swigluGradGroups is the number of groups of row blocks whose weight
// gradients the blocked backward sums apart and then adds, group 0 first:
// a fixed number, so that the sums' order, and the bits, do not depend on
// how many workers run the groups. Two, for this project's two-core
// machine; more workers than groups idle during the pass.
const swigluGradGroups = 2

// swigluBackwardBlocks is the backward one block of rows at a time: the
// block's A, dA, dH1, dH3 and dx, and its share of the weights' gradients
// (dW1 += x_bᵀ dH1_b, dW3 += x_bᵀ dH3_b, dW2 += A_bᵀ dy_b) while its
// activations are still in cache. The blocks are shared out to
// swigluGradGroups groups in order; each group sums its blocks in order,
// group 0 into d[1..3] and the others into scratch, added to d after.
func swigluBackwardBlocks[T floats](d [][]T, dy, x, h1, h3, w1, w3, w2 []T, k swigluKernel) {
	rows, df, blk := k.rows(), k.d*k.f, k.blk
	dx := d[0]
	// The transposed weights, once, as gemmTall copies them: the small
	// kernels gain only on untransposed operands.
	// W1ᵀ and W3ᵀ go to dx's products, which copy them into the 64-wide
	// kernel's panels where it takes them (newRightOperand).
	w2t, w1t, w3t := transposedScratch(w2, k.d, k.f, k.d), newRightOperand(true, w1, k.f, k.f, k.d, rows), newRightOperand(true, w3, k.f, k.f, k.d, rows)
	defer releaseScratch(w2t)
	defer w1t.release()
	defer w3t.release()
	blocks := (rows + blk - 1) / blk
	groups := min(swigluGradGroups, blocks)
	part := make([][]T, groups) // group g's dW1, dW3, dW2, one after the other
	for g := 1; g < groups; g++ {
		part[g] = scratchUninit[T](3 * df) // written by the group's first block (beta 0)
	}
	parallelForWork(groups, k.productFLOPs(6), func(g int) {
		dw1, dw3, dw2 := d[1], d[2], d[3]
		if g > 0 {
			dw1, dw3, dw2 = part[g][:df], part[g][df:2*df], part[g][2*df:]
		}
		n := blk * k.f
		ws := scratchUninit[T](4 * n) // a, da, dh1, dh3 of one block, each written whole
		defer releaseScratch(ws)
		for b := g * blocks / groups; b < (g+1)*blocks/groups; b++ {
			r0, m := b*blk, min(blk, rows-b*blk)
			o, e, mf := r0*k.f, (r0+m)*k.f, m*k.f
			a, da, dh1, dh3 := ws[:mf], ws[n:n+mf], ws[2*n:2*n+mf], ws[3*n:3*n+mf]
			var beta T
			if b > g*blocks/groups {
				beta = 1
			}
			gemm(false, false, m, k.f, k.d, 1, dy[r0*k.d:], k.d, w2t, k.f, 0, da, k.f)
			gatedSiLUBoth(a, dh3, dh1, da, h3[o:e], h1[o:e])
			w1t.mul(m, dh1, k.f, 0, dx[r0*k.d:], k.d)
			w3t.mul(m, dh3, k.f, 1, dx[r0*k.d:], k.d)
			gemm(true, false, k.d, k.f, m, 1, x[r0*k.d:], k.d, dh1, k.f, beta, dw1, k.f)
			gemm(true, false, k.d, k.f, m, 1, x[r0*k.d:], k.d, dh3, k.f, beta, dw3, k.f)
			gemm(true, false, k.f, k.d, m, 1, a, k.f, dy[r0*k.d:], k.d, beta, dw2, k.d)
		}
	})
	for g := 1; g < groups; g++ {
		for i, dw := range d[1:4] {
			addVec(dw, dw, part[g][i*df:(i+1)*df])
		}
		releaseScratch(part[g])
	}
}
