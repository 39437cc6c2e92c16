// Package mylab is a researcher's own package, as a user would write it
// outside this module, using only the framework's exported API: a mixer of
// its own under a new pattern letter (gconv.go, letter G), a task of its
// own on a corpus it ships (sums.go), and two experiments registered in
// init. The test of cmd/wmcli runs this package's tests (the mixer's
// gradient by finite differences) and builds cmd/mylab, a three-line main
// over wmcli, to run the experiments through it.
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
	final := map[string]int{experiments.Tiny: 8} // tiny is a smoke test: a few batches of the KJV's splits
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
					Train:  train.Config{Steps: steps[preset], Batch: 4, SeqLen: 32, LR: 3e-3, EvalEvery: 10, FinalEvalBatches: final[preset]},
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

	experiments.Register(&experiments.Definition{
		Name: "mylab-mixers", Version: 1,
		Title:     "SSD, attention and my gated convolution on sums: answer accuracy",
		Reference: "my lab's question",
		Arms: func(preset string) ([]experiments.Arm, error) {
			var arms []experiments.Arm
			for _, mx := range []struct{ name, letter string }{{"ssd", "S"}, {"attention", "A"}, {"gconv", "G"}} {
				m := graph.Config{Pattern: fmt.Sprintf("(%sM)2", mx.letter), Vocab: data.ByteVocab, DModel: 32, Heads: 2, MaxPosition: 64}
				arms = append(arms, experiments.Arm{
					Name:   mx.name,
					Labels: []experiments.Label{{Key: "mixer", Value: mx.name}},
					Task:   SumsTask{},
					Model:  m,
					Train:  train.Config{Steps: 3 * steps[preset], Batch: 8, SeqLen: 64, LR: 3e-3, EvalEvery: 10},
				})
			}
			return arms, nil
		},
		Columns: []experiments.Column{
			{Title: "params", Key: "params"},
			{Title: "test ppl", Key: "test_ppl", Digits: 3},
			{Title: "answer accuracy", Key: "answer_accuracy", Digits: 3},
		},
		Plots: []experiments.Plot{
			{Kind: experiments.PlotBars, File: "answer_accuracy", Title: "answer accuracy on the test sums", YLabel: "accuracy", Key: "answer_accuracy"},
		},
		LRGrid: map[string][]float64{experiments.Small: {1e-3, 3e-3, 1e-2}},
	})
}
