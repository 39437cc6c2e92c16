package experiments

import (
	"fmt"

	"github.com/wonderful-matrices/wonderful-matrices-go/experiments/data"
	"github.com/wonderful-matrices/wonderful-matrices-go/graph"
)

// throughput is Wonderful Matrices Figure 6 and TransXSSM Figure 4: the
// training (forward, backward, update) and evaluation (forward) speed of
// llama, mamba2, jamba and cheems (and transxssm) at one size across
// sequence lengths. Every architecture has 16 sublayers (llama and mamba2
// repeat their two-sublayer block 8 times); llama, mamba2 and jamba carry
// MoE-SEI with 4 experts as in WM Table 7. The batch shrinks as the length
// grows so each step holds the same number of tokens.
func init() {
	Register(&Definition{
		Name: "throughput", Version: 1,
		Title:     "training and evaluation throughput vs sequence length: llama, mamba2, jamba, cheems, transxssm",
		Reference: "Wonderful Matrices Figure 6; TransXSSM Figure 4",
		Notes: []string{
			"the papers give throughput as figures (GPU, 1.3B parameters), without numbers, so there is no paper column; compare the order and the slopes.",
		},
		Arms: throughputArms,
		PresetColumns: func(preset string) []Column {
			cols := []Column{{Title: "params", Key: "params"}}
			for _, t := range throughputSizes[preset].SeqLens {
				cols = append(cols, Column{Title: fmt.Sprintf("train tok/s @%d", t), Key: fmt.Sprintf("train@%d", t)})
			}
			for _, t := range throughputSizes[preset].SeqLens {
				cols = append(cols, Column{Title: fmt.Sprintf("eval tok/s @%d", t), Key: fmt.Sprintf("eval@%d", t)})
			}
			return cols
		},
		Plots: []Plot{
			{Kind: PlotMeasureLines, File: "train_throughput", Title: "training throughput", XLabel: "sequence length", YLabel: "tokens/s", Prefix: "train", LogX: true, LogY: true},
			{Kind: PlotMeasureLines, File: "eval_throughput", Title: "evaluation throughput", XLabel: "sequence length", YLabel: "tokens/s", Prefix: "eval", LogX: true, LogY: true},
		},
	})
}

type throughputSize struct {
	DModel, Heads, Experts int
	SeqLens                []int
	Tokens, Reps           int
}

var throughputSizes = map[string]throughputSize{
	Tiny:  {DModel: 32, Heads: 2, Experts: 16, SeqLens: []int{32, 64, 128}, Tokens: 256, Reps: 1},
	Small: {DModel: 64, Heads: 4, Experts: 64, SeqLens: []int{128, 256, 512, 1024, 2048}, Tokens: 4096, Reps: 2},
	// medium trains nothing longer here: it times as small does.
	Medium: {DModel: 64, Heads: 4, Experts: 64, SeqLens: []int{128, 256, 512, 1024, 2048}, Tokens: 4096, Reps: 2},
	// paper: WM Table 7's 1.3B width; 8100 = 90² is the square nearest the
	// paper's 8192 experts.
	Paper: {DModel: 2048, Heads: 32, Experts: 90 * 90, SeqLens: []int{512, 1024, 2048, 4096, 8192}, Tokens: 16384, Reps: 5},
}

func throughputArms(preset string) ([]Arm, error) {
	s := throughputSizes[preset]
	maxT := s.SeqLens[len(s.SeqLens)-1]
	var arms []Arm
	for _, arch := range []string{"llama", "mamba2", "jamba", "cheems", "transxssm"} {
		blocks := 1
		if arch == "llama" || arch == "mamba2" {
			blocks = 8
		}
		m := graph.Config{Arch: arch, NBlocks: blocks, Vocab: data.ByteVocab, DModel: s.DModel, Heads: s.Heads,
			MaxPosition: maxT, CDMoE: cdmoeAt(s.DModel, s.Experts)}
		arms = append(arms, Arm{
			Name: arch, Labels: []Label{{"arch", arch}}, Model: m,
			Task: ThroughputTask{SeqLens: s.SeqLens, Tokens: s.Tokens, Reps: s.Reps},
		})
	}
	return arms, nil
}
