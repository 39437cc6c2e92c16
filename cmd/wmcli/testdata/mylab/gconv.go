package mylab

import (
	"github.com/pkg/errors"
	G "gorgonia.org/gorgonia"

	"github.com/wonderful-matrices/wonderful-matrices-go/graph"
	"github.com/wonderful-matrices/wonderful-matrices-go/layers"
	"github.com/wonderful-matrices/wonderful-matrices-go/ops"
)

// GConvConfig is the config section "gconv" of the lab's mixer.
type GConvConfig struct {
	// Kernel is the causal convolution's width (default 4).
	Kernel int `json:"kernel,omitempty"`
	// Expand multiplies d_model into the inner width (default 2).
	Expand int `json:"expand,omitempty"`
}

// Defaults fills the zero fields.
func (c *GConvConfig) Defaults(graph.Config) {
	if c.Kernel == 0 {
		c.Kernel = 4
	}
	if c.Expand == 0 {
		c.Expand = 2
	}
}

// Validate checks the sizes.
func (c *GConvConfig) Validate(field string, _ graph.Config) error {
	if c.Kernel < 1 || c.Expand < 1 {
		return errors.Errorf("%s: kernel %d and expand %d must be >= 1", field, c.Kernel, c.Expand)
	}
	return nil
}

// GConv is a gated depthwise-convolution mixer (H3 / Hyena's short
// convolution with a multiplicative gate): u = x W_in, g = x W_gate,
// y = (conv_causal(u) ⊙ silu(g)) W_out. It mixes each channel over the last
// Kernel tokens only: a mixer with a fixed, tiny state.
type GConv struct {
	d, inner             int
	win, wgate, conv, wo *layers.Param
}

// NewGConv makes the layer for a model of shape.
func NewGConv(name string, c GConvConfig, shape layers.Shape) *GConv {
	d, n := shape.DModel, c.Expand*shape.DModel
	return &GConv{d: d, inner: n,
		win:   layers.LinearWeight(name+".in_proj", 1, d, n),
		wgate: layers.LinearWeight(name+".gate_proj", 1, d, n),
		conv:  layers.NewParam(name+".conv", true, layers.Normal(0.3), n, c.Kernel),
		wo:    layers.LinearWeight(name+".out_proj", layers.OutScale(shape.NLayers), n, d),
	}
}

// Kind is "gconv".
func (l *GConv) Kind() string { return "gconv" }

// Params are the projections and the convolution's weights.
func (l *GConv) Params() layers.Params { return layers.Params{l.win, l.wgate, l.conv, l.wo} }

// Forward builds y [b,t,d]; decoding from a state is not supported.
func (l *GConv) Forward(b *layers.Builder, x *G.Node, st *layers.State) *G.Node {
	if st != nil {
		b.Fail("gconv: decoding token by token is not supported by this lab's mixer")
	}
	u := b.Must(ops.Linear(x, b.Node(l.win)))
	g := b.Must(ops.Linear(x, b.Node(l.wgate)))
	c := b.Must(ops.Conv1DCausal(u, b.Node(l.conv), nil))
	return b.Must(ops.Linear(b.Must(ops.GatedSiLU(c, g)), b.Node(l.wo)))
}

// G is the lab's letter: the framework's pattern language now reads
// "(GM)2" as two gated-convolution + MLP pairs.
func init() {
	graph.RegisterSublayer(graph.SublayerKind{
		Letter: 'G', Name: "gated depthwise convolution (my lab)", Section: "gconv", Config: &GConvConfig{},
		New: func(name string, c graph.Config, shape layers.Shape) (layers.Sublayer, error) {
			var gc GConvConfig
			if err := c.DecodeSection("gconv", &gc); err != nil {
				return nil, err
			}
			return NewGConv(name, gc, shape), nil
		},
	})
}
