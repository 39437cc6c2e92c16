package layers

import (
	"github.com/pkg/errors"
	G "gorgonia.org/gorgonia"

	"github.com/wonderful-matrices/wonderful-matrices-go/ops"
)

// MLPConfig configures the SwiGLU FFN (letter M).
type MLPConfig struct {
	// DFF is the hidden width (default 4·d_model·2/3 rounded up to a
	// multiple of 8, Llama's rule for SwiGLU).
	DFF int `json:"d_ff,omitempty"`
}

// DefaultDFF is Llama's SwiGLU width for d_model: 8/3·d_model rounded up to
// a multiple of 8.
func DefaultDFF(dModel int) int { return (8*dModel/3 + 7) / 8 * 8 }

// Resolved fills in the defaults.
func (c MLPConfig) Resolved(dModel int) MLPConfig {
	if c.DFF == 0 {
		c.DFF = DefaultDFF(dModel)
	}
	return c
}

// Validate checks a resolved config.
func (c MLPConfig) Validate(field string) error {
	if c.DFF < 1 {
		return errors.Errorf("%s.d_ff: must be >= 1, got %d", field, c.DFF)
	}
	return nil
}

// MLP is the gated SwiGLU FFN of Llama-style stacks (SPEC §3):
// y = (silu(x W1) ⊙ x W3) W2.
type MLP struct {
	shape      Shape
	params     paramSet
	w1, w3, w2 *Param
}

// NewMLP makes the layer of hidden width dff.
func NewMLP(name string, dff int, shape Shape) *MLP {
	l := &MLP{shape: shape, params: paramSet{prefix: name + "."}}
	d := shape.DModel
	l.w1 = l.params.linear("w1", 1, d, dff)
	l.w3 = l.params.linear("w3", 1, d, dff)
	l.w2 = l.params.linear("w2", OutScale(shape.NLayers), dff, d)
	return l
}

// Kind is "mlp".
func (l *MLP) Kind() string { return "mlp" }

// Params lists the layer's parameters.
func (l *MLP) Params() Params { return l.params.list }

// Forward builds y [b,t,d_model] with ops.SwiGLU: one node that runs the
// MLP by blocks of rows where this build's BLAS blocks the products (d_model
// 64), else Linear, GatedSiLU and Linear. It has no decoding state.
func (l *MLP) Forward(b *Builder, x *G.Node, _ *State) *G.Node {
	dims(b, x, "mlp", l.shape.DModel)
	return b.Must(ops.SwiGLU(x, b.Node(l.w1), b.Node(l.w3), b.Node(l.w2)))
}

// ForwardClosing builds the block's output x + Forward(b, h) with
// Residual.SwiGLU: the residual added in SwiGLU's blocks of rows, right
// after each block's down-projection (Closer).
func (l *MLP) ForwardClosing(b *Builder, h *G.Node, r *ops.Residual, _ *State) *G.Node {
	dims(b, h, "mlp", l.shape.DModel)
	return b.Must(r.SwiGLU(b.Node(l.w1), b.Node(l.w3), b.Node(l.w2)))
}

// forwardClosingPlus builds x + (Forward(b, h) + other) with
// Residual.SwiGLUPlus: other, then x, added in SwiGLU's blocks of rows
// (MoE-SEI's block, other its routed experts' output).
func (l *MLP) forwardClosingPlus(b *Builder, h *G.Node, r *ops.Residual, other *G.Node) *G.Node {
	dims(b, h, "mlp", l.shape.DModel)
	return b.Must(r.SwiGLUPlus(b.Node(l.w1), b.Node(l.w3), b.Node(l.w2), other))
}
