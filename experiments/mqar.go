package experiments

import (
	"fmt"

	"github.com/wonderful-matrices/wonderful-matrices-go/experiments/train"
	"github.com/wonderful-matrices/wonderful-matrices-go/graph"
	"github.com/wonderful-matrices/wonderful-matrices-go/layers"
	"github.com/wonderful-matrices/wonderful-matrices-go/ops"
)

// mqar is Wonderful Matrices Figure 5 with the settings of Tables 5–6:
// QCAtn, SSD, InnerFuncAttn and InnerFuncAttn with the dynamic mask, each
// single-headed, two (mixer, MLP) layers, over d_model and sequence length,
// on the harder MQAR (random filler, T/4 pairs). SSD is the RoPE variant
// without convolution (Table 6: "we remove the one-dimensional causal
// convolution"); IFA has n_v = 2 and d_innerV = d_model/2. The learning
// rate falls with d_model as in Table 6, the same for every module.
func init() {
	Register(&Definition{
		Name: "mqar", Version: 2,
		Title:     "multi-query associative recall: QCAtn, SSD, IFA, IFA+DM, IFA+DM (doge) over d_model and sequence length",
		Reference: "Wonderful Matrices Figure 5, Tables 5–6",
		Notes: append([]string{
			"the paper gives these results as a figure (Figure 5), without numbers, so there is no paper column; the plots are the comparison.",
			"tiny and small use a smaller vocabulary and far fewer examples than the paper's 8192 and 2^18 (Table 5), so the accuracies are lower.",
		}, dynamicMaskNotes...),
		Arms: mqarArms,
		Columns: []Column{
			{Title: "params", Key: "params"},
			{Title: "accuracy", Key: "accuracy", Digits: 3},
			{Title: "val loss", Key: "val_loss", Digits: 3},
		},
		Plots: []Plot{
			{Kind: PlotLabelLines, File: "accuracy_vs_d_model", Title: "MQAR accuracy", XLabel: "d_model", YLabel: "accuracy", X: "d_model", Series: "module", Y: "accuracy", Panel: "seq_len", LogX: true},
		},
	})
}

// recallModules are the sequence transformations of WM Figures 5 and 8:
// QCAtn, SSD, and InnerFuncAttn without and with the dynamic mask (the
// paper's eq. 4 and, beyond the figures, Doge's value-dependent one).
var recallModules = []struct {
	slug, title, letter string
	mask                ops.MaskKind
}{{"qcatn", "QCAtn", "A", ""}, {"ssd", "SSD", "S", ""}, {"ifa", "IFA", "I", ops.MaskNone}, {"ifa-dm", "IFA+DM", "I", ops.MaskPaper}, {"ifa-doge", "IFA+DM (doge)", "I", ops.MaskDoge}}

// mqarSize is the sweep of one preset.
type mqarSize struct {
	DModels, SeqLens []int
	LR               map[int]float64 // by d_model
	Vocab            int
	Train, Test      int
	// Batch by sequence length (Table 5: 256/128/64/32 for 256…2048).
	Batch         map[int]int
	Steps         map[int]int
	DState, Chunk int
}

var mqarSizes = map[string]mqarSize{
	Tiny: {DModels: []int{16, 32}, SeqLens: []int{32}, LR: map[int]float64{16: 3e-3, 32: 3e-3},
		Vocab: 64, Train: 512, Test: 64, Batch: map[int]int{32: 16}, Steps: map[int]int{32: 30}, DState: 8, Chunk: 16},
	Small: {DModels: []int{32, 64}, SeqLens: []int{64, 128}, LR: map[int]float64{32: 3e-3, 64: 2e-3},
		Vocab: 256, Train: 16384, Test: 256, Batch: map[int]int{64: 32, 128: 16}, Steps: map[int]int{64: 500, 128: 500}, DState: 32, Chunk: 32},
	Paper: {DModels: []int{32, 64, 128, 256}, SeqLens: []int{256, 512, 1024, 2048},
		LR:    map[int]float64{32: 4e-4, 64: 3e-4, 128: 2e-4, 256: 1e-4},
		Vocab: 8192, Train: 1 << 18, Test: 1 << 10,
		Batch: map[int]int{256: 256, 512: 128, 1024: 64, 2048: 32},
		// 64 epochs of 2^18 examples (Table 5).
		Steps:  map[int]int{256: 64 << 18 / 256, 512: 64 << 18 / 128, 1024: 64 << 18 / 64, 2048: 64 << 18 / 32},
		DState: 128, Chunk: 256},
}

func mqarArms(preset string) ([]Arm, error) {
	s := mqarSizes[preset]
	var arms []Arm
	for _, T := range s.SeqLens {
		for _, d := range s.DModels {
			for _, mod := range recallModules {
				m := graph.Config{
					Pattern: pairs(mod.letter, "M", 2), Vocab: s.Vocab, DModel: d, Heads: 1, MaxPosition: T,
					SSD: layers.SSDConfig{Variant: "rope", DState: s.DState, ChunkLen: min(s.Chunk, T)},
					IFA: layers.InnerFuncConfig{Mask: mod.mask, Values: 2, RetDim: d / 2},
				}
				steps := s.Steps[T]
				arms = append(arms, Arm{
					Name:   fmt.Sprintf("%s.d%d.t%d", mod.slug, d, T),
					Labels: []Label{{"module", mod.title}, {"d_model", fmt.Sprint(d)}, {"seq_len", fmt.Sprint(T)}},
					Task:   TaskMQAR, Model: m,
					Train: train.Config{Steps: steps, Batch: s.Batch[T], SeqLen: T, LR: s.LR[d],
						EvalEvery: max(1, steps/10), EvalBatches: max(1, s.Test/s.Batch[T])},
					MQAR: MQARData{Vocab: s.Vocab, TrainExamples: s.Train, TestExamples: s.Test},
				})
			}
		}
	}
	return arms, nil
}
