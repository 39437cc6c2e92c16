package graph

import "github.com/wonderful-matrices/wonderful-matrices-go/layers"

// B is the Mamba2 block of the Mamba2 and Jamba baselines (SPEC §3).
func init() {
	RegisterSublayer(SublayerKind{
		Letter: 'B', Name: "Mamba2 block", Section: "mamba2",
		Resolve:  func(c *Config) { c.Mamba2 = c.Mamba2.Resolved(c.Heads) },
		Validate: func(c Config) error { return c.Mamba2.Validate("config.mamba2", c.DModel) },
		New: func(name string, c Config, shape layers.Shape) (layers.Sublayer, error) {
			return layers.NewMamba2(name, c.Mamba2, shape), nil
		},
	})
}
