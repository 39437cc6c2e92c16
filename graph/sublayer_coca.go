package graph

import "github.com/wonderful-matrices/wonderful-matrices-go/layers"

// K is CoCA attention (CoCA eq. 10, slack form) with dynamic NTK from
// max_position when config.coca.ntk is on.
func init() {
	RegisterSublayer(SublayerKind{
		Letter: 'K', Name: "CoCA attention", Section: "coca",
		Resolve:  func(c *Config) { c.CoCA = c.CoCA.Resolved(c.Heads) },
		Validate: func(c Config) error { return c.CoCA.Validate("config.coca", c.DModel) },
		New: func(name string, c Config, shape layers.Shape) (layers.Sublayer, error) {
			r := c.Rope()
			r.MaxPosition = c.MaxPosition
			return layers.NewCoCA(name, c.CoCA, shape, r), nil
		},
	})
}
