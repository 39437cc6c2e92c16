package ops

import (
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// reusedBuffer is the output buffer of one op node, kept from one run of a
// compiled graph to the next. A training step then writes into the memory of
// the step before instead of allocating every activation and gradient afresh:
// at d_model 256 that was about 1 GB of new, zeroed pages per step, and the
// garbage collector let the heap grow to twice that between collections.
//
// Each node gets its own buffer (apply and SymDiff create one per call), so
// the value a node returns stays valid until the same node runs again. That
// is the contract Gorgonia's tape machine already implies: values are read
// between RunAll and the next RunAll (the trainer reads loss and gradients,
// then resets). Whoever keeps a value beyond that must copy it, and one graph
// must not be run by two machines at once (Gorgonia binds values to nodes,
// so that was never safe).
//
// PlanBuffers may then point several nodes' buffers at one shared buffer
// (shared), for nodes whose values are never needed at the same time.
type reusedBuffer struct {
	buf    any
	shared *reusedBuffer
}

// get returns a buffer of n elements of dt: the previous run's when it fits,
// cleared if zero is set (kernels whose contract is a zeroed output), a new
// zeroed one otherwise. A nil receiver always allocates.
func (r *reusedBuffer) get(dt tensor.Dtype, n int, zero bool) any {
	if r == nil {
		return newBuffer(dt, n)
	}
	if r.shared != nil {
		return r.shared.get(dt, n, zero)
	}
	switch b := r.buf.(type) {
	case []float32:
		if dt == tensor.Float32 && len(b) == n {
			reuseBuffer(b, zero)
			return r.buf // already in an interface: returning b would box it again
		}
	case []float64:
		if dt == tensor.Float64 && len(b) == n {
			reuseBuffer(b, zero)
			return r.buf // already in an interface: returning b would box it again
		}
	}
	r.buf = newBuffer(dt, n)
	if !zero && poisonUninitScratch {
		// The tests fill a first run's buffer too, so that a kernel claiming
		// to write every element shows on a graph run only once.
		switch b := r.buf.(type) {
		case []float32:
			poison(b)
		case []float64:
			poison(b)
		}
	}
	return r.buf
}

// drop lets go of r's buffer, and of the shared one it writes into.
func (r *reusedBuffer) drop() {
	r.buf = nil
	if r.shared != nil {
		r.shared.buf = nil
	}
}

// reuseBuffer clears b for a kernel that expects a zeroed output; for one
// that writes every element, the package's tests fill b with NaN instead
// (poisonUninitScratch), so a kernel claiming so wrongly shows.
func reuseBuffer[T floats](b []T, zero bool) {
	switch {
	case zero:
		clear(b)
	case poisonUninitScratch:
		poison(b)
	}
}

// outputWriter is a kernel whose forward writes every element of its output,
// so that a reused output buffer needs no clearing first.
type outputWriter interface{ writesWholeOutput() bool }

// gradientWriter is a kernel whose backward writes every element of every
// gradient it computes, so that a reused packed buffer needs no clearing.
type gradientWriter interface{ writesWholeGradients() bool }

func overwritesOutput(k kernel) bool {
	w, ok := k.(outputWriter)
	return ok && w.writesWholeOutput()
}

func overwritesGradients(k kernel) bool {
	w, ok := k.(gradientWriter)
	return ok && w.writesWholeGradients()
}

// forwardSave is the bookkeeping of what a fused op's forward keeps for its
// backward in the same run (CDMoE's activations and retrieval, the MoE
// experts' activations, the SSD's chunk states; the router keys its save on
// the logits' bits instead, see routerSaved): which
// input buffers that forward ran on, and whether a backward has used the
// save yet. A backward may use it only once, and only for the same buffers;
// otherwise it computes what it needs again. A graph is never run by two
// machines at once (see reusedBuffer), so no lock is needed.
type forwardSave struct {
	inputs []any // slices, compared by address
	fresh  bool
}

// keep marks the save as written by a forward on inputs.
func (s *forwardSave) keep(inputs ...any) { s.inputs, s.fresh = inputs, true }

// take says whether a backward on inputs may use the save, and marks it
// used either way.
func (s *forwardSave) take(inputs ...any) bool {
	ok := s.fresh && len(inputs) == len(s.inputs)
	for i := 0; ok && i < len(inputs); i++ {
		ok = sameBuffer(s.inputs[i], inputs[i])
	}
	s.fresh = false
	return ok
}

// drop forgets the inputs: nothing may use the save.
func (s *forwardSave) drop() { *s = forwardSave{} }

// sameBuffer says whether a and b ([]float32 or []float64 in an any) are
// one slice: same type, length and first element.
func sameBuffer(a, b any) bool {
	switch x := a.(type) {
	case []float32:
		return sameSlice(x, b)
	case []float64:
		return sameSlice(x, b)
	}
	return false
}

func sameSlice[T floats](a []T, b any) bool {
	s, ok := b.([]T)
	return ok && len(s) == len(a) && len(s) > 0 && &s[0] == &a[0]
}

// savedReleaser is a kernel whose forward keeps state for its backward (CDMoE's
// activations and retrieval), which ReleaseBuffers drops too.
type savedReleaser interface{ releaseSaved() }

// ReleaseBuffers drops the output buffers the fused ops of g keep between
// runs (see reusedBuffer), so that a graph run only now and then (the
// trainer's validation pass) does not hold its activations between runs.
// The next run allocates them again. Values read from g's nodes before the
// call stay valid; g must not be running.
func ReleaseBuffers(g *G.ExprGraph) {
	for _, n := range g.AllNodes() {
		switch op := n.Op().(type) {
		case fusedOp:
			op.out.drop()
			op.calls.forget()
			if r, ok := op.k.(savedReleaser); ok {
				r.releaseSaved()
			}
		case fusedDiffOp:
			op.packed.drop()
			op.side.drop()
			op.calls.forget()
		case unpackOp:
			op.out.forget()
		}
	}
}
