// Package mylab is a researcher's own experiment package, as a user would
// write it outside this module: one Definition registered in init. The
// test of cmd/wmcli builds cmd/mylab, a three-line main over wmcli, and
// runs this experiment through it.
package mylab

import (
	"fmt"

	"github.com/wonderful-matrices/wonderful-matrices-go/experiments"
	"github.com/wonderful-matrices/wonderful-matrices-go/experiments/data"
	"github.com/wonderful-matrices/wonderful-matrices-go/experiments/train"
	"github.com/wonderful-matrices/wonderful-matrices-go/graph"
)

func init() {
	steps := map[string]int{experiments.Tiny: 20, experiments.Small: 300, experiments.Paper: 4000}
	experiments.Register(&experiments.Definition{
		Name: "mylab-depth", Version: 1,
		Title:     "SSD + MLP stacks of 1, 2 and 3 pairs",
		Reference: "my lab's question",
		Arms: func(preset string) ([]experiments.Arm, error) {
			var arms []experiments.Arm
			for n := 1; n <= 3; n++ {
				m := graph.Config{Pattern: fmt.Sprintf("(SM)%d", n), Vocab: data.ByteVocab, DModel: 32, Heads: 2}
				arms = append(arms, experiments.Arm{
					Name:   fmt.Sprintf("pairs-%d", n),
					Labels: []experiments.Label{{Key: "pairs", Value: fmt.Sprint(n)}},
					Task:   experiments.TaskLM,
					Model:  m,
					Train:  train.Config{Steps: steps[preset], Batch: 4, SeqLen: 32, LR: 3e-3, EvalEvery: 10},
				})
			}
			return arms, nil
		},
		Columns: []experiments.Column{
			{Title: "params", Key: "params"},
			{Title: "val ppl", Key: "val_ppl", Digits: 2},
		},
		Plots: []experiments.Plot{
			{Kind: experiments.PlotCurves, File: "val_ppl_vs_step", Title: "validation perplexity",
				XLabel: "step", YLabel: "ppl", LogY: true},
		},
	})
}
