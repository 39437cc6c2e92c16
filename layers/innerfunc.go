package layers

import (
	"github.com/pkg/errors"
	G "gorgonia.org/gorgonia"

	"github.com/wonderful-matrices/wonderful-matrices-go/ops"
)

// InnerFuncConfig configures InnerFuncAttn (letter I). The zero value of a
// field means its default.
type InnerFuncConfig struct {
	// Heads (0: the model's heads); head dim d_model/heads.
	Heads int `json:"heads,omitempty"`
	// Mask is the dynamic mask: "paper" (the default: eq. 4, l [h,
	// max_position]), "doge" (input-dependent bias) or "none" (Table 1
	// without DM).
	Mask ops.MaskKind `json:"dynamic_mask,omitempty"`
	// Values is n_innerV, the inner values to retrieve from (default 64).
	Values int `json:"inner_values,omitempty"`
	// RetDim is d_innerV_ret (default 32).
	RetDim int `json:"ret_dim,omitempty"`
	// TopK inner values per token (default 1, as listing 7).
	TopK int `json:"top_k,omitempty"`
}

// Resolved fills in the defaults.
func (c InnerFuncConfig) Resolved(modelHeads int) InnerFuncConfig {
	if c.Heads == 0 {
		c.Heads = modelHeads
	}
	if c.Mask == "" {
		c.Mask = ops.MaskPaper
	}
	if c.Values == 0 {
		c.Values = 64
	}
	if c.RetDim == 0 {
		c.RetDim = 32
	}
	if c.TopK == 0 {
		c.TopK = 1
	}
	return c
}

// Validate checks a resolved config against d_model.
func (c InnerFuncConfig) Validate(field string, dModel int) error {
	switch {
	case c.Heads < 1 || dModel%c.Heads != 0:
		return errors.Errorf("%s.heads: %d does not divide d_model %d", field, c.Heads, dModel)
	case (dModel/c.Heads)%2 != 0:
		return errors.Errorf("%s.heads: RoPE needs an even head dim, d_model/heads = %d", field, dModel/c.Heads)
	case c.Mask != ops.MaskNone && c.Mask != ops.MaskPaper && c.Mask != ops.MaskDoge:
		return errors.Errorf("%s.dynamic_mask: %q is not one of %v", field, c.Mask, ops.MaskKinds)
	case c.Values < 1:
		return errors.Errorf("%s.inner_values: must be >= 1, got %d", field, c.Values)
	case c.RetDim < 1:
		return errors.Errorf("%s.ret_dim: must be >= 1, got %d", field, c.RetDim)
	case c.TopK < 1 || c.TopK > c.Values:
		return errors.Errorf("%s.top_k: must be in [1, inner_values = %d], got %d", field, c.Values, c.TopK)
	}
	return nil
}

// InnerFuncAttn is inner-function attention with the dynamic mask
// (Wonderful Matrices §3.2, eq. 3–4, listing 7): RoPE'd Q and K, values from
// the inner function V = x ⊙ Σ_topk E (ops.InnerFuncValue) split into heads,
// then causal attention with the mask, then O.
//
// Initialisation: listing 7 sets V_keys to zeros, which with a
// non-differentiable top-k makes every token retrieve value 0 forever; the
// keys are drawn from N(0, 0.02) instead. V_embed keeps listing 7's
// nn.Embedding default N(0, 1), so V starts at the scale of x.
type InnerFuncAttn struct {
	cfg              InnerFuncConfig
	shape            Shape
	rope             ops.RopeConfig
	maxPosition      int
	lognTrainLen     int
	dh               int
	params           paramSet
	wq, wk, wo       *Param
	vq, vk, ve       *Param
	mask, wdt, maskA *Param
}

