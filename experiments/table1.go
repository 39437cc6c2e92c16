package experiments

import (
	"strings"

	"github.com/pkg/errors"

	"github.com/wonderful-matrices/wonderful-matrices-go/graph"
	"github.com/wonderful-matrices/wonderful-matrices-go/layers"
	"github.com/wonderful-matrices/wonderful-matrices-go/ops"
)

// table1 is Wonderful Matrices Table 1 (= TransXSSM Table 2): the SSD
// positional variants Conv1d+D, a_t and RoPE under five module sets. The
// state transformation is the SwiGLU MLP (WM Table 2's first row, 8.18, is
// Table 1's SSD+QCAtn RoPE). With n pairs of sublayers, the mixed sets put
// attention in the last pair, as "SMSMSMSMSMSMSMA(M)" does at n = 8.
//
// The paper's three variants change two switches at once (RoPE keeps D,
// a_t drops it), so the SSD set also runs the one-switch variants of
// ssdSwitchVariants: each of conv, D and RoPE alone, read against a_t
// (no switch). One more arm uses Doge's value-dependent dynamic mask.
func init() {
	Register(&Definition{
		Name: "table1", Version: 3,
		Title:     "SSD positional variant (Conv1d+D, a_t, RoPE and one switch at a time) × {QCAtn, SSD, SSD+QCAtn, SSD+IFA, SSD+IFA+DM}: perplexity and throughput",
		Reference: "Wonderful Matrices Table 1; TransXSSM Table 2",
		Notes: append([]string{
			"paper ppl: WM Table 1 (sequence length 8192); paper steps/s: TransXSSM Table 2 (d_model 256, 8000 steps, on GPUs); compare the ratios between arms, not the values.",
			"QCAtn uses RoPE in every arm; Conv1d+D and a_t change only the SSD layers (WM Table 1: \"QCAtn cannot use Conv1d+D and a_t\").",
			"every arm is matched in total parameters to QCAtn's within 1% through the MLP width (mlp.d_ff); the mixers differ by up to 6% of the total otherwise.",
			"IFA's retrieval keys (v_keys) are drawn from N(0, 0.02), not zeros as in listing 7: with no gradient through top-k, zero keys would tie every score and fix the same inner values for every token for ever (the spec resolves it so).",
			"the paper's variants differ in more than one switch: Conv1d+D = conv and D, a_t = neither, RoPE = RoPE and D. The SSD rows add \"D only\", \"conv only\" and \"RoPE only\", so that each switch can be read alone against a_t, and conv and RoPE given D against \"D only\".",
		}, dynamicMaskNotes...),
		Arms:    table1Arms,
		Columns: lmColumns(true),
		Plots:   table1Plots,
		LRGrid:  lmLRGrid,
	})
}

