package experiments

// ssdlong is table1's SSD rows (the paper's three positional variants and
// the three one-switch variants) at a longer training context than
// table1's preset: WM Table 1's claim that RoPE beats Conv1d+D and a_t is
// made at sequence length 8192, where a short convolution's local view
// should matter less than at table1 small's 128 bytes. Each preset keeps
// table1's model, its tokens per step and its validation batches, with
// sequences 8× longer (small: 2 × 1024 bytes against 16 × 128); paper is
// table1's paper size.
func init() {
	Register(&Definition{
		Name: "ssdlong", Version: 2,
		Title:     "table1's SSD rows (Conv1d+D, a_t, RoPE and one switch at a time) at a longer training context",
		Reference: "Wonderful Matrices Table 1 (SSD row); TransXSSM Table 2",
		Notes: []string{
			"paper ppl: WM Table 1's SSD row (sequence length 8192). The model and the tokens per step are table1's at the same preset; only the sequence length (and so the batch) changes.",
			"a_t has no switch on; \"D only\", \"conv only\" and \"RoPE only\" turn one on; the paper's conv1d+D and rope each add D to conv and RoPE.",
		},
		Arms:    ssdLongArms,
		Columns: lmColumns(true),
		Plots: []Plot{
			{Kind: PlotCurves, File: "val_ppl_vs_step", Title: "validation perplexity (mean ± sd over seeds)", XLabel: "step", YLabel: "val ppl", LogY: true, Series: "variant"},
			{Kind: PlotGroupedBars, File: "test_ppl_by_variant", Title: "test perplexity (mean ± sd over seeds)", YLabel: "test ppl", Key: "test_ppl", X: "modules", Series: "variant"},
			ratioPlot("ssd.a_t"),
		},
		LRGrid: lmLRGrid,
	})
}

// ssdLongSizes are table1's sizes with 8× longer sequences at the same
// tokens per step; paper is table1's paper size (already at 8192).
func ssdLongSizes(preset string) lmSize {
	s := lmSizes[preset]
	if preset == Paper {
		return s
	}
	s.SeqLen *= 8
	s.Batch = max(1, s.Batch/8)
	return s
}

func ssdLongArms(preset string) ([]Arm, error) {
	s := ssdLongSizes(preset)
	var arms []Arm
	for _, set := range table1Sets(s.Pairs) {
		if set.slug != "ssd" {
			continue
		}
		for _, v := range set.variants {
			arms = append(arms, table1Arm(s, set, v))
		}
	}
	return arms, matchParams(arms, "ssd.rope")
}
