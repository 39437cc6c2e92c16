package graph

import "github.com/wonderful-matrices/wonderful-matrices-go/layers"

// M is the SwiGLU MLP, (silu(x W1) ⊙ x W3) W2 (SPEC §3).
func init() {
	RegisterSublayer(SublayerKind{
		Letter: 'M', Name: "MLP (SwiGLU)", Section: "mlp",
		Resolve:  func(c *Config) { c.MLP = c.MLP.Resolved(c.DModel) },
		Validate: func(c Config) error { return c.MLP.Validate("config.mlp") },
		New: func(name string, c Config, shape layers.Shape) (layers.Sublayer, error) {
			return layers.NewMLP(name, c.MLP.DFF, shape), nil
		},
	})
}
