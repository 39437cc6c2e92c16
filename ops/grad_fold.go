package ops

import (
	"github.com/pkg/errors"
	G "gorgonia.org/gorgonia"
)

// A pre-norm block's h = RMSNorm(x) is read by several ops: attention's
// three projections, the SSD's two, a routed MoE's router and experts,
// MoE-SEI's router, routed and shared experts. Gorgonia sums their
// gradients of h in a pass of its own for each reader after the first
// (ReduceAdd in Backpropagate: Add nodes over [tokens, d_model], in the
// order it differentiated the readers), and the norm's backward then reads
// the sum; the summed terms and the sums cannot share buffers with
// anything (PlanBuffers plans only what fused ops read). Grad builds the
// same gradients with the sum inside the norm's backward instead: the
// norm's backward takes every reader's gradient as an input and adds them,
// in the order Gorgonia would have, by blocks of rows right before it uses
// them, while the block is in cache. Each element is the same IEEE adds in
// the same order, so the gradients are the same to the bit
// (TestGradFoldSameBits).
//
// How Gorgonia is kept from building its sum: the first fused op that reads
// h (the carrier) hands its gradient to Gorgonia as any op does; the others
// tell Gorgonia they do not differentiate h (fusedOp.DiffWRT) and hand
// their gradient to the norm through the block's link (fusedOp.SymDiff).
// A reader that Gorgonia then has no reason to differentiate (none of its
// other inputs leads to a weight being differentiated) would hand the norm
// nothing, so Grad folds a block only when every reader of its h is a
// fused op and each has a weight among wrt as an input it differentiates,
// and checks afterwards that every reader handed its gradient on.

// hReader is a fused op that reads a pre-norm block's h as its input index
// (registered by apply): one term of h's gradient.
type hReader struct {
	link   *residualLink
	index  int
	inputs []*G.Node
	node   *G.Node
}

// normLinkOf is the link of the pre-norm block whose h is n, nil when n is
// not one.
func normLinkOf(n *G.Node) *residualLink {
	op, ok := n.Op().(fusedOp)
	if !ok {
		return nil
	}
	k, ok := op.k.(rmsnormKernel)
	if !ok || k.res == nil {
		return nil
	}
	return k.res
}

// hReaderOf is the reader a kernel applied to inputs would be, nil when it
// reads no block's h that it differentiates, or reads h more than once.
func hReaderOf(k kernel, inputs []*G.Node) *hReader {
	var r *hReader
	diff := k.diffWRT()
	for i, n := range inputs {
		l := normLinkOf(n)
		if l == nil {
			continue
		}
		if r != nil || !diff[i] {
			return nil
		}
		r = &hReader{link: l, index: i, inputs: inputs}
	}
	return r
}

// register records r as a reader of its block's h once apply has put its
// op in the graph as out (Gorgonia may hand back an equal node built
// before, whose reader is registered already).
func (r *hReader) register(out *G.Node) {
	if r == nil {
		return
	}
	if op, ok := out.Op().(fusedOp); !ok || op.reads != r {
		return
	}
	r.node = out
	r.link.readers = append(r.link.readers, r)
}

// carries says whether r is the reader that hands h's gradient to
// Gorgonia: every reader when the block is not folded, else the first.
func (r *hReader) carries() bool {
	return !r.link.fold || r.link.readers[0] == r
}

// hand records the gradient of h that r's backward computes, in the order
// Gorgonia differentiates the readers, for the norm's backward to sum.
func (r *hReader) hand(grad *G.Node) error {
	l := r.link
	if !l.fold {
		return nil
	}
	if l.normed {
		return errors.New("the norm's backward was built before this reader's gradient of h was known")
	}
	l.terms = append(l.terms, grad)
	return nil
}

// gradientTerms are the readers' gradients of h for the norm's backward to
// sum, in Gorgonia's order, nil when the block is not folded. grad is the
// gradient Gorgonia hands the norm, which must be the carrier's. Asking
// marks the norm's backward built.
func (l *residualLink) gradientTerms(grad *G.Node) ([]*G.Node, error) {
	if l == nil || !l.fold {
		return nil, nil
	}
	l.normed = true
	if len(l.terms) != len(l.readers) {
		return nil, errors.Errorf("%d of the %d ops reading the block's h handed it their gradient", len(l.terms), len(l.readers))
	}
	for _, t := range l.terms {
		if t == grad {
			return l.terms, nil
		}
	}
	return nil, errors.Errorf("the gradient of h Gorgonia summed (%s) is not one of its readers'", grad.Name())
}

// Grad is G.Grad(cost, wrt...) with each pre-norm block's gradient of h
// summed inside the block's norm backward rather than by Gorgonia's adds
// (see above): the same gradients to the bit, with fewer passes over
// [tokens, d_model] and fewer buffers held for the whole step. A block
// whose h is read by a Gorgonia op, or by an op none of whose weights is
// in wrt, keeps Gorgonia's sum. The graph must be complete: readers of h
// added after Grad do not take part in the gradient it built (as with
// G.Grad).
func Grad(cost *G.Node, wrt ...*G.Node) (G.Nodes, error) {
	g := cost.Graph()
	if g == nil {
		return nil, errors.New("grad: the cost is in no graph")
	}
	inWRT := make(map[*G.Node]bool, len(wrt))
	for _, n := range wrt {
		inWRT[n] = true
	}
	var folded []*residualLink
	for _, n := range g.AllNodes() {
		l := normLinkOf(n)
		if l == nil || l.fold || !foldable(l, n, inWRT) {
			continue
		}
		l.h, l.fold = n, true
		folded = append(folded, l)
	}
	grads, err := G.Grad(cost, wrt...)
	if err != nil {
		return nil, errors.Wrap(err, "grad")
	}
	for _, l := range folded {
		if len(l.terms) > 0 && !l.normed {
			return nil, errors.Errorf("grad: the readers of %s handed their gradients to a norm whose backward was never built", l.h.Name())
		}
	}
	return grads, nil
}

// foldable says whether the block of link l, whose h is the node h, can
// have its gradient of h summed in its norm: two readers or more, every
// reader of h one of them, and each differentiating a weight in wrt.
func foldable(l *residualLink, h *G.Node, inWRT map[*G.Node]bool) bool {
	if len(l.readers) < 2 || l.normed {
		return false
	}
	registered := make(map[*G.Node]bool, len(l.readers))
	for _, r := range l.readers {
		registered[r.node] = true
	}
	readers := 0
	for it := h.Graph().To(h.ID()); it.Next(); {
		if !registered[it.Node().(*G.Node)] {
			return false
		}
		readers++
	}
	if readers != len(l.readers) {
		return false
	}
	for _, r := range l.readers {
		diff := r.node.Op().(fusedOp).k.diffWRT()
		weighted := false
		for i, in := range r.inputs {
			if i != r.index && diff[i] && inWRT[in] {
				weighted = true
				break
			}
		}
		if !weighted {
			return false
		}
	}
	return true
}
