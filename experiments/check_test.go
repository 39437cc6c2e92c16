package experiments_test

import (
	"strings"
	"testing"

	"github.com/wonderful-matrices/wonderful-matrices-go/experiments"
	"github.com/wonderful-matrices/wonderful-matrices-go/experiments/data"
	"github.com/wonderful-matrices/wonderful-matrices-go/graph"
)

// A definition whose columns or plots name keys its arms lack is refused
// at Register, with the valid keys in the message; the registered ones pass.
func TestRegisterRefusesUnknownKeys(t *testing.T) {
	base := func() *experiments.Definition {
		return &experiments.Definition{
			Name: "check-me", Version: 1, Title: "t", Reference: "r",
			Arms: func(string) ([]experiments.Arm, error) {
				return []experiments.Arm{{
					Name: "a", Task: experiments.TaskLM, Labels: []experiments.Label{{Key: "size", Value: "1"}},
					Model: graph.Config{Pattern: "AM", Vocab: data.ByteVocab, DModel: 16, Heads: 2},
					Paper: map[string]float64{"ppl": 8},
				}}, nil
			},
			Columns: []experiments.Column{{Title: "val ppl", Key: "val_ppl", Paper: "ppl"}},
			Plots:   []experiments.Plot{{Kind: experiments.PlotBars, File: "bars", Key: "val_ppl", PaperKey: "ppl"}},
		}
	}
	if err := base().Check(); err != nil {
		t.Fatalf("a valid definition is refused: %v", err)
	}
	cases := []struct {
		name string
		edit func(d *experiments.Definition)
		want []string
	}{
		{"column key", func(d *experiments.Definition) { d.Columns[0].Key = "valppl" }, []string{`column 1 ("val ppl"): Key "valppl"`, "val_ppl", "tokens_per_s"}},
		{"paper key", func(d *experiments.Definition) { d.Columns[0].Paper = "perplexity" }, []string{`Paper "perplexity"`, "the keys are: ppl"}},
		{"task measure", func(d *experiments.Definition) { d.Columns[0].Key = "accuracy" }, []string{`Key "accuracy"`}},
		{"plot kind", func(d *experiments.Definition) { d.Plots[0].Kind = 9 }, []string{"Kind 9 is not a plot kind", "PlotBars", "PlotCurves", "PlotLabelLines", "PlotMeasureLines"}},
		{"bar key", func(d *experiments.Definition) { d.Plots[0].Key = "ppl" }, []string{`plot 1 ("bars"): Key "ppl"`}},
		{"prefix", func(d *experiments.Definition) {
			d.Plots[0] = experiments.Plot{Kind: experiments.PlotMeasureLines, File: "m", Prefix: "ppl"}
		}, []string{`Prefix "ppl"`, "the prefixes are: (none)"}},
		{"label", func(d *experiments.Definition) {
			d.Plots[0] = experiments.Plot{Kind: experiments.PlotLabelLines, File: "l", X: "size", Series: "sise", Y: "val_ppl"}
		}, []string{`Series "sise" is no label`, "the labels are: size"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := base()
			c.edit(d)
			err := d.Check()
			if err == nil {
				t.Fatal("accepted")
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
			defer func() {
				if r := recover(); r == nil || !strings.Contains(r.(string), c.want[0]) {
					t.Errorf("Register did not panic with the error (recovered %v)", r)
				}
				if _, err := experiments.Lookup("check-me"); err == nil {
					t.Error("the refused definition was registered")
				}
			}()
			experiments.Register(d)
		})
	}
}
