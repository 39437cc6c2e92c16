package layers

import (
	G "gorgonia.org/gorgonia"

	"github.com/wonderful-matrices/wonderful-matrices-go/ops"
)

// Sublayer is one residual sublayer of a stack (SPEC §4): a mixer or an FFN
// mapping x [b,t,d_model] to y [b,t,d_model]. Forward builds the graph; with
// a non-nil State it continues decoding from the tokens in the state.
type Sublayer interface {
	// Kind is the layer's name in tables ("ssd", "qcatn", "cdmoe", ...).
	Kind() string
	// Params are the layer's parameters in a fixed order.
	Params() Params
	// Forward builds y for x under b (Must/Fail stop the build on an error).
	Forward(b *Builder, x *G.Node, st *State) *G.Node
}

// Closer is implemented by layers whose last op can also add the residual
// stream, closing their pre-norm block x + Layer(RMSNorm(x)) themselves
// (ops.Residual): the block's output is written in the op's blocks of rows
// while they are in cache, instead of by an add of whole tensors after it.
// ForwardClosing returns x + Forward(b, h, st), with the same values to the
// bit, for h the block's r's normalised input. A layer outside this module
// need not implement it: the model then closes the block with r.Add.
type Closer interface {
	ForwardClosing(b *Builder, h *G.Node, r *ops.Residual, st *State) *G.Node
}

// Sparse is implemented by layers that use only part of their parameters per
// token (the MoE layers): ActiveParams is that part, the "activated
// parameters" of Wonderful Matrices Table 3.
type Sparse interface {
	ActiveParams() int64
}

// ActiveParams is l's active parameter count: all of them unless l is Sparse.
func ActiveParams(l Sublayer) int64 {
	if s, ok := l.(Sparse); ok {
		return s.ActiveParams()
	}
	return l.Params().Count()
}

// Shape is what every layer needs to know of the model around it.
type Shape struct {
	// DModel is the residual width.
	DModel int
	// NLayers is the model's sublayer count, for the output scaling
	// 1/sqrt(2·n_layers) (SPEC §3).
	NLayers int
}

// dims returns the batch and time of x [b,t,d], or fails.
func dims(b *Builder, x *G.Node, what string, d int) (int, int) {
	s := x.Shape()
	if s.Dims() != 3 || s[2] != d {
		b.Fail("%s: input must be [b,t,%d], got %v", what, d, s)
	}
	return s[0], s[1]
}