// NewInnerFuncAttn makes the layer; cfg must be resolved and valid.
// maxPosition sizes the paper mask and bounds the sequence length.
func NewInnerFuncAttn(name string, cfg InnerFuncConfig, shape Shape, rope ops.RopeConfig, maxPosition, lognTrainLen int) *InnerFuncAttn {
	d := shape.DModel
	l := &InnerFuncAttn{cfg: cfg, shape: shape, rope: rope, maxPosition: maxPosition, lognTrainLen: lognTrainLen,
		dh: d / cfg.Heads, params: paramSet{prefix: name + "."}}
	ps := &l.params
	l.wq = ps.linear("q_proj", 1, d, d)
	l.wk = ps.linear("k_proj", 1, d, d)
	l.vq = ps.linear("v_queries", 1, d, cfg.RetDim)
	l.vk = ps.add("v_keys", []int{cfg.Values, cfg.RetDim}, true, normalInit(InitStd))
	l.ve = ps.add("v_embed", []int{cfg.Values, d}, true, normalInit(1))
	switch cfg.Mask {
	case ops.MaskPaper:
		l.mask = ps.add("dynamic_mask", []int{cfg.Heads, maxPosition}, false, constInit(1))
	case ops.MaskDoge:
		l.wdt = ps.linear("dt_proj", 1, d, cfg.Heads)
		l.maskA = ps.add("A", []int{cfg.Heads}, false, constInit(0))
	}
	l.wo = ps.linear("o_proj", OutScale(shape.NLayers), d, d)
	return l
}

// Kind names the layer and its mask, e.g. "ifa(dm=paper)".
func (l *InnerFuncAttn) Kind() string { return "ifa(dm=" + string(l.cfg.Mask) + ")" }

// Params lists the layer's parameters.
func (l *InnerFuncAttn) Params() Params { return l.params.list }

// Forward builds y [b,t,d_model]; when decoding, keys, inner values and the
// doge bias are cached.
func (l *InnerFuncAttn) Forward(b *Builder, x *G.Node, st *State) *G.Node {
	return linear(b, l.heads(b, x, st), l.wo)
}

// ForwardClosing builds the block's output x + Forward(b, h, st), the
// residual added by the output projection's op (ops.Residual.Linear;
// Closer).
func (l *InnerFuncAttn) ForwardClosing(b *Builder, h *G.Node, r *ops.Residual, st *State) *G.Node {
	return b.Must(r.Linear(l.heads(b, h, st), b.Node(l.wo)))
}

// heads is the attention's output [b,t,d_model] over the inner-function
// values, the output projection's input.
func (l *InnerFuncAttn) heads(b *Builder, x *G.Node, st *State) *G.Node {
	d := l.shape.DModel
	bs, t := dims(b, x, l.Kind(), d)
	h, dh := l.cfg.Heads, l.dh
	r := ropeAt(l.rope, st)
	q := b.Must(ops.Rope(b.Reshape(linear(b, x, l.wq), bs, t, h, dh), r))
	k := b.Must(ops.Rope(b.Reshape(linear(b, x, l.wk), bs, t, h, dh), r))
	V := b.Must(ops.InnerFuncValue(x, b.Node(l.vq), b.Node(l.vk), b.Node(l.ve), l.cfg.TopK)) // [b,t,d]
	var mask *G.Node
	switch l.cfg.Mask {
	case ops.MaskPaper:
		tk := t
		if st != nil {
			tk += st.Pos
		}
		if tk > l.maxPosition {
			b.Fail("%s: sequence length %d exceeds max_position %d, the size of the dynamic mask", l.Kind(), tk, l.maxPosition)
		}
		mask = b.Node(l.mask)
	case ops.MaskDoge:
		dt := linear(b, V, l.wdt) // [b,t,h]
		mask = appendCache(b, st, "doge_bias", b.Must(ops.DogeBias(dt, b.Node(l.maskA))))
	}
	k = appendCache(b, st, "k", k)
	v := appendCache(b, st, "v", b.Reshape(V, bs, t, h, dh))
	y := b.Must(ops.Attention(q, k, v, mask, ops.AttentionConfig{Mask: l.cfg.Mask, LogNTrainLen: l.lognTrainLen}))
	return b.Reshape(y, bs, t, d)
}
