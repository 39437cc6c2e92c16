package experiments

import (
	"fmt"
	"strings"

	"github.com/wonderful-matrices/wonderful-matrices-go/graph"
	"github.com/wonderful-matrices/wonderful-matrices-go/layers"
)

// params is Wonderful Matrices Figure 8: the parameters of QCAtn, SSD and
// InnerFuncAttn (with and without the dynamic mask) over d_model, in the
// MQAR setting of Table 6 (single head, two layers, SSD d_state 128, IFA
// n_v = 2 and d_innerV = d_model/2). Counting needs no training, so every
// preset counts the paper's sizes; the mixer column is the sequence
// transformation alone, the figure's quantity.
func init() {
	Register(&Definition{
		Name: "params", Version: 1,
		Title:     "parameter counts of QCAtn, SSD, IFA, IFA+DM over d_model",
		Reference: "Wonderful Matrices Figure 8",
		Notes: []string{
			"the paper gives these counts as a figure (Figure 8), without numbers, so there is no paper column.",
			"mixer params are the two sequence-transformation layers; total params add the embedding, the MLPs, the norms and the head (vocabulary 8192).",
		},
		Arms: paramsArms,
		Columns: []Column{
			{Title: "mixer params", Key: "mixer_params"},
			{Title: "total params", Key: "params"},
		},
		Plots: []Plot{
			{Kind: PlotLabelLines, File: "params_vs_d_model", Title: "sequence-transformation parameters", XLabel: "d_model", YLabel: "parameters", X: "d_model", Series: "module", Y: "mixer_params", LogX: true, LogY: true},
		},
	})
}

// isMixer says whether a layer kind of graph.Breakdown is a sequence
// transformation ("ssd(rope)", "ifa(dm=paper)", …).
func isMixer(kind string) bool {
	for _, p := range []string{"qcatn", "ssd", "ifa", "coca", "mamba2"} {
		if strings.HasPrefix(kind, p) {
			return true
		}
	}
	return false
}

func paramsArms(string) ([]Arm, error) {
	var arms []Arm
	for _, d := range []int{32, 64, 128, 256} {
		for _, mod := range recallModules {
			m := graph.Config{
				Pattern: pairs(mod.letter, "M", 2), Vocab: 8192, DModel: d, Heads: 1, MaxPosition: 2048,
				SSD: layers.SSDConfig{Variant: "rope", DState: 128, ChunkLen: 256},
				IFA: layers.InnerFuncConfig{Mask: mod.mask, Values: 2, RetDim: d / 2},
			}
			arms = append(arms, Arm{
				Name:   fmt.Sprintf("%s.d%d", mod.slug, d),
				Labels: []Label{{"module", mod.title}, {"d_model", fmt.Sprint(d)}},
				Task:   TaskParams, Model: m,
			})
		}
	}
	return arms, nil
}
