package wmcli

import (
	"flag"
	"os"

	"github.com/pkg/errors"

	"github.com/wonderful-matrices/wonderful-matrices-go/graph"
	"github.com/wonderful-matrices/wonderful-matrices-go/ops"
)

// modelFlags registers the flags that describe a model on fs and returns a
// function that builds the validated config once fs has parsed. A --config
// file gives the starting point; flags the user set override it.
func modelFlags(fs *flag.FlagSet) func() (graph.Config, error) {
	var (
		configPath = fs.String("config", "", "model config JSON file (flags below override it)")
		arch       = fs.String("arch", "", "named architecture: cheems, transxssm, llama, mamba2, jamba, doge")
		pattern    = fs.String("pattern", "", `stack in the pattern language, e.g. "(SE)7 IE"`)
		nBlocks    = fs.Int("n-blocks", 1, "repeats of the pattern")
		vocab      = fs.Int("vocab", 260, "vocabulary size (bytes + specials by default)")
		dModel     = fs.Int("d-model", 256, "residual width")
		heads      = fs.Int("heads", 4, "heads of every mixer")
		maxPos     = fs.Int("max-position", 2048, "dynamic-mask size and NTK threshold")
		variant    = fs.String("ssd-variant", "rope", "SSD positional variant: rope, conv1d+D, a_t")
		dState     = fs.Int("d-state", 16, "SSD and Mamba2 state size")
		dff        = fs.Int("d-ff", 0, "MLP width (0: 8/3·d_model)")
		experts    = fs.Int("experts", 1024, "CDMoE private experts (a square)")
		moeExperts = fs.Int("moe-experts", 0, "routed MoE experts (0: 8, or 4 for llama/mamba2/jamba)")
		mask       = fs.String("dynamic-mask", "paper", "InnerFuncAttn mask: paper, doge, none")
		dogeE      = fs.Int("doge-cdmoe", 3, "CDMoE sublayers after doge's IFA")
	)
	return func() (graph.Config, error) {
		var c graph.Config
		if *configPath != "" {
			data, err := os.ReadFile(*configPath)
			if err != nil {
				return c, errors.Wrap(err, "--config")
			}
			if c, err = graph.ParseConfig(data); err != nil {
				return c, errors.Wrapf(err, "--config %s", *configPath)
			}
		}
		apply := func(name string, fn func()) {
			if *configPath == "" || flagSet(fs, name) {
				fn()
			}
		}
		apply("arch", func() { c.Arch = *arch })
		apply("pattern", func() { c.Pattern = *pattern })
		apply("n-blocks", func() { c.NBlocks = *nBlocks })
		apply("vocab", func() { c.Vocab = *vocab })
		apply("d-model", func() { c.DModel = *dModel })
		apply("heads", func() { c.Heads = *heads })
		apply("max-position", func() { c.MaxPosition = *maxPos })
		apply("ssd-variant", func() { c.SSD.Variant = *variant })
		apply("d-state", func() { c.SSD.DState, c.Mamba2.DState = *dState, *dState })
		apply("d-ff", func() { c.MLP.DFF = *dff })
		apply("experts", func() { c.CDMoE.Experts = *experts })
		apply("moe-experts", func() { c.MoE.Experts = *moeExperts })
		apply("dynamic-mask", func() { c.IFA.Mask = ops.MaskKind(*mask) })
		apply("doge-cdmoe", func() { c.DogeCDMoE = *dogeE })
		if c.Arch != "" && flagSet(fs, "pattern") && !flagSet(fs, "arch") {
			c.Arch = ""
		}
		if err := c.Validate(); err != nil {
			return c, err
		}
		return c.Resolved(), nil
	}
}

// flagSet reports whether the user set the flag.
func flagSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}
