package ops

import (
	"fmt"
	"hash"
	"hash/fnv"

	"github.com/chewxy/hm"
	"github.com/pkg/errors"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// kernel is the whole computation of one fused op: its forward pass and the
// gradient of every differentiable input, each in a single call, in float32 or
// float64. The op wrappers below turn a kernel into a Gorgonia Op whose
// SymDiff adds one backward node (all gradients at once, packed) and one cheap
// unpack node per differentiable input.
//
// Buffers are flat, row-major and of one element type: every `any` below is
// either []float32 or []float64, the same for all of them in one call.
type kernel interface {
	// name names the op in graphs, error messages and hashes.
	name() string
	// attrs prints every attribute that changes the result; it is part of the
	// op's hash, so two ops with different attributes are never merged.
	attrs() string
	// inShapes are the input shapes the op was built for; outShape its output.
	inShapes() []tensor.Shape
	outShape() tensor.Shape
	// diffWRT says which inputs receive a gradient.
	diffWRT() []bool
	// forward writes the output into out (zeroed, len = outShape volume).
	forward(in []any, out any) error
	// backward writes d(sum(out*dOut))/d(in[i]) into dIn[i] (zeroed, nil for
	// inputs that are not differentiable). out is the forward's output.
	backward(in []any, out, dOut any, dIn []any) error
}

// apply puts k into the graph of the given inputs, after checking that the
// nodes' dtypes agree.
func apply(k kernel, inputs ...*G.Node) (*G.Node, error) {
	if len(inputs) != len(k.inShapes()) {
		return nil, errors.Errorf("%s: %d inputs given, %d expected", k.name(), len(inputs), len(k.inShapes()))
	}
	dt := inputs[0].Dtype()
	if dt != tensor.Float32 && dt != tensor.Float64 {
		return nil, errors.Errorf("%s: dtype %v is not supported (float32 or float64)", k.name(), dt)
	}
	for i, n := range inputs {
		if n.Dtype() != dt {
			return nil, errors.Errorf("%s: input %d (%s) is %v, input 0 is %v", k.name(), i, n.Name(), n.Dtype(), dt)
		}
	}
	op := fusedOp{k: k, out: new(reusedBuffer), calls: newOpCalls(k, len(inputs)), reads: hReaderOf(k, inputs)}
	out, err := G.ApplyOp(op, inputs...)
	if err != nil {
		return nil, errors.Wrapf(err, "%s", k.name())
	}
	op.reads.register(out)
	return out, nil
}

// typeOf is the Gorgonia type of a value of the given shape: a scalar is the
// dtype variable itself, anything else a tensor of that rank.
func typeOf(s tensor.Shape, a hm.TypeVariable) hm.Type {
	if s.IsScalar() {
		return a
	}
	return G.TensorType{Dims: s.Dims(), Of: a}
}

func hashOf(w func(hash.Hash)) uint32 {
	h := fnv.New32a()
	w(h)
	return h.Sum32()
}

// fusedOp is the forward op of a kernel. out is the op's output buffer,
// kept from one run of the graph to the next (see reusedBuffer); calls
// what its Do would otherwise allocate on every run (see opCalls); reads
// the pre-norm block's h it reads, nil when none (see Grad).
type fusedOp struct {
	k     kernel
	out   *reusedBuffer
	calls *opCalls
	reads *hReader
}

func (op fusedOp) Arity() int { return len(op.k.inShapes()) }

func (op fusedOp) Type() hm.Type {
	a := hm.TypeVariable('a')
	ts := make([]hm.Type, 0, op.Arity()+1)
	for _, s := range op.k.inShapes() {
		ts = append(ts, typeOf(s, a))
	}
	ts = append(ts, typeOf(op.k.outShape(), a))
	return hm.NewFnType(ts...)
}

func (op fusedOp) InferShape(in ...G.DimSizer) (tensor.Shape, error) {
	want := op.k.inShapes()
	for i, ds := range in {
		s, ok := ds.(tensor.Shape)
		if ok && i < len(want) && !s.Eq(want[i]) {
			return nil, errors.Errorf("%s: input %d has shape %v, the op was built for %v", op.k.name(), i, s, want[i])
		}
	}
	return op.k.outShape().Clone(), nil
}

func (op fusedOp) Do(vals ...G.Value) (G.Value, error) {
	if t := execTrace.Load(); t != nil {
		t.record(op.out)
		if t.dry(op.out) {
			return valueOf(t.dryBuffer(vals[0].Dtype(), op.k.outShape().TotalSize()), op.k.outShape()), nil
		}
	}
	in, dt, err := buffersOf(op.k, vals, op.calls)
	if err != nil {
		return nil, err
	}
	shape := op.calls.kernelOutShape(op.k)
	out := op.out.get(dt, shape.TotalSize(), !overwritesOutput(op.k))
	if err := op.k.forward(in, out); err != nil {
		return nil, errors.Wrapf(err, "%s forward", op.k.name())
	}
	return op.calls.output(out, shape), nil
}

func (op fusedOp) ReturnsPtr() bool     { return false }
func (op fusedOp) CallsExtern() bool    { return false }
func (op fusedOp) OverwritesInput() int { return -1 }
func (op fusedOp) WriteHash(h hash.Hash) {
	fmt.Fprintf(h, "%s{%s}%v", op.k.name(), op.k.attrs(), op.k.inShapes())
}
func (op fusedOp) Hashcode() uint32 { return hashOf(op.WriteHash) }
func (op fusedOp) String() string   { return fmt.Sprintf("%s{%s}", op.k.name(), op.k.attrs()) }

// DiffWRT is the kernel's diffWRT, with its addends (addendInputs) too,
// and without a pre-norm block's h when another reader hands h's gradient
// to Gorgonia (Grad): this op hands its own to the block's norm.
func (op fusedOp) DiffWRT(n int) []bool {
	diff := op.k.diffWRT()
	var plus []bool
	if a, ok := op.k.(addendInputs); ok {
		plus = a.addends()
	}
	handsH := op.reads != nil && !op.reads.carries()
	if plus == nil && !handsH {
		return diff
	}
	all := append([]bool(nil), diff...)
	for i, p := range plus {
		all[i] = all[i] || p
	}
	if handsH {
		all[op.reads.index] = false
	}
	return all
}

// upstreamGradient is a kernel whose gradient with respect to every input
// is the upstream gradient itself (a sum): its SymDiff hands grad on, as
// Gorgonia's own addition does, with no backward node and no copies.
type upstreamGradient interface{ gradientIsUpstream() bool }

// gradientAware is a kernel that keeps work of its forward for its
// backward only in graphs that take its gradient (attention's
// probabilities, the routed MoE's expert activations, CDMoE's shared
// activations and queries): SymDiff tells it so.
type gradientAware interface{ gradientWanted() }

// gradientAddend is a kernel whose first input's gradient also takes in
// another gradient, known only once the gradient graph is being built
// (the pre-norm block's residual gradient, PreNorm): SymDiff gives it to
// the backward op as one more input, and backwardAdding adds it into the
// first input's gradient. addend is nil when there is none.
type gradientAddend interface {
	addend() *G.Node
	backwardAdding(in []any, out, dOut, addend any, dIn []any) error
}

// gradientTerms is a kernel whose upstream gradient may come as terms
// to sum (a pre-norm block's norm, whose h's readers hand it their
// gradients: Grad): SymDiff gives them to the backward op as more inputs,
// and backwardSumming adds them, in order, into the upstream gradient it
// uses. gradientTerms is nil when Gorgonia's grad is the whole gradient.
type gradientTerms interface {
	gradientTerms(grad *G.Node) ([]*G.Node, error)
	backwardSumming(in []any, out any, terms []any, addend any, dIn []any) error
}

// addendInputs is a kernel with inputs that are only added to its output
// (MoE-SEI's routed experts, added where its shared experts close the
// block: Residual.SwiGLUPlus). Their gradient is the upstream gradient
// itself: fusedOp.DiffWRT reports them and SymDiff hands them grad, as
// Gorgonia's addition does, while the kernel's diffWRT leaves them out of
// its backward. addends is nil when there are none.
type addendInputs interface{ addends() []bool }

// residualCloser is a kernel that can close a pre-norm block (PreNorm):
// its output is the residual stream plus its own result, and the upstream
// gradient, the stream's share, goes to the block's norm; residual is nil
// when the op does not close one.
type residualCloser interface{ residual() *residualLink }

// SymDiff adds the backward node and one unpack node per differentiable
// input. The gradient of a pre-norm block's h is also handed to the
// block's norm when Grad folds the block.
func (op fusedOp) SymDiff(inputs G.Nodes, output, grad *G.Node) (G.Nodes, error) {
	res, err := op.symDiff(inputs, output, grad)
	if err != nil || op.reads == nil {
		return res, err
	}
	if err := op.reads.hand(res[op.reads.index]); err != nil {
		return nil, errors.Wrapf(err, "%s backward", op.k.name())
	}
	return res, nil
}

func (op fusedOp) symDiff(inputs G.Nodes, output, grad *G.Node) (G.Nodes, error) {
	if c, ok := op.k.(residualCloser); ok {
		if l := c.residual(); l != nil {
			if err := l.pass(grad); err != nil {
				return nil, errors.Wrapf(err, "%s", op.k.name())
			}
		}
	}
	if u, ok := op.k.(upstreamGradient); ok && u.gradientIsUpstream() {
		diff := op.k.diffWRT()
		res := make(G.Nodes, len(inputs))
		for i := range res {
			if diff[i] {
				res[i] = grad
			}
		}
		return res, nil
	}
	if w, ok := op.k.(gradientAware); ok {
		w.gradientWanted()
	}
	diff := op.k.diffWRT()
	children := append(append(G.Nodes{}, inputs...), output, grad)
	var addend bool
	if a, ok := op.k.(gradientAddend); ok && diff[0] {
		if n := a.addend(); n != nil {
			if !n.Shape().Eq(inputs[0].Shape()) || n.Dtype() != inputs[0].Dtype() {
				return nil, errors.Errorf("%s backward: the gradient to add is %v %v, input 0 is %v %v", op.k.name(), n.Shape(), n.Dtype(), inputs[0].Shape(), inputs[0].Dtype())
			}
			children, addend = append(children, n), true
		}
	}
	var terms int
	if t, ok := op.k.(gradientTerms); ok && diff[0] {
		ns, err := t.gradientTerms(grad)
		if err != nil {
			return nil, errors.Wrapf(err, "%s backward", op.k.name())
		}
		for _, n := range ns {
			if !n.Shape().Eq(output.Shape()) || n.Dtype() != output.Dtype() {
				return nil, errors.Errorf("%s backward: a gradient to sum is %v %v, the output is %v %v", op.k.name(), n.Shape(), n.Dtype(), output.Shape(), output.Dtype())
			}
		}
		children, terms = append(children, ns...), len(ns)
	}
	side := &sideGradients{}
	packed, err := G.ApplyOp(fusedDiffOp{k: op.k, packed: new(reusedBuffer), side: side, addend: addend, terms: terms, calls: newOpCalls(op.k, len(children))}, children...)
	if err != nil {
		return nil, errors.Wrapf(err, "%s backward", op.k.name())
	}
	res := make(G.Nodes, len(inputs))
	off := 0
	for i, s := range op.k.inShapes() {
		if !diff[i] {
			continue
		}
		if res[i], err = G.ApplyOp(unpackOp{of: op.k.name(), index: i, offset: off, shape: s.Clone(), side: side, out: new(cachedDense)}, packed); err != nil {
			return nil, errors.Wrapf(err, "%s backward: gradient of input %d", op.k.name(), i)
		}
		off += s.TotalSize()
	}
	if a, ok := op.k.(addendInputs); ok {
		for i, p := range a.addends() {
			if p {
				res[i] = grad
			}
		}
	}
	return res, nil
}

// packedSize is the length of the backward op's output: the sizes of the
// differentiable inputs, one after the other.
func packedSize(k kernel) int {
	n := 0
	for i, s := range k.inShapes() {
		if k.diffWRT()[i] {
			n += s.TotalSize()
		}
	}
	return n
}

// fusedDiffOp computes every gradient of a kernel in one call, packed in a
// vector that is kept from one run to the next (see reusedBuffer), except
// the gradients a plan moved to buffers of their own (side). calls is what
// its Do would otherwise allocate on every run (see opCalls). With addend
// (a gradientAddend kernel), it reads one more input after the upstream
// gradient, of input 0's shape, and adds it into input 0's gradient. With
// terms (a gradientTerms kernel), it reads that many more inputs after
// those, of the output's shape, whose sum in order is the upstream
// gradient it uses (the upstream gradient it reads is one of them).
type fusedDiffOp struct {
	k      kernel
	packed *reusedBuffer
	side   *sideGradients
	addend bool
	terms  int
	calls  *opCalls
}

// sideGradients are the gradients of one fusedDiffOp that PlanBuffers moved
// out of its packed vector, each into a buffer of its own, so that the
// packed vector can be shared once its other gradients are read: a
// weight's gradient, which the caller reads after the run, or a gradient
// that a Gorgonia op reads (the sum Gorgonia builds for a value read
// twice). by maps an input's index to its buffer; nil until a plan moves
// one. The backward op and its unpack ops share it.
type sideGradients struct {
	by map[int]*reusedBuffer
}

// of is input i's own gradient buffer, nil when the gradient is in the
// packed vector.
func (s *sideGradients) of(i int) *reusedBuffer {
	if s == nil {
		return nil
	}
	return s.by[i]
}

// drop lets go of the gradients' own buffers, which stay the inputs' own.
func (s *sideGradients) drop() {
	if s == nil {
		return
	}
	for _, r := range s.by {
		r.buf = nil
	}
}

func (op fusedDiffOp) Arity() int {
	n := len(op.k.inShapes()) + 2 + op.terms
	if op.addend {
		n++
	}
	return n
}

func (op fusedDiffOp) Type() hm.Type {
	a := hm.TypeVariable('a')
	ts := make([]hm.Type, 0, op.Arity()+1)
	for _, s := range op.k.inShapes() {
		ts = append(ts, typeOf(s, a))
	}
	o := typeOf(op.k.outShape(), a)
	ts = append(ts, o, o)
	if op.addend {
		ts = append(ts, typeOf(op.k.inShapes()[0], a))
	}
	for range op.terms {
		ts = append(ts, o)
	}
	ts = append(ts, G.TensorType{Dims: 1, Of: a})
	return hm.NewFnType(ts...)
}

func (op fusedDiffOp) InferShape(...G.DimSizer) (tensor.Shape, error) {
	return tensor.Shape{packedSize(op.k)}, nil
}

func (op fusedDiffOp) Do(vals ...G.Value) (G.Value, error) {
	shapes := op.calls.kernelInShapes(op.k)
	n := len(shapes)
	if t := execTrace.Load(); t != nil {
		t.record(op.packed)
		if t.dry(op.packed) {
			return valueOf(t.dryBuffer(vals[n].Dtype(), packedSize(op.k)), tensor.Shape{packedSize(op.k)}), nil
		}
	}
	in, dt, err := buffersOf(op.k, vals[:n], op.calls)
	if err != nil {
		return nil, err
	}
	out, err := op.calls.bufferOf(n, vals[n], dt)
	if err != nil {
		return nil, errors.Wrapf(err, "%s backward: forward output", op.k.name())
	}
	dOut, err := op.calls.bufferOf(n+1, vals[n+1], dt)
	if err != nil {
		return nil, errors.Wrapf(err, "%s backward: upstream gradient", op.k.name())
	}
	zero := !overwritesGradients(op.k)
	size := op.calls.packedSize(op.k)
	packed := op.packed.get(dt, size, zero)
	dIn := op.calls.gradients(n)
	diff := op.calls.kernelDiffWRT(op.k)
	off := 0
	for i, s := range shapes {
		if !diff[i] {
			continue
		}
		if r := op.side.of(i); r != nil {
			dIn[i] = r.get(dt, s.TotalSize(), zero)
		} else {
			dIn[i] = op.calls.packedSlice(i, packed, off, off+s.TotalSize())
		}
		off += s.TotalSize()
	}
	var res any
	if op.addend {
		if _, ok := op.k.(gradientAddend); !ok {
			return nil, errors.Errorf("%s backward: built with a gradient to add, which the kernel does not take", op.k.name())
		}
		if !vals[n+2].Shape().Eq(shapes[0]) {
			return nil, errors.Errorf("%s backward: the gradient to add has shape %v, input 0 %v", op.k.name(), vals[n+2].Shape(), shapes[0])
		}
		if res, err = op.calls.bufferOf(n+2, vals[n+2], dt); err != nil {
			return nil, errors.Wrapf(err, "%s backward: the gradient to add", op.k.name())
		}
	}
	if op.terms > 0 {
		t, ok := op.k.(gradientTerms)
		if !ok {
			return nil, errors.Errorf("%s backward: built with gradients to sum, which the kernel does not take", op.k.name())
		}
		first := n + 2
		if op.addend {
			first++
		}
		terms := op.calls.termList(op.terms)
		for j := range terms {
			v := vals[first+j]
			if !v.Shape().Eq(op.calls.kernelOutShape(op.k)) {
				return nil, errors.Errorf("%s backward: gradient to sum %d has shape %v, the output %v", op.k.name(), j, v.Shape(), op.calls.kernelOutShape(op.k))
			}
			if terms[j], err = op.calls.bufferOf(first+j, v, dt); err != nil {
				return nil, errors.Wrapf(err, "%s backward: gradient to sum %d", op.k.name(), j)
			}
		}
		if err := t.backwardSumming(in, out, terms, res, dIn); err != nil {
			return nil, errors.Wrapf(err, "%s backward", op.k.name())
		}
		return op.calls.packedOutput(packed, size), nil
	}
	if op.addend {
		if err := op.k.(gradientAddend).backwardAdding(in, out, dOut, res, dIn); err != nil {
			return nil, errors.Wrapf(err, "%s backward", op.k.name())
		}
		return op.calls.packedOutput(packed, size), nil
	}
	if err := op.k.backward(in, out, dOut, dIn); err != nil {
		return nil, errors.Wrapf(err, "%s backward", op.k.name())
	}
	return op.calls.packedOutput(packed, size), nil
}

func (op fusedDiffOp) ReturnsPtr() bool     { return false }
func (op fusedDiffOp) CallsExtern() bool    { return false }
func (op fusedDiffOp) OverwritesInput() int { return -1 }
func (op fusedDiffOp) WriteHash(h hash.Hash) {
	fmt.Fprintf(h, "%sDiff{%s}%v", op.k.name(), op.k.attrs(), op.k.inShapes())
	if op.addend {
		fmt.Fprint(h, "+addend")
	}
	if op.terms > 0 {
		fmt.Fprintf(h, "+terms=%d", op.terms)
	}
}
func (op fusedDiffOp) Hashcode() uint32 { return hashOf(op.WriteHash) }
func (op fusedDiffOp) String() string   { return fmt.Sprintf("%sDiff{%s}", op.k.name(), op.k.attrs()) }

// unpackOp returns the gradient of one input of a fusedDiffOp: a tensor over
// its part of the packed vector, without copying, or over its own buffer
// when a plan moved it there (side). The parts do not overlap, so a later
// in-place op on one gradient never touches another.
type unpackOp struct {
	of     string
	index  int
	offset int
	shape  tensor.Shape
	side   *sideGradients
	out    *cachedDense
}

func (op unpackOp) Arity() int { return 1 }
func (op unpackOp) Type() hm.Type {
	a := hm.TypeVariable('a')
	return hm.NewFnType(G.TensorType{Dims: 1, Of: a}, typeOf(op.shape, a))
}
func (op unpackOp) InferShape(...G.DimSizer) (tensor.Shape, error) { return op.shape.Clone(), nil }
func (op unpackOp) Do(vals ...G.Value) (G.Value, error) {
	if r := op.side.of(op.index); r != nil {
		// The backward op wrote this gradient into r in the same run.
		if r.buf == nil {
			return nil, errors.Errorf("%s gradient %d: read before the backward op wrote it", op.of, op.index)
		}
		return op.out.of(r.buf, op.shape), nil
	}
	n := op.shape.TotalSize()
	if d, ok := vals[0].(*tensor.Dense); ok && !d.IsScalar() {
		switch d.Dtype() {
		case tensor.Float32:
			return cachedOf(op.out, d.Float32s()[op.offset:op.offset+n:op.offset+n], op.shape), nil
		case tensor.Float64:
			return cachedOf(op.out, d.Float64s()[op.offset:op.offset+n:op.offset+n], op.shape), nil
		}
	}
	return nil, errors.Errorf("%s gradient %d: unsupported packed value %T of %v", op.of, op.index, vals[0], vals[0].Dtype())
}
func (op unpackOp) ReturnsPtr() bool     { return false }
func (op unpackOp) CallsExtern() bool    { return false }
func (op unpackOp) OverwritesInput() int { return -1 }
func (op unpackOp) WriteHash(h hash.Hash) {
	fmt.Fprintf(h, "unpack{%s,%d,%d,%v}", op.of, op.index, op.offset, op.shape)
}
func (op unpackOp) Hashcode() uint32 { return hashOf(op.WriteHash) }
func (op unpackOp) String() string {
	return fmt.Sprintf("unpack{%s grad %d}", op.of, op.index)
}
