package graph_test

import (
	"fmt"

	"github.com/pkg/errors"
	G "gorgonia.org/gorgonia"

	"github.com/wonderful-matrices/wonderful-matrices-go/graph"
	"github.com/wonderful-matrices/wonderful-matrices-go/layers"
	"github.com/wonderful-matrices/wonderful-matrices-go/ops"
)

// DecayConfig is the config section "decay" of the example's sublayer.
type DecayConfig struct {
	// Rate of the leak, in (0, 1) (default 0.5).
	Rate float64 `json:"rate,omitempty"`
}

// Defaults fills the zero fields.
func (c *DecayConfig) Defaults(graph.Config) {
	if c.Rate == 0 {
		c.Rate = 0.5
	}
}

// Validate checks the rate.
func (c *DecayConfig) Validate(field string, _ graph.Config) error {
	if !(c.Rate > 0 && c.Rate < 1) {
		return errors.Errorf("%s.rate: must be in (0, 1), got %v", field, c.Rate)
	}
	return nil
}

// gate is the example's sublayer: y = rate · (x W).
type gate struct {
	rate float64
	w    *layers.Param
}

func (g *gate) Kind() string          { return "gate" }
func (g *gate) Params() layers.Params { return layers.Params{g.w} }
func (g *gate) Forward(b *layers.Builder, x *G.Node, _ *layers.State) *G.Node {
	return b.Must(G.Mul(b.Must(ops.Linear(x, b.Node(g.w))), b.Scalar(g.rate)))
}

// A sublayer of one's own, registered under a new letter from one's own
// package: the pattern language then reads it, its config section rides in
// the model's JSON with its defaults, and the model counts its parameters.
func ExampleRegisterSublayer() {
	graph.RegisterSublayer(graph.SublayerKind{
		Letter: 'D', Name: "scaled projection (example)", Section: "decay", Config: &DecayConfig{},
		New: func(name string, c graph.Config, shape layers.Shape) (layers.Sublayer, error) {
			var dc DecayConfig
			if err := c.DecodeSection("decay", &dc); err != nil {
				return nil, err
			}
			return &gate{rate: dc.Rate, w: layers.LinearWeight(name+".w", 1, shape.DModel, shape.DModel)}, nil
		},
	})
	m, err := graph.New(graph.Config{Pattern: "(DM)2", Vocab: 16, DModel: 8, Heads: 1})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(graph.FormatBreakdown(m.Breakdown()))
	fmt.Println(string(m.Config.Sections["decay"]))
	_, err = graph.ParseConfig([]byte(`{"pattern": "DM", "vocab": 16, "d_model": 8, "heads": 1, "decay": {"rate": 2}}`))
	fmt.Println(err)
	// Output:
	// | kind | layers | parameters | active per token |
	// |---|---:|---:|---:|
	// | embedding | 1 | 128 | 128 |
	// | gate | 2 | 128 | 128 |
	// | mlp | 2 | 1152 | 1152 |
	// | rmsnorm | 5 | 40 | 40 |
	// | lm_head | 1 | 128 | 128 |
	// | **total** | | 1576 | 1576 |
	//
	// {"rate":0.5}
	// config.decay.rate: must be in (0, 1), got 2
}