// dynamicMaskNotes say what the IFA and DM arms compute here, under the
// tables that have them (table1, mqar).
var dynamicMaskNotes = []string{
	"IFA's inner-function retrieval (WM eq. 3: the query projection v_queries and the keys v_keys) gets no gradient: top-k is a hard choice, so both stay at their initialisation and only the selected inner values (v_embed) and the rest of the layer learn, as in the paper's listing 7.",
	"DM (paper) is our reading of WM eq. 4, M = L∘A: a learned gain per head and key position (l [heads, max_position], initialised to ones) that multiplies the causal softmax's weights after the softmax; it does not depend on the input. DM (doge) is the value-dependent mask of the authors' later Doge code: an additive bias exp(A_h·softplus(dt_proj(V))) per key, added to the scores before the softmax (A initialised to zero).",
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

// ssdVariant is one setting of SSD's positional switches (SPEC §3).
type ssdVariant struct {
	// Name is the variant's label: a paper variant of WM Table 1, or a
	// one-switch variant of ours.
	Name string
	// Slug ends the arm's name.
	Slug string
	// Switches lists the switches that are on ("conv+D", "none").
	Switches string
	SSD      layers.SSDConfig
}

// paperSSDVariants are the three variants of WM Table 1.
var paperSSDVariants = []ssdVariant{
	{"conv1d+D", "conv1d-D", "conv+D", layers.SSDConfig{Variant: "conv1d+D"}},
	{"a_t", "a_t", "none", layers.SSDConfig{Variant: "a_t"}},
	{"rope", "rope", "rope+D", layers.SSDConfig{Variant: "rope"}},
}

// ssdSwitchVariants are the paper's variants and the three that turn one
// switch on alone: against a_t (none) they read each switch's effect
// alone, and "D only" against conv1d+D and rope reads conv and RoPE given D.
var ssdSwitchVariants = append(append([]ssdVariant{}, paperSSDVariants...),
	ssdVariant{"D only", "d-only", "D", layers.SSDConfig{Variant: "custom", D: true}},
	ssdVariant{"conv only", "conv-only", "conv", layers.SSDConfig{Variant: "custom", Conv: true}},
	ssdVariant{"RoPE only", "rope-only", "rope", layers.SSDConfig{Variant: "custom", Rope: true}},
)

// table1Set is a module set of WM Table 1.
type table1Set struct {
	slug, title, pattern string
	mask                 ops.MaskKind
	variants             []ssdVariant
	// paper is the key of table1Paper ("" when the paper has no row).
	paper string
}

func table1Sets(n int) []table1Set {
	rope := paperSSDVariants[2:]
	return []table1Set{
		{"qcatn", "QCAtn", pairs("A", "M", n), "", rope, "qcatn"},
		{"ssd", "SSD", pairs("S", "M", n), "", ssdSwitchVariants, "ssd"},
		{"ssd-qcatn", "SSD + QCAtn", join(pairs("S", "M", n-1), "AM"), "", paperSSDVariants, "ssd-qcatn"},
		{"ssd-ifa", "SSD + IFA", join(pairs("S", "M", n-1), "IM"), ops.MaskNone, paperSSDVariants, "ssd-ifa"},
		{"ssd-ifa-dm", "SSD + IFA + DM", join(pairs("S", "M", n-1), "IM"), ops.MaskPaper, paperSSDVariants, "ssd-ifa-dm"},
		{"ssd-ifa-doge", "SSD + IFA + DM (doge)", join(pairs("S", "M", n-1), "IM"), ops.MaskDoge, rope, ""},
	}
}

func table1Arms(preset string) ([]Arm, error) {
	s := lmSizes[preset]
	var arms []Arm
	for _, set := range table1Sets(s.Pairs) {
		for _, v := range set.variants {
			arms = append(arms, table1Arm(s, set, v))
		}
	}
	return arms, matchParams(arms, "qcatn.rope")
}

// matchParams sizes the MLP width (mlp.d_ff) of every arm so that its total
// parameter count is within 1% of the arm named reference's, as WM Table 2
// does ("we strictly construct different models with the same number of
// parameters"): QCAtn, SSD and IFA differ in their mixers' parameters (at
// small, QCAtn has 6% more than SSD + IFA + DM), and the MLPs make up the
// difference. The reference keeps its default width.
func matchParams(arms []Arm, reference string) error {
	var target int64
	for _, a := range arms {
		if a.Name == reference {
			var err error
			if target, _, err = graph.CountConfig(a.Model); err != nil {
				return errors.Wrapf(err, "arm %s", a.Name)
			}
		}
	}
	if target == 0 {
		return errors.Errorf("match parameters: no arm %q", reference)
	}
	for i := range arms {
		if arms[i].Name == reference {
			continue
		}
		m, err := graph.Match(arms[i].Model, graph.KnobMLPWidth, target, false)
		if err != nil {
			return errors.Wrapf(err, "arm %s", arms[i].Name)
		}
		arms[i].Model = m
	}
	return nil
}

// table1Arm is one module set with one SSD variant at size s, with the
// paper's numbers where WM Table 1 has the cell.
func table1Arm(s lmSize, set table1Set, v ssdVariant) Arm {
	m := s.model(set.pattern)
	m.SSD = v.SSD
	m.IFA.Mask = set.mask
	switches := v.Switches
	if !strings.Contains(set.pattern, "S") {
		switches = "no SSD"
	}
	a := s.lmArm(set.slug+"."+v.Slug, m, Label{"modules", set.title}, Label{"variant", v.Name}, Label{"ssd switches", switches})
	if p, ok := table1Paper[set.paper][v.Name]; ok {
		a.Paper = map[string]float64{"ppl": p[0]}
		if p[1] > 0 {
			a.Paper["steps_per_s"] = p[1]
		}
	}
	return a
}

// lmColumns are the columns of a language-model ablation.
func lmColumns(stepsPaper bool) []Column {
	cols := []Column{
		{Title: "params", Key: "params"},
		{Title: "test ppl", Key: "test_ppl", Paper: "ppl", Digits: 2},
		{Title: "steps/s", Key: "steps_per_s", Digits: 2},
		{Title: "tokens/s", Key: "tokens_per_s"},
	}
	if stepsPaper {
		cols[2].Paper = "steps_per_s"
	}
	return cols
}

// ratioPlot compares final perplexity with the paper's as ratios to the
// reference arm's (the paper's values are on another corpus and scale).
func ratioPlot(reference string) Plot {
	return Plot{Kind: PlotBars, File: "test_ppl_ratio_vs_paper", Title: "test perplexity ÷ " + reference + "'s, measured and paper",
		YLabel: "ppl ÷ ppl of " + reference, Key: "test_ppl", PaperKey: "ppl", Reference: reference}
}

// table1Plots are table1's and ssdlong's figures: curves in small
// multiples by module set, final perplexity grouped by module set with a
// bar per SSD variant, and the ratio to SSD a_t beside the paper's.
var table1Plots = []Plot{
	{Kind: PlotCurves, File: "val_ppl_vs_step", Title: "validation perplexity by module set (mean ± sd over seeds)", XLabel: "step", YLabel: "val ppl", LogY: true, Panel: "modules", Series: "variant"},
	{Kind: PlotGroupedBars, File: "test_ppl_by_modules", Title: "test perplexity (mean ± sd over seeds)", YLabel: "test ppl", Key: "test_ppl", X: "modules", Series: "variant"},
	ratioPlot("ssd.a_t"),
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
