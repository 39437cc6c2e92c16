package graph

import "github.com/wonderful-matrices/wonderful-matrices-go/layers"

// R is the routed MoE (softmax router, top-k of gated-MLP experts,
// load-balancing loss); H is MoE-SEI, the same with shared experts always
// on (DeepSeek-MoE). Both read config.moe.
func init() {
	resolve := func(c *Config) { c.MoE = c.MoE.Resolved(c.DModel) }
	validate := func(c Config) error { return c.MoE.Validate("config.moe") }
	RegisterSublayer(SublayerKind{
		Letter: 'R', Name: "routed MoE", Section: "moe", Resolve: resolve, Validate: validate,
		New: func(name string, c Config, shape layers.Shape) (layers.Sublayer, error) {
			return layers.NewMoE(name, c.MoE, shape), nil
		},
	})
	RegisterSublayer(SublayerKind{
		Letter: 'H', Name: "MoE-SEI", Section: "moe", Resolve: resolve, Validate: validate,
		New: func(name string, c Config, shape layers.Shape) (layers.Sublayer, error) {
			return layers.NewMoESEI(name, c.MoE, shape), nil
		},
	})
}
