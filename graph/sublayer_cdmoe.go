package graph

import "github.com/wonderful-matrices/wonderful-matrices-go/layers"

// LetterCDMoE is CDMoE's letter; CDMoERatio counts it.
const LetterCDMoE = 'E'

// E is cross-domain MoE (Wonderful Matrices §3.3, listing 8).
func init() {
	RegisterSublayer(SublayerKind{
		Letter: LetterCDMoE, Name: "CDMoE", Section: "cdmoe",
		Resolve:  func(c *Config) { c.CDMoE = c.CDMoE.Resolved(c.DModel) },
		Validate: func(c Config) error { return c.CDMoE.Validate("config.cdmoe") },
		New: func(name string, c Config, shape layers.Shape) (layers.Sublayer, error) {
			return layers.NewCDMoE(name, c.CDMoE, shape), nil
		},
	})
}
