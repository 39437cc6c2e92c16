package graph

import "github.com/wonderful-matrices/wonderful-matrices-go/layers"

// I is inner-function attention with the dynamic mask of config.ifa
// (Wonderful Matrices eq. 3–4, listings 6–7).
func init() {
	RegisterSublayer(SublayerKind{
		Letter: 'I', Name: "InnerFuncAttn (dynamic mask from config)", Section: "ifa",
		Resolve:  func(c *Config) { c.IFA = c.IFA.Resolved(c.Heads) },
		Validate: func(c Config) error { return c.IFA.Validate("config.ifa", c.DModel) },
		New: func(name string, c Config, shape layers.Shape) (layers.Sublayer, error) {
			return layers.NewInnerFuncAttn(name, c.IFA, shape, c.Rope(), c.MaxPosition, c.LogNTrainLen), nil
		},
	})
}
