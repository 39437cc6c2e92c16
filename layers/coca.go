package layers

import (
	"github.com/pkg/errors"
	G "gorgonia.org/gorgonia"

	"github.com/wonderful-matrices/wonderful-matrices-go/ops"
)

// CoCAConfig configures CoCA attention (letter K).
type CoCAConfig struct {
	// Heads (0: the model's heads); head dim d_model/heads, even.
	Heads int `json:"heads,omitempty"`
	// NTK turns on dynamic NTK scaling of RoPE beyond the model's
	// max_position (CoCA Table 1's "CoCA + dynamic NTK"); on by default.
	NTK *bool `json:"ntk,omitempty"`
}

// Resolved fills in the defaults.
func (c CoCAConfig) Resolved(modelHeads int) CoCAConfig {
	if c.Heads == 0 {
		c.Heads = modelHeads
	}
	if c.NTK == nil {
		on := true
		c.NTK = &on
	}
	return c
}

// Validate checks a resolved config against d_model.
func (c CoCAConfig) Validate(field string, dModel int) error {
	if c.Heads < 1 || dModel%c.Heads != 0 {
		return errors.Errorf("%s.heads: %d does not divide d_model %d", field, c.Heads, dModel)
	}
	if (dModel/c.Heads)%2 != 0 {
		return errors.Errorf("%s.heads: CoCA needs an even head dim, d_model/heads = %d", field, dModel/c.Heads)
	}
	return nil
}

// CoCA is collinear constrained attention (CoCA eq. 10, slack form): Q and
// V projections, a T projection of half a head per head whose ReLU is
// duplicated so that paired dims are collinear, RoPE with dynamic NTK:
//
//	s = CocaScores(x W_Q, x W_T);  y = CausalSoftmax(s) (x W_V) W_O
//
// Decoding caches T (before RoPE: the op rotates every key at the current
// length, so the NTK base of the cache is always the current one) and V.
// Dynamic NTK changes the base of every position once the length passes
// max_position, so decoding beyond it differs from a full forward of the
// final length, as it does in every dynamic-NTK implementation.
type CoCA struct {
	cfg            CoCAConfig
	shape          Shape
	rope           ops.RopeConfig
	dh             int
	params         paramSet
	wq, wt, wv, wo *Param
}

// NewCoCA makes the layer; cfg must be resolved and valid. rope's
// MaxPosition is used when cfg.NTK is on.
func NewCoCA(name string, cfg CoCAConfig, shape Shape, rope ops.RopeConfig) *CoCA {
	d := shape.DModel
	if !*cfg.NTK {
		rope.MaxPosition = 0
	}
	l := &CoCA{cfg: cfg, shape: shape, rope: rope, dh: d / cfg.Heads, params: paramSet{prefix: name + "."}}
	ps := &l.params
	l.wq = ps.linear("q_proj", 1, d, d)
	l.wt = ps.linear("t_proj", 1, d, d/2)
	l.wv = ps.linear("v_proj", 1, d, d)
	l.wo = ps.linear("o_proj", OutScale(shape.NLayers), d, d)
	return l
}

// Kind is "coca".
func (l *CoCA) Kind() string { return "coca" }

// Params lists the layer's parameters.
func (l *CoCA) Params() Params { return l.params.list }

// Forward builds y [b,t,d_model].
func (l *CoCA) Forward(b *Builder, x *G.Node, st *State) *G.Node {
	return linear(b, l.heads(b, x, st), l.wo)
}

// ForwardClosing builds the block's output x + Forward(b, h, st), the
// residual added by the output projection's op (ops.Residual.Linear;
// Closer).
func (l *CoCA) ForwardClosing(b *Builder, h *G.Node, r *ops.Residual, st *State) *G.Node {
	return b.Must(r.Linear(l.heads(b, h, st), b.Node(l.wo)))
}

// heads is the attention's output [b,t,d_model], the output projection's
// input.
func (l *CoCA) heads(b *Builder, x *G.Node, st *State) *G.Node {
	d := l.shape.DModel
	bs, t := dims(b, x, "coca", d)
	h, dh := l.cfg.Heads, l.dh
	q := b.Reshape(linear(b, x, l.wq), bs, t, h, dh)
	T := appendCache(b, st, "t", b.Reshape(linear(b, x, l.wt), bs, t, h, dh/2))
	v := appendCache(b, st, "v", b.Reshape(linear(b, x, l.wv), bs, t, h, dh))
	s := b.Must(ops.CocaScores(q, T, l.rope))                        // [b,h,t,tk]
	y := b.Must(ops.WeightedValues(b.Must(ops.CausalSoftmax(s)), v)) // [b,t,h,dh]
	return b.Reshape(y, bs, t, d)
}
