package layers

import (
	"github.com/pkg/errors"
	G "gorgonia.org/gorgonia"

	"github.com/wonderful-matrices/wonderful-matrices-go/ops"
)

// MoEConfig configures the routed MoE (letter R) and MoE-SEI (letter H).
type MoEConfig struct {
	// Experts is the number of routed experts (default 8).
	Experts int `json:"experts,omitempty"`
	// TopK routed experts per token (default 2).
	TopK int `json:"top_k,omitempty"`
	// DFF is the width of one expert (default: the SwiGLU default of
	// d_model divided by TopK, so that the active FFN matches an MLP).
	DFF int `json:"d_ff,omitempty"`
	// Shared is the number of always-on experts of MoE-SEI (default 1); the
	// routed MoE ignores it.
	Shared int `json:"shared,omitempty"`
	// BalanceCoef weighs the load-balancing loss (default 0.01; a negative
	// value turns it off).
	BalanceCoef float64 `json:"balance_coef,omitempty"`
}

// Resolved fills in the defaults.
func (c MoEConfig) Resolved(dModel int) MoEConfig {
	if c.Experts == 0 {
		c.Experts = 8
	}
	if c.TopK == 0 {
		c.TopK = 2
	}
	if c.DFF == 0 {
		c.DFF = (DefaultDFF(dModel)/c.TopK + 7) / 8 * 8
	}
	if c.Shared == 0 {
		c.Shared = 1
	}
	if c.BalanceCoef == 0 {
		c.BalanceCoef = 0.01
	}
	return c
}

// Validate checks a resolved config.
func (c MoEConfig) Validate(field string) error {
	switch {
	case c.Experts < 1:
		return errors.Errorf("%s.experts: must be >= 1, got %d", field, c.Experts)
	case c.TopK < 1 || c.TopK > c.Experts:
		return errors.Errorf("%s.top_k: must be in [1, experts = %d], got %d", field, c.Experts, c.TopK)
	case c.DFF < 1:
		return errors.Errorf("%s.d_ff: must be >= 1, got %d", field, c.DFF)
	case c.Shared < 0:
		return errors.Errorf("%s.shared: must be >= 0, got %d", field, c.Shared)
	}
	return nil
}

// MoE is the routed mixture of SwiGLU experts (SPEC §3; DeepSeekMoE eq.
// 3–5): gates = TopKGates(x W_router), y = Σ gates·expert(x), with the
// load-balancing loss (LoadBalanceLoss, weighted by BalanceCoef; both from
// one ops.Router) added to the model's loss. With shared > 0 it is MoE-SEI,
// shared expert isolation: `shared` experts, one SwiGLU of width
// shared·d_ff, are always on.
type MoE struct {
	cfg        MoEConfig
	shape      Shape
	shared     int
	params     paramSet
	router     *Param
	w1, w3, w2 *Param
	sharedMLP  *MLP
}

// NewMoE makes the routed MoE (letter R); cfg must be resolved and valid.
func NewMoE(name string, cfg MoEConfig, shape Shape) *MoE { return newMoE(name, cfg, shape, 0) }

// NewMoESEI makes MoE-SEI (letter H) with cfg.Shared always-on experts.
func NewMoESEI(name string, cfg MoEConfig, shape Shape) *MoE {
	return newMoE(name, cfg, shape, cfg.Shared)
}

func newMoE(name string, cfg MoEConfig, shape Shape, shared int) *MoE {
	d, n, f := shape.DModel, cfg.Experts, cfg.DFF
	l := &MoE{cfg: cfg, shape: shape, shared: shared, params: paramSet{prefix: name + "."}}
	ps := &l.params
	l.router = ps.linear("router", 1, d, n)
	l.w1 = ps.add("w1", []int{n, d, f}, true, normalInit(InitStd))
	l.w3 = ps.add("w3", []int{n, d, f}, true, normalInit(InitStd))
	l.w2 = ps.add("w2", []int{n, f, d}, true, normalInit(InitStd*OutScale(shape.NLayers)))
	if shared > 0 {
		l.sharedMLP = NewMLP(name+".shared", shared*f, shape)
		l.params.list = append(l.params.list, l.sharedMLP.Params()...)
	}
	return l
}

// Kind is "moe" or "moe-sei".
func (l *MoE) Kind() string {
	if l.shared > 0 {
		return "moe-sei"
	}
	return "moe"
}

// Params lists the layer's parameters.
func (l *MoE) Params() Params { return l.params.list }

// ActiveParams counts the router, top_k routed experts and the shared ones.
func (l *MoE) ActiveParams() int64 {
	expert := int64(3 * l.shape.DModel * l.cfg.DFF)
	return l.params.list.Count() - int64(l.cfg.Experts-l.cfg.TopK)*expert
}

// Forward builds y [b,t,d_model] and registers the weighted balance loss.
func (l *MoE) Forward(b *Builder, x *G.Node, st *State) *G.Node {
	gates, loss := l.route(b, x, st)
	y := b.Must(ops.MoEExperts(x, gates, b.Node(l.w1), b.Node(l.w3), b.Node(l.w2)))
	l.addBalanceLoss(b, loss)
	if l.sharedMLP != nil {
		y = b.Add(y, l.sharedMLP.Forward(b, x, st))
	}
	return y
}

// ForwardClosing builds the block's output x + Forward(b, h, st) (Closer).
// The routed MoE's experts add the residual in their combine
// (ops.Residual.MoEExperts). MoE-SEI's shared experts close its block,
// x + (shared + routed), adding the routed experts' output and then x to
// each block of rows (ops.Residual.SwiGLUPlus): the values of x + (routed
// + shared) to the bit, its nodes built in Forward's order.
func (l *MoE) ForwardClosing(b *Builder, h *G.Node, r *ops.Residual, st *State) *G.Node {
	gates, loss := l.route(b, h, st)
	if l.sharedMLP != nil {
		routed := b.Must(ops.MoEExperts(h, gates, b.Node(l.w1), b.Node(l.w3), b.Node(l.w2)))
		l.addBalanceLoss(b, loss)
		return l.sharedMLP.forwardClosingPlus(b, h, r, routed)
	}
	y := b.Must(r.MoEExperts(gates, b.Node(l.w1), b.Node(l.w3), b.Node(l.w2)))
	l.addBalanceLoss(b, loss)
	return y
}

// route is the gates of x's tokens [b,t,N] and, when the layer trains with
// a balance loss, that loss (else nil), from one routing.
func (l *MoE) route(b *Builder, x *G.Node, st *State) (gates, loss *G.Node) {
	dims(b, x, l.Kind(), l.shape.DModel)
	logits := linear(b, x, l.router) // [b,t,N]
	withLoss := l.cfg.BalanceCoef > 0 && st == nil
	gates, loss, err := ops.Router(logits, l.cfg.TopK, withLoss)
	b.Must(gates, err)
	return gates, loss
}

// addBalanceLoss registers the balance loss weighted by its coefficient
// (DeepSeekMoE eq. 12), when there is one.
func (l *MoE) addBalanceLoss(b *Builder, loss *G.Node) {
	if loss != nil {
		b.AddAux(b.Must(G.Mul(b.Scalar(l.cfg.BalanceCoef), loss)))
	}
}
