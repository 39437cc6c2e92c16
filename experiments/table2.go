package experiments

import (
	"fmt"

	"github.com/pkg/errors"

	"github.com/wonderful-matrices/wonderful-matrices-go/graph"
)

// table2 is Wonderful Matrices Table 2: MLP (M) against CDMoE (E) as the
// state transformation, six patterns at equal parameters ("we strictly
// construct different models with the same number of parameters"): every
// arm with E has its CDMoE shared width (cdmoe.d_ff) matched to the
// all-MLP arm's total within 1% (graph.Match). At n pairs the six patterns
// keep the paper's shape: at n = 8 they are the paper's strings (WM Table 2,
// "SM SM SM SM SM SM SM AM" and so on).
func init() {
	Register(&Definition{
		Name: "table2", Version: 3,
		Title:     "MLP vs CDMoE ratio: the six patterns of WM Table 2 at equal parameters",
		Reference: "Wonderful Matrices Table 2",
		Notes: []string{
			"paper ppl: WM Table 2 (sequence length 8192, 16 sublayers); the paper pattern column is the paper's 16-sublayer string, the pattern column what runs at this preset's depth (the same shape with fewer pairs), and the CDMoE ratio is counted from the pattern that runs.",
			"row 5 keeps dense MLPs in the first and last state transformations and CDMoE in between (\"SM SE SE SE SE SE SE AM\", 6 of 16 sublayers = 37.5%); the paper's text compares it with all-CDMoE (row 6) and finds them close.",
			"every arm is matched in total parameters to the all-MLP arm through cdmoe.d_ff (within 1%).",
		},
		Arms:    table2Arms,
		Columns: append([]Column{{Title: "CDMoE ratio", Key: "cdmoe_ratio", Digits: 4}}, lmColumns(false)...),
		Plots: []Plot{
			{Kind: PlotCurves, File: "val_ppl_vs_step", Title: "validation perplexity (mean ± sd over seeds)", XLabel: "step", YLabel: "val ppl", LogY: true, Series: "paper pattern"},
			{Kind: PlotGroupedBars, File: "test_ppl_by_ratio", Title: "test perplexity (mean ± sd over seeds)", YLabel: "test ppl", Key: "test_ppl", X: "paper CDMoE ratio", Series: "paper pattern"},
			ratioPlot("row1"),
		},
		LRGrid: lmLRGrid,
	})
}

func table2Arms(preset string) ([]Arm, error) {
	s := lmSizes[preset]
	if preset == Paper {
		// With 1024 experts at d_model 256 a CDMoE's expert table alone
		// outweighs the MLP it must match; 256 leaves room for d_ff.
		s.Experts = 256
	}
	n := max(s.Pairs, 3)
	rows := []struct {
		paper, pattern, ratio string
		ppl                   float64
	}{
		{"SM SM SM SM SM SM SM AM", join(pairs("S", "M", n-1), "AM"), "0%", 8.18},
		{"SE SM SM SM SM SM SM AM", join("SE", pairs("S", "M", n-2), "AM"), "6.25%", 8.06},
		{"SM SM SM SM SM SM SM AE", join(pairs("S", "M", n-1), "AE"), "6.25%", 8.12},
		{"SE SM SM SM SM SM SM AE", join("SE", pairs("S", "M", n-2), "AE"), "12.5%", 7.96},
		{"SM SE SE SE SE SE SE AM", join("SM", pairs("S", "E", n-2), "AM"), "37.5%", 7.52},
		{"SE SE SE SE SE SE SE AE", join(pairs("S", "E", n-1), "AE"), "50%", 7.49},
	}
	var arms []Arm
	var target int64
	for i, r := range rows {
		m := s.model(r.pattern)
		m.SSD.Variant = "rope"
		if i == 0 {
			var err error
			if target, _, err = graph.CountConfig(m); err != nil {
				return nil, err
			}
		} else {
			var err error
			if m, err = graph.Match(m, graph.KnobCDMoEWidth, target, false); err != nil {
				return nil, errors.Wrapf(err, "arm %d (%s)", i+1, r.pattern)
			}
		}
		letters, err := graph.ExpandPattern(r.pattern)
		if err != nil {
			return nil, err
		}
		a := s.lmArm(fmt.Sprintf("row%d", i+1), m, Label{"paper pattern", r.paper}, Label{"paper CDMoE ratio", r.ratio}, Label{"pattern", r.pattern})
		a.Paper = map[string]float64{"ppl": r.ppl}
		a.Values = map[string]float64{"cdmoe_ratio": graph.CDMoERatio(letters)}
		arms = append(arms, a)
	}
	return arms, nil
}
