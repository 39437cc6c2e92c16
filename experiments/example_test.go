package experiments_test

import (
	"fmt"

	"github.com/wonderful-matrices/wonderful-matrices-go/experiments"
	"github.com/wonderful-matrices/wonderful-matrices-go/experiments/data"
	"github.com/wonderful-matrices/wonderful-matrices-go/experiments/train"
	"github.com/wonderful-matrices/wonderful-matrices-go/graph"
)

// A new experiment is one file: a Definition registered in init. This one
// asks whether CDMoE's retrieval heads matter, with SSD + QCAtn stacks on
// the embedded KJV; `wm run heads --preset tiny --out results` runs it and
// writes its table and plots.
func ExampleRegister() {
	steps := map[string]int{experiments.Tiny: 30, experiments.Small: 450, experiments.Paper: 8000}
	experiments.Register(&experiments.Definition{
		Name: "heads", Version: 1,
		Title:     "CDMoE retrieval heads: 1, 2, 4",
		Reference: "Wonderful Matrices §3.3",
		Arms: func(preset string) ([]experiments.Arm, error) {
			var arms []experiments.Arm
			for _, h := range []int{1, 2, 4} {
				m := graph.Config{Pattern: "(SE)3 AE", Vocab: data.ByteVocab, DModel: 32, Heads: 2}
				m.CDMoE.Experts, m.CDMoE.TopK, m.CDMoE.RetDim, m.CDMoE.Heads = 64, 4, 16, h
				arms = append(arms, experiments.Arm{
					Name:   fmt.Sprintf("heads-%d", h),
					Labels: []experiments.Label{{Key: "cdmoe heads", Value: fmt.Sprint(h)}},
					Task:   experiments.TaskLM,
					Model:  m,
					Train:  train.Config{Steps: steps[preset], Batch: 8, SeqLen: 64, LR: 3e-3},
				})
			}
			return arms, nil
		},
		Columns: []experiments.Column{
			{Title: "params", Key: "params"},
			{Title: "test ppl", Key: "test_ppl", Digits: 2},
		},
		Plots: []experiments.Plot{
			{Kind: experiments.PlotCurves, File: "val_ppl_vs_step", Title: "validation perplexity", XLabel: "step", YLabel: "ppl", LogY: true},
		},
	})
	def, _ := experiments.Lookup("heads")
	arms, err := def.Expand(experiments.Tiny)
	fmt.Println(len(arms), arms[2].Name, err)
	// Output: 3 heads-4 <nil>
}
