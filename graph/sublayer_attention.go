package graph

import "github.com/wonderful-matrices/wonderful-matrices-go/layers"

// A is QCAtn with RoPE (SPEC §3); dynamic NTK starts at max_position, and
// log-n scaling applies when logn_train_len is set.
func init() {
	RegisterSublayer(SublayerKind{
		Letter: 'A', Name: "QCAtn with RoPE", Section: "attention",
		Resolve:  func(c *Config) { c.Attention = c.Attention.Resolved(c.Heads) },
		Validate: func(c Config) error { return c.Attention.Validate("config.attention", c.DModel) },
		New: func(name string, c Config, shape layers.Shape) (layers.Sublayer, error) {
			r := c.Rope()
			r.MaxPosition = c.MaxPosition
			return layers.NewQCAtn(name, c.Attention, shape, r, c.LogNTrainLen), nil
		},
	})
}
