package layers

import (
	"github.com/pkg/errors"
	G "gorgonia.org/gorgonia"

	"github.com/wonderful-matrices/wonderful-matrices-go/ops"
)

// AttentionConfig configures QCAtn (letter A). The zero value of a field
// means its default.
type AttentionConfig struct {
	// Heads of the queries (0: the model's heads); head dim d_model/heads.
	Heads int `json:"heads,omitempty"`
	// KVHeads of keys and values (0: Heads); must divide Heads (GQA).
	KVHeads int `json:"kv_heads,omitempty"`
	// NTK turns on dynamic NTK scaling of RoPE beyond the model's
	// max_position (CoCA Table 1's "RoFormer + dynamic NTK"); off by default.
	// When decoding, keys are cached after RoPE at the length they were seen,
	// so decoding past max_position differs from a full forward.
	NTK bool `json:"ntk,omitempty"`
}

// Resolved fills in the defaults.
func (c AttentionConfig) Resolved(modelHeads int) AttentionConfig {
	if c.Heads == 0 {
		c.Heads = modelHeads
	}
	if c.KVHeads == 0 {
		c.KVHeads = c.Heads
	}
	return c
}

// Validate checks a resolved config against d_model.
func (c AttentionConfig) Validate(field string, dModel int) error {
	switch {
	case c.Heads < 1 || dModel%c.Heads != 0:
		return errors.Errorf("%s.heads: %d does not divide d_model %d", field, c.Heads, dModel)
	case (dModel/c.Heads)%2 != 0:
		return errors.Errorf("%s.heads: RoPE needs an even head dim, d_model/heads = %d", field, dModel/c.Heads)
	case c.KVHeads < 1 || c.Heads%c.KVHeads != 0:
		return errors.Errorf("%s.kv_heads: %d does not divide heads %d", field, c.KVHeads, c.Heads)
	}
	return nil
}

// QCAtn is quadratic causal self-attention with RoPE on Q and K (Wonderful
// Matrices §3.1, listing 5; TransXSSM's unified RoPE), optional grouped-query
// heads, and optional log-n scaling of the queries (TransXSSM appendix A):
//
//	y = softmax(RoPE(x W_Q) RoPE(x W_K)ᵀ/√d + causal) (x W_V) W_O
type QCAtn struct {
	cfg            AttentionConfig
	shape          Shape
	rope           ops.RopeConfig
	lognTrainLen   int
	dh             int
	params         paramSet
	wq, wk, wv, wo *Param
}

// NewQCAtn makes the layer; cfg must be resolved and valid. lognTrainLen > 0
// turns on log-n scaling; rope's MaxPosition is used when cfg.NTK is on.
func NewQCAtn(name string, cfg AttentionConfig, shape Shape, rope ops.RopeConfig, lognTrainLen int) *QCAtn {
	d := shape.DModel
	if !cfg.NTK {
		rope.MaxPosition = 0
	}
	l := &QCAtn{cfg: cfg, shape: shape, rope: rope, lognTrainLen: lognTrainLen, dh: d / cfg.Heads, params: paramSet{prefix: name + "."}}
	ps := &l.params
	l.wq = ps.linear("q_proj", 1, d, cfg.Heads*l.dh)
	l.wk = ps.linear("k_proj", 1, d, cfg.KVHeads*l.dh)
	l.wv = ps.linear("v_proj", 1, d, cfg.KVHeads*l.dh)
	l.wo = ps.linear("o_proj", OutScale(shape.NLayers), cfg.Heads*l.dh, d)
	return l
}

// Kind is "qcatn".
func (l *QCAtn) Kind() string { return "qcatn" }

// Params lists the layer's parameters.
func (l *QCAtn) Params() Params { return l.params.list }

// Forward builds y [b,t,d_model]; when decoding, keys and values are cached.
func (l *QCAtn) Forward(b *Builder, x *G.Node, st *State) *G.Node {
	return linear(b, l.heads(b, x, st), l.wo)
}

// ForwardClosing builds the block's output x + Forward(b, h, st), the
// residual added by the output projection's op (ops.Residual.Linear;
// Closer).
func (l *QCAtn) ForwardClosing(b *Builder, h *G.Node, r *ops.Residual, st *State) *G.Node {
	return b.Must(r.Linear(l.heads(b, h, st), b.Node(l.wo)))
}

// heads is the attention's output [b,t,h·dh], the output projection's
// input.
func (l *QCAtn) heads(b *Builder, x *G.Node, st *State) *G.Node {
	bs, t := dims(b, x, "qcatn", l.shape.DModel)
	h, hk, dh := l.cfg.Heads, l.cfg.KVHeads, l.dh
	r := ropeAt(l.rope, st)
	q := b.Must(ops.Rope(b.Reshape(linear(b, x, l.wq), bs, t, h, dh), r))  // [b,t,h,dh]
	k := b.Must(ops.Rope(b.Reshape(linear(b, x, l.wk), bs, t, hk, dh), r)) // [b,t,hk,dh]
	v := b.Reshape(linear(b, x, l.wv), bs, t, hk, dh)
	k, v = appendCache(b, st, "k", k), appendCache(b, st, "v", v) // [b,tk,hk,dh]
	y := b.Must(ops.Attention(q, k, v, nil, ops.AttentionConfig{LogNTrainLen: l.lognTrainLen}))
	return b.Reshape(y, bs, t, h*dh)
}
