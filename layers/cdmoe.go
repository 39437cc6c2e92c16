package layers

import (
	"github.com/pkg/errors"
	G "gorgonia.org/gorgonia"

	"github.com/wonderful-matrices/wonderful-matrices-go/ops"
)

// CDMoEConfig configures cross-domain MoE (letter E).
type CDMoEConfig struct {
	// DFF is the width of the shared (cross-domain) MLP (default: the
	// SwiGLU default of d_model).
	DFF int `json:"d_ff,omitempty"`
	// Experts is the number of private experts, a perfect square (default 1024).
	Experts int `json:"experts,omitempty"`
	// Heads are the retrieval heads (default 4).
	Heads int `json:"heads,omitempty"`
	// TopK experts per head (default 8).
	TopK int `json:"top_k,omitempty"`
	// RetDim is the retrieval dimension, even (default 64).
	RetDim int `json:"ret_dim,omitempty"`
	// Act is "silu" (default), "relu" or "gelu".
	Act string `json:"act,omitempty"`
	// KeyInit initialises the product keys: "zeros" (default), as listing 8
	// of Wonderful Matrices does (torch.zeros; the keys learn through the
	// scores s, which reach the output), or "normal", N(0, 0.02) like the
	// other weights.
	KeyInit string `json:"key_init,omitempty"`
}

// The initialisations of CDMoEConfig.KeyInit.
const (
	KeyInitZeros  = "zeros"
	KeyInitNormal = "normal"
)

// Resolved fills in the defaults.
func (c CDMoEConfig) Resolved(dModel int) CDMoEConfig {
	if c.DFF == 0 {
		c.DFF = DefaultDFF(dModel)
	}
	if c.Experts == 0 {
		c.Experts = 1024
	}
	if c.Heads == 0 {
		c.Heads = 4
	}
	if c.TopK == 0 {
		c.TopK = 8
	}
	if c.RetDim == 0 {
		c.RetDim = 64
	}
	if c.Act == "" {
		c.Act = "silu"
	}
	if c.KeyInit == "" {
		c.KeyInit = KeyInitZeros
	}
	return c
}

// Validate checks a resolved config.
func (c CDMoEConfig) Validate(field string) error {
	nk, err := ops.ExpertKeys(c.Experts)
	switch {
	case c.DFF < 1:
		return errors.Errorf("%s.d_ff: must be >= 1, got %d", field, c.DFF)
	case err != nil:
		return errors.Errorf("%s.experts: %d is not a perfect square (product keys need nk² experts)", field, c.Experts)
	case c.Heads < 1:
		return errors.Errorf("%s.heads: must be >= 1, got %d", field, c.Heads)
	case c.TopK < 1 || c.TopK > nk:
		return errors.Errorf("%s.top_k: must be in [1, sqrt(experts) = %d], got %d", field, nk, c.TopK)
	case c.RetDim < 2 || c.RetDim%2 != 0:
		return errors.Errorf("%s.ret_dim: must be even and >= 2, got %d", field, c.RetDim)
	case c.Act != "silu" && c.Act != "relu" && c.Act != "gelu":
		return errors.Errorf("%s.act: %q is not one of [gelu relu silu]", field, c.Act)
	case c.KeyInit != KeyInitZeros && c.KeyInit != KeyInitNormal:
		return errors.Errorf("%s.key_init: %q is not one of [%s %s]", field, c.KeyInit, KeyInitNormal, KeyInitZeros)
	}
	return nil
}

// CDMoE is cross-domain mixture of experts (Wonderful Matrices §3.3, eq.
// 5–9, listing 8) as the op ops.CDMoE with its parameters: the shared MLP
// Wup, Wdown; the product-key query Wq and keys; the private experts Edown,
// Eup (one row of d_model each). Wdown and Eup are output projections.
type CDMoE struct {
	cfg                          CDMoEConfig
	shape                        Shape
	nk                           int
	params                       paramSet
	wup, wdown, wq, keys, ed, eu *Param
}

// NewCDMoE makes the layer; cfg must be resolved and valid.
func NewCDMoE(name string, cfg CDMoEConfig, shape Shape) *CDMoE {
	nk, _ := ops.ExpertKeys(cfg.Experts)
	d, out := shape.DModel, OutScale(shape.NLayers)
	l := &CDMoE{cfg: cfg, shape: shape, nk: nk, params: paramSet{prefix: name + "."}}
	ps := &l.params
	l.wup = ps.linear("w_up", 1, d, cfg.DFF)
	l.wdown = ps.linear("w_down", out, cfg.DFF, d)
	l.wq = ps.linear("queries", 1, d, cfg.Heads*cfg.RetDim)
	keyInit := constInit(0)
	if cfg.KeyInit == KeyInitNormal {
		keyInit = normalInit(InitStd)
	}
	l.keys = ps.add("keys", []int{cfg.Heads, nk, 2, cfg.RetDim / 2}, true, keyInit)
	l.ed = ps.add("down_embed", []int{cfg.Experts, d}, true, normalInit(InitStd))
	l.eu = ps.add("up_embed", []int{cfg.Experts, d}, true, normalInit(InitStd*out))
	return l
}

// Kind is "cdmoe".
func (l *CDMoE) Kind() string { return "cdmoe" }

// Params lists the layer's parameters.
func (l *CDMoE) Params() Params { return l.params.list }

// ActiveParams counts what one token uses: the shared MLP, the queries, the
// keys and heads·top_k private experts (two rows of d_model each).
func (l *CDMoE) ActiveParams() int64 {
	all := l.params.list.Count()
	experts := int64(2 * l.cfg.Experts * l.shape.DModel)
	return all - experts + int64(2*l.cfg.Heads*l.cfg.TopK*l.shape.DModel)
}

// Forward builds y [b,t,d_model]; it has no decoding state.
func (l *CDMoE) Forward(b *Builder, x *G.Node, _ *State) *G.Node {
	dims(b, x, "cdmoe", l.shape.DModel)
	in := l.inputs(b)
	in.X = x
	return b.Must(ops.CDMoE(in, l.opConfig()))
}

// ForwardClosing builds the block's output x + Forward(b, h) with
// Residual.CDMoE: the residual added to each block of tokens right after
// their experts (Closer).
func (l *CDMoE) ForwardClosing(b *Builder, h *G.Node, r *ops.Residual, _ *State) *G.Node {
	dims(b, h, "cdmoe", l.shape.DModel)
	return b.Must(r.CDMoE(l.inputs(b), l.opConfig()))
}

// inputs is the op's weights (X left to the caller).
func (l *CDMoE) inputs(b *Builder) ops.CDMoEInputs {
	return ops.CDMoEInputs{Wup: b.Node(l.wup), Wdown: b.Node(l.wdown), Wq: b.Node(l.wq),
		Keys: b.Node(l.keys), Edown: b.Node(l.ed), Eup: b.Node(l.eu)}
}

// opConfig is the op's shape of retrieval: heads, the experts each head
// keeps (top k) and the experts' activation (Wonderful Matrices §3.3).
func (l *CDMoE) opConfig() ops.CDMoEConfig {
	return ops.CDMoEConfig{Heads: l.cfg.Heads, K: l.cfg.TopK, Act: l.cfg.Act}
}
