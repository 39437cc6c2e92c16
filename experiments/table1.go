package experiments

import "github.com/wonderful-matrices/wonderful-matrices-go/ops"

// table1 is Wonderful Matrices Table 1 (= TransXSSM Table 2): the SSD
// positional variants Conv1d+D, a_t and RoPE under five module sets. The
// state transformation is the SwiGLU MLP (WM Table 2's first row, 8.18, is
// Table 1's SSD+QCAtn RoPE). With n pairs of sublayers, the mixed sets put
// attention in the last pair, as "SMSMSMSMSMSMSMA(M)" does at n = 8.
func init() {
	Register(&Definition{
		Name: "table1", Version: 1,
		Title:     "SSD positional variant (Conv1d+D, a_t, RoPE) × {QCAtn, SSD, SSD+QCAtn, SSD+IFA, SSD+IFA+DM}: perplexity and throughput",
		Reference: "Wonderful Matrices Table 1; TransXSSM Table 2",
		Notes: []string{
			"paper ppl: WM Table 1 (sequence length 8192); paper steps/s: TransXSSM Table 2 (d_model 256, 8000 steps, on GPUs); compare the ratios between arms, not the values.",
			"QCAtn uses RoPE in every arm; Conv1d+D and a_t change only the SSD layers (WM Table 1: \"QCAtn cannot use Conv1d+D and a_t\").",
		},
		Arms:    table1Arms,
		Columns: lmColumns(true),
		Plots:   lmPlots,
	})
}

// table1Paper is WM Table 1's perplexity and TransXSSM Table 2's steps/s,
// by module set and SSD variant.
var table1Paper = map[string]map[string][2]float64{
	"qcatn":      {"rope": {8.38, 6.8}},
	"ssd":        {"conv1d+D": {8.56, 7.6}, "a_t": {8.62, 9.4}, "rope": {8.33, 9.2}},
	"ssd-qcatn":  {"conv1d+D": {8.48, 7.2}, "a_t": {8.56, 8.5}, "rope": {8.18, 8.4}},
	"ssd-ifa":    {"conv1d+D": {8.43, 0}, "a_t": {8.49, 0}, "rope": {8.12, 0}},
	"ssd-ifa-dm": {"conv1d+D": {8.36, 0}, "a_t": {8.42, 0}, "rope": {7.96, 0}},
}

func table1Arms(preset string) ([]Arm, error) {
	s := lmSizes[preset]
	n := s.Pairs
	sets := []struct {
		slug, title, pattern string
		mask                 ops.MaskKind
	}{
		{"qcatn", "QCAtn", pairs("A", "M", n), ""},
		{"ssd", "SSD", pairs("S", "M", n), ""},
		{"ssd-qcatn", "SSD + QCAtn", join(pairs("S", "M", n-1), "AM"), ""},
		{"ssd-ifa", "SSD + IFA", join(pairs("S", "M", n-1), "IM"), ops.MaskNone},
		{"ssd-ifa-dm", "SSD + IFA + DM", join(pairs("S", "M", n-1), "IM"), ops.MaskPaper},
	}
	var arms []Arm
	for _, set := range sets {
		for _, variant := range []string{"conv1d+D", "a_t", "rope"} {
			p, ok := table1Paper[set.slug][variant]
			if !ok {
				continue
			}
			m := s.model(set.pattern)
			m.SSD.Variant = variant
			m.IFA.Mask = set.mask
			a := s.lmArm(set.slug+"."+slug(variant), m, Label{"modules", set.title}, Label{"variant", variant})
			a.Paper = map[string]float64{"ppl": p[0]}
			if p[1] > 0 {
				a.Paper["steps_per_s"] = p[1]
			}
			arms = append(arms, a)
		}
	}
	return arms, nil
}

// lmColumns are the columns of a language-model ablation.
func lmColumns(stepsPaper bool) []Column {
	cols := []Column{
		{Title: "params", Key: "params"},
		{Title: "val ppl", Key: "val_ppl", Paper: "ppl", Digits: 2},
		{Title: "steps/s", Key: "steps_per_s", Digits: 2},
		{Title: "tokens/s", Key: "tokens_per_s"},
	}
	if stepsPaper {
		cols[2].Paper = "steps_per_s"
	}
	return cols
}

// lmPlots are the figures of a language-model ablation.
var lmPlots = []Plot{
	{Kind: PlotCurves, File: "val_ppl_vs_step", Title: "validation perplexity", XLabel: "step", YLabel: "val ppl", LogY: true},
	{Kind: PlotBars, File: "val_ppl_vs_paper", Title: "final validation perplexity beside the paper's", YLabel: "ppl", Key: "val_ppl", PaperKey: "ppl"},
}

// slug makes a folder-safe name by replacing every character outside
// [A-Za-z0-9_.-] with '-' ("conv1d+D" → "conv1d-D").
func slug(s string) string {
	b := []byte(s)
	for i, c := range b {
		ok := c == '_' || c == '.' || c == '-' || (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
		if !ok {
			b[i] = '-'
		}
	}
	return string(b)
}
