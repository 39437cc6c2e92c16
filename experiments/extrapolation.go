package experiments

import (
	"fmt"
	"math"

	"github.com/wonderful-matrices/wonderful-matrices-go/layers"
)

// extrapolation is CoCA Tables 1–2, "training model from scratch": RoPE
// attention (RoFormer), RoPE with dynamic NTK, CoCA, and CoCA with dynamic
// NTK, trained at one length and evaluated at 1×…16× it: perplexity with a
// sliding window (stride = the training length, as CoCA's 512) over the
// KJV validation books, and passkey retrieval. Dynamic NTK starts at the
// training length (max_position). So that passkey accuracy measures
// extrapolation rather than whether the task was ever seen, a share of the
// training sequences are passkey prompts at the training length (CoCA
// trains on PG-19 alone; with models this small, zero-shot retrieval would
// be zero at every length).
func init() {
	Register(&Definition{
		Name: "extrapolation", Version: 2,
		Title:     "length extrapolation: RoPE, dynamic NTK, CoCA, CoCA+NTK; sliding-window ppl and passkey over 1×–16× the training length",
		Reference: "CoCA Tables 1–2",
		Notes: []string{
			"paper: CoCA Tables 1–2, models trained from scratch at 512 tokens on PG-19 (SentencePiece tokens); the paper's column at f× is its 512·f column. Here the lengths are f × this preset's training length in bytes.",
			"passkey accuracy here is teacher-forced greedy: the key must be the model's argmax digit by digit right after \" The passkey is \".",
		},
		Arms:          extrapolationArms,
		PresetColumns: extrapolationColumns,
		Plots: []Plot{
			{Kind: PlotMeasureLines, File: "ppl_vs_length", Title: "sliding-window perplexity", XLabel: "evaluation length (tokens)", YLabel: "ppl", Prefix: "ppl", LogX: true, LogY: true},
			{Kind: PlotMeasureLines, File: "passkey_vs_length", Title: "passkey retrieval", XLabel: "evaluation length (tokens)", YLabel: "accuracy", Prefix: "passkey", LogX: true},
			{Kind: PlotCurves, File: "val_ppl_vs_step", Title: "validation perplexity (training length)", XLabel: "step", YLabel: "val ppl", LogY: true},
		},
		LRGrid: lmLRGrid,
	})
}

type extrapolationSize struct {
	lm       lmSize
	factors  []int
	passkeys int
}

var extrapolationSizes = map[string]extrapolationSize{
	Tiny:   {lm: lmSize{DModel: 32, Heads: 2, Pairs: 1, Steps: 30, Batch: 4, SeqLen: 384, LR: 3e-3, EvalEvery: 10, EvalBatches: 1, FinalEvalBatches: 4}, factors: []int{1, 2, 4}, passkeys: 2},
	Small:  {lm: lmSize{DModel: 64, Heads: 4, Pairs: 2, Steps: 500, Batch: 8, SeqLen: 512, LR: 2e-3, EvalEvery: 50, EvalBatches: 4}, factors: []int{1, 2, 4, 8, 16}, passkeys: 10},
	Medium: {lm: lmSize{DModel: 64, Heads: 4, Pairs: 2, Steps: 2000, Batch: 8, SeqLen: 512, LR: 2e-3, EvalEvery: 200, EvalBatches: 4}, factors: []int{1, 2, 4, 8, 16}, passkeys: 10},
	// paper: CoCA's RoFormer-350M (d 1024, 24 layers, 16 heads), 512 tokens.
	Paper: {lm: lmSize{DModel: 1024, Heads: 16, Pairs: 24, Steps: 20000, Batch: 32, SeqLen: 512, LR: 3e-4, EvalEvery: 1000, EvalBatches: 16}, factors: []int{1, 2, 4, 8, 16, 32, 64}, passkeys: 100},
}

// cocaPaper is CoCA Table 1 (ppl) and Table 2 (passkey), from-scratch rows,
// at 512·2^i tokens, i = 0…6; inf is printed as inf.
var cocaPaper = map[string][2][7]float64{
	"rope":     {{19.66, 411.50, 3276.00, 3026.00, 3028.00, math.Inf(1), math.Inf(1)}, {0.99, 0.53, 0.30, 0.18, 0.04, 0.02, 0.04}},
	"rope-ntk": {{19.66, 22.30, 38.00, 75.75, 138.13, 370.75, 380.75}, {0.99, 1.00, 0.95, 0.70, 0.41, 0.16, 0.06}},
	"coca":     {{20.11, 33.47, 69.06, 113.19, 157.38, 141.00, 171.63}, {1.00, 0.64, 0.33, 0.19, 0.06, 0.02, 0.04}},
	"coca-ntk": {{20.11, 20.81, 25.88, 34.16, 55.75, 89.31, 101.13}, {1.00, 1.00, 0.96, 0.89, 0.50, 0.23, 0.08}},
}

func extrapolationArms(preset string) ([]Arm, error) {
	s := extrapolationSizes[preset]
	var arms []Arm
	for _, mth := range []struct {
		slug, title, letter string
		ntk                 bool
	}{{"rope", "RoPE", "A", false}, {"rope-ntk", "RoPE + dynamic NTK", "A", true}, {"coca", "CoCA", "K", false}, {"coca-ntk", "CoCA + dynamic NTK", "K", true}} {
		ntk := mth.ntk
		m := s.lm.model(pairs(mth.letter, "M", s.lm.Pairs))
		m.Attention = layers.AttentionConfig{NTK: ntk}
		m.CoCA = layers.CoCAConfig{NTK: &ntk}
		a := Arm{Name: mth.slug, Labels: []Label{{"method", mth.title}}, Model: m, Train: s.lm.train(),
			Task:  ExtrapolationTask{Factors: s.factors, Stride: s.lm.SeqLen, Passkeys: s.passkeys, PasskeyShare: 0.25},
			Paper: map[string]float64{}}
		for _, f := range s.factors {
			if i := int(math.Log2(float64(f))); 1<<i == f && i < 7 {
				a.Paper[fmt.Sprintf("ppl@%dx", f)] = cocaPaper[mth.slug][0][i]
				a.Paper[fmt.Sprintf("passkey@%dx", f)] = cocaPaper[mth.slug][1][i]
			}
		}
		arms = append(arms, a)
	}
	return arms, nil
}

// extrapolationColumns are ppl and passkey accuracy at each factor.
func extrapolationColumns(preset string) []Column {
	s := extrapolationSizes[preset]
	var cols []Column
	for _, f := range s.factors {
		cols = append(cols, Column{Title: fmt.Sprintf("ppl %d×", f), Key: fmt.Sprintf("ppl@%d", f*s.lm.SeqLen), Paper: fmt.Sprintf("ppl@%dx", f), Digits: 2})
	}
	for _, f := range s.factors {
		cols = append(cols, Column{Title: fmt.Sprintf("passkey %d×", f), Key: fmt.Sprintf("passkey@%d", f*s.lm.SeqLen), Paper: fmt.Sprintf("passkey@%dx", f), Digits: 2})
	}
	return cols
}
