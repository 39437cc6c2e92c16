package graph

import "github.com/wonderful-matrices/wonderful-matrices-go/layers"

// S is SSD (SPEC §3, Wonderful Matrices listing 4) with its positional
// switches from config.ssd; RoPE rotates C and B (TransXSSM's unified RoPE).
func init() {
	RegisterSublayer(SublayerKind{
		Letter: 'S', Name: "SSD (variant from config)", Section: "ssd",
		Resolve:  func(c *Config) { c.SSD = c.SSD.Resolved(c.Heads) },
		Validate: func(c Config) error { return c.SSD.Validate("config.ssd", c.DModel) },
		New: func(name string, c Config, shape layers.Shape) (layers.Sublayer, error) {
			return layers.NewSSD(name, c.SSD, shape, c.Rope()), nil
		},
	})
}
