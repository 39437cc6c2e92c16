package ops

import (
	"fmt"
	"sync/atomic"

	"github.com/pkg/errors"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// A pre-norm residual block, x + F(RMSNorm(x; w)) (SPEC §4), reads x twice:
// in its norm and in the residual add that closes it. Gorgonia then builds
// the gradient of x as a sum of two tensors, the residual's upstream
// gradient and the norm's, in a pass of its own over three tensors of
// x's size, and the two gradients it sums cannot share buffers with
// anything (PlanBuffers plans only what fused ops read). PreNorm and
// Residual.Add build the same values with the sum inside the norm's
// backward: the add passes its upstream gradient to the norm's backward
// (not to x), and the norm's backward writes dx = dres + its own dx, row by
// row while the row is in cache. Each element is the same one IEEE add, so
// the gradients are the same to the bit (TestPreNormSameBitsAsNormAndAdd).
//
// The block's last op may also do the forward's add itself
// (Residual.SwiGLU, Residual.SwiGLUPlus, Residual.Linear,
// Residual.MoEExperts, Residual.CDMoE): it takes x as one more input,
// which Gorgonia does not differentiate, adds it to each block of rows of
// its output as soon as they are computed, and passes its upstream
// gradient to the norm's backward the same way.

// Residual is the open end of the pre-norm block PreNorm opened on x: one
// of Add, SwiGLU, SwiGLUPlus, Linear, MoEExperts or CDMoE closes it, once.
type Residual struct {
	x, h *G.Node
	link *residualLink
}

// residualLink carries the block output's upstream gradient from the op
// that closed the block to the norm's backward while Gorgonia builds the
// gradient graph. Gorgonia visits nodes in reverse topological order, and
// that op depends on the norm through the sublayer (checked by dependsOn
// where the sublayer could skip h), so its SymDiff always runs first.
type residualLink struct {
	id     uint64
	closed bool    // an op closed the block
	grad   *G.Node // the block output's upstream gradient, once that op's SymDiff ran
	normed bool    // the norm's SymDiff ran

	// The gradient of h summed in the norm's backward (Grad): the fused
	// ops reading h, in the order they were built; whether Grad folds
	// the block, with h then set; and the readers' gradients of h in the
	// order Gorgonia differentiated them.
	readers []*hReader
	fold    bool
	h       *G.Node
	terms   []*G.Node
}

var residualLinks atomic.Uint64

// PreNorm opens a pre-norm residual block on the residual stream x: h is
// RMSNorm(x; w) with eps (Zhang & Sennrich 2019; Wonderful Matrices
// appendix C.2), and r.Add(y) closes the block with x + y. The gradient of
// x, the norm's plus the residual's, is written by the norm's backward in
// one pass.
func PreNorm(x, w *G.Node, eps float64) (h *G.Node, r *Residual, err error) {
	link := &residualLink{id: residualLinks.Add(1)}
	h, err = rmsnorm(x, w, eps, link)
	if err != nil {
		return nil, nil, errors.Wrap(err, "pre-norm")
	}
	return h, &Residual{x: x, h: h, link: link}, nil
}

// Add closes the block: x + y, y of x's shape computed from the block's h.
// It may be called once. When y does not depend on h (a sublayer that
// ignores its input), the norm's backward may not run after the add's, so
// Add is then a plain Add(x, y).
func (r *Residual) Add(y *G.Node) (*G.Node, error) {
	if err := r.check("residual add"); err != nil {
		return nil, err
	}
	if err := sameShape("residual add", r.x, y); err != nil {
		return nil, err
	}
	return r.add(y)
}

// SwiGLU closes the block with its MLP: x + SwiGLU(h; W1, W3, W2) (see
// SwiGLU), the residual added inside the op, in each block of rows right
// after its down-projection, while the block's rows of y are in cache.
// The values are those of Add(x, SwiGLU(h, …)) to the bit. Where SwiGLU
// runs as three nodes (the pure-Go build), it is Add of them.
func (r *Residual) SwiGLU(w1, w3, w2 *G.Node) (*G.Node, error) {
	if err := r.check("residual swiglu"); err != nil {
		return nil, err
	}
	return swiglu(r.h, w1, w3, w2, r, nil)
}

// SwiGLUPlus closes the block with its MLP and one more addend, other (of
// x's shape): x + (SwiGLU(h; W1, W3, W2) + other), other added to each
// block of rows right before the residual. It is MoE-SEI's block (SPEC
// §3, shared expert isolation: the shared experts' SwiGLU closing, the
// routed experts' output as other). The values are those of Add(x,
// Add(other, SwiGLU(h, …))) to the bit (each element is the same two IEEE
// adds, and an add's operands commute); other's gradient is the upstream
// gradient, handed on with no copy, as Add's is.
func (r *Residual) SwiGLUPlus(w1, w3, w2, other *G.Node) (*G.Node, error) {
	if err := r.check("residual swiglu"); err != nil {
		return nil, err
	}
	if other == nil {
		return nil, errors.New("residual swiglu: the addend is nil")
	}
	if !other.Shape().Eq(r.x.Shape()) || other.Dtype() != r.x.Dtype() {
		return nil, errors.Errorf("residual swiglu: the addend %s is %v %v, the block's x is %v %v",
			other.Name(), other.Shape(), other.Dtype(), r.x.Shape(), r.x.Dtype())
	}
	return swiglu(r.h, w1, w3, w2, r, other)
}

// Linear closes the block with its output projection: x + a w (see
// Linear), a [..., din] computed from the block's h and w [din, d_model].
// The residual is added to each block of rows right after its product,
// where the product runs in blocks (the 64-wide kernel, OpenBLAS's small
// kernels), else to each worker's rows after its product. The values are
// those of Add(x, Linear(a, w)) to the bit. When a does not depend on h,
// it is that Add.
func (r *Residual) Linear(a, w *G.Node) (*G.Node, error) {
	if err := r.check("residual linear"); err != nil {
		return nil, err
	}
	as, ws := a.Shape(), w.Shape()
	if as.Dims() < 1 || ws.Dims() != 2 || ws[0] != as[as.Dims()-1] {
		return nil, errors.Errorf("residual linear: w %v must be [din, dout] with din = a's last axis (a %v)", ws, as)
	}
	k := linearKernel{x: as.Clone(), din: ws[0], dout: ws[1], res: r.link}
	if !dependsOn(a, r.h) {
		y, err := Linear(a, w)
		if err != nil {
			return nil, err
		}
		return r.add(y)
	}
	if err := r.close(k.outShape()); err != nil {
		return nil, err
	}
	return apply(k, a, w, r.x)
}

// MoEExperts closes the block with a routed MoE's experts: x +
// MoEExperts(h, gates, W1, W3, W2) (see MoEExperts), gates [..., N]
// computed from the block's h. The residual is added to each token's row
// right after its experts are summed, by blocks of tokens while they are in
// cache. The values are those of Add(x, MoEExperts(h, …)) to the bit.
func (r *Residual) MoEExperts(gates, w1, w3, w2 *G.Node) (*G.Node, error) {
	if err := r.check("residual moe"); err != nil {
		return nil, err
	}
	return moeExperts(r.h, gates, w1, w3, w2, r)
}

// CDMoE closes the block with cross-domain MoE: x + CDMoE(in, cfg) (see
// CDMoE), with in.X the block's h (nil is taken as h). The residual is added
// to each block of tokens' rows right after their experts are, while the
// rows are in cache. The values are those of Add(x, CDMoE(…)) to the bit.
func (r *Residual) CDMoE(in CDMoEInputs, cfg CDMoEConfig) (*G.Node, error) {
	if err := r.check("residual cdmoe"); err != nil {
		return nil, err
	}
	if in.X == nil {
		in.X = r.h
	}
	if in.X != r.h {
		return nil, errors.Errorf("residual cdmoe: the input %s is not the block's h %s", in.X.Name(), r.h.Name())
	}
	return cdmoe(in, cfg, r)
}

// residualRowBlock is the rows (tokens) of one block of an op that closes a
// pre-norm block row by row (Residual.MoEExperts, Residual.CDMoE): the
// residual is added to a block's rows right after the op wrote them, 64 KiB
// of float32 rows at d_model 256, inside a core's L2.
const residualRowBlock = 64

// closeInBlocks has write compute rows lo to hi of dst [rows, d] by blocks
// of residualRowBlock rows, and adds xres's rows to each block right after
// write, while the block is in cache (the add Add(x, y) would do). Without
// xres it is write(lo, hi).
func closeInBlocks[T floats](dst, xres []T, d, lo, hi int, write func(b0, b1 int)) {
	if xres == nil {
		write(lo, hi)
		return
	}
	for b0 := lo; b0 < hi; b0 += residualRowBlock {
		b1 := min(b0+residualRowBlock, hi)
		write(b0, b1)
		closeRows(dst[b0*d:b1*d], nil, xres, b0*d, b1*d)
	}
}

// closeRows closes the block on y's elements [lo, hi), held in yb:
// x + (y + plus), or x + y without plus, each as Add's order.
func closeRows[T floats](yb, plus, xres []T, lo, hi int) {
	if plus != nil {
		addVec(yb, plus[lo:hi], yb)
	}
	addVec(yb, xres[lo:hi], yb)
}

// check says what is wrong with closing r now, if anything.
func (r *Residual) check(what string) error {
	if r == nil || r.link == nil {
		return errors.Errorf("%s: the block was not opened by PreNorm", what)
	}
	if r.link.closed {
		return errors.Errorf("%s: the block opened on %s is closed already", what, r.x.Name())
	}
	return nil
}

// close marks the block closed by an op whose output has shape s.
func (r *Residual) close(s tensor.Shape) error {
	if !s.Eq(r.x.Shape()) {
		return errors.Errorf("residual: the block's output %v must be x's shape %v", s, r.x.Shape())
	}
	r.link.closed = true
	return nil
}

// add closes the block with x + y (y of x's shape): through the norm's
// backward when y depends on h, else as a plain Add.
func (r *Residual) add(y *G.Node) (*G.Node, error) {
	if err := r.close(y.Shape()); err != nil {
		return nil, err
	}
	if !dependsOn(y, r.h) {
		return Add(r.x, y)
	}
	return apply(residualAddKernel{binaryKernel: binaryKernel{op: binaryAdd, shape: r.x.Shape().Clone()}, link: r.link}, r.x, y)
}

// dependsOn says whether y is computed from h (or is h).
func dependsOn(y, h *G.Node) bool {
	g := y.Graph()
	if g == nil || g != h.Graph() {
		return false
	}
	seen := map[int64]bool{}
	stack := []*G.Node{y}
	for len(stack) > 0 {
		n := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if n == h {
			return true
		}
		if seen[n.ID()] {
			continue
		}
		seen[n.ID()] = true
		for it := g.From(n.ID()); it.Next(); {
			stack = append(stack, it.Node().(*G.Node))
		}
	}
	return false
}

// residualAddKernel is x + y whose gradient goes to y only as far as
// Gorgonia knows: x's part, the same upstream gradient, goes to the norm's
// backward through link (see PreNorm).
type residualAddKernel struct {
	binaryKernel
	link *residualLink
}

func (k residualAddKernel) name() string    { return "residual_add" }
func (k residualAddKernel) attrs() string   { return fmt.Sprintf("block=%d", k.link.id) }
func (k residualAddKernel) diffWRT() []bool { return []bool{false, true} }

// residual is the block the add closes: its upstream gradient, x's share,
// goes to the norm's backward; y's is the upstream gradient itself, as for
// any add (fusedOp.SymDiff).
func (k residualAddKernel) residual() *residualLink { return k.link }

// pass records the block output's upstream gradient, x's share of it,
// for the norm's backward.
func (l *residualLink) pass(grad *G.Node) error {
	if l.normed {
		return errors.New("residual: the norm's backward was built before the block output's gradient was known")
	}
	l.grad = grad
	return nil
}

// addend is the residual's upstream gradient for the norm's backward to
// add into dx, nil when the block has none (no add, or one that Gorgonia
// does not differentiate). Asking marks the norm's backward built.
func (l *residualLink) addend() *G.Node {
	if l == nil {
		return nil
	}
	l.normed = true
	return l.grad
}
