package experiments

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/pkg/errors"

	"github.com/wonderful-matrices/wonderful-matrices-go/internal/atomicfile"
)

// The verdicts of a claim.
const (
	Reproduced    = "reproduced"
	NotReproduced = "not reproduced"
	Inconclusive  = "inconclusive at this scale"
	NotRun        = "not run"
)

// MinSeeds is the number of seeds per arm a verdict needs.
const MinSeeds = 3

// Comparison is one measured difference between two arms of one
// experiment at one preset: A − B of a per-seed value (mean over seeds and
// a 95% Welch interval), or, for a trend, a slope.
type Comparison struct {
	Experiment, Preset string
	// What the comparison reads ("SSD: RoPE vs a_t").
	What string
	// A and B are the arms (B empty for a trend).
	A, B   string
	SA, SB Stat
	Diff   Interval
	// Want is the sign of A − B the paper's claim predicts (−1, +1), 0
	// for a comparison that only informs.
	Want int
	// Seeds is the fewest seeds of A and B.
	Seeds   int
	Verdict string
	// Digits of the values in the table.
	Digits int
}

// Claim is one claim of the papers with the comparisons that test it.
type Claim struct {
	Title, Source string
	// Paper is what the paper reports for it.
	Paper   string
	Rows    []Comparison
	Verdict string
	// Why says how the rows led to the verdict.
	Why   string
	Notes []string
	// Informs marks a set of measured effects that no paper claims: it
	// gets no verdict.
	Informs bool
}

// Measured is the verdict of a set of comparisons that tests no claim.
const Measured = "measured (no claim)"

// judge sets the comparison's verdict: reproduced when its interval lies on
// the claim's side of zero, not reproduced when on the other side,
// inconclusive when it holds zero or the arms have fewer than MinSeeds.
func (c *Comparison) judge() {
	switch {
	case c.Seeds == 0:
		c.Verdict = NotRun
	case c.Seeds < MinSeeds:
		c.Verdict = fmt.Sprintf("%s (%d seed(s), %d needed)", Inconclusive, c.Seeds, MinSeeds)
	case c.Want == 0:
		switch {
		case c.Diff.Hi < 0:
			c.Verdict = "A lower"
		case c.Diff.Lo > 0:
			c.Verdict = "A higher"
		default:
			c.Verdict = "no difference resolved"
		}
	case float64(c.Want)*c.Diff.Lo > 0 && float64(c.Want)*c.Diff.Hi > 0:
		c.Verdict = Reproduced
	case float64(c.Want)*c.Diff.Lo < 0 && float64(c.Want)*c.Diff.Hi < 0:
		c.Verdict = NotReproduced
	default:
		c.Verdict = Inconclusive
	}
}

// judge sets the claim's verdict from its rows that test it (Want ≠ 0):
// reproduced when every one is; not reproduced when at least one goes
// significantly against the claim; inconclusive otherwise; not run when no
// row has results.
func (cl *Claim) judge() {
	var run, rep, against, few, notRun int
	for _, r := range cl.Rows {
		if r.Seeds == 0 {
			notRun++
		}
		if r.Want == 0 || r.Seeds == 0 {
			continue
		}
		run++
		switch {
		case r.Seeds < MinSeeds:
			few++
		case r.Verdict == Reproduced:
			rep++
		case r.Verdict == NotReproduced:
			against++
		}
	}
	defer func() {
		if notRun > 0 && cl.Verdict != NotRun {
			cl.Why += fmt.Sprintf("; %d comparison(s) have no results yet", notRun)
		}
	}()
	switch {
	case cl.Informs && len(cl.Rows) > notRun:
		cl.Verdict, cl.Why = Measured, "effects measured without a claim of the papers to test"
	case run == 0:
		cl.Verdict, cl.Why = NotRun, "no results for this claim's experiments under the results folder"
	case few > 0:
		cl.Verdict, cl.Why = Inconclusive, fmt.Sprintf("%d of %d comparisons have fewer than %d seeds per arm", few, run, MinSeeds)
	case rep == run:
		cl.Verdict, cl.Why = Reproduced, fmt.Sprintf("all %d comparisons go the paper's way, each 95%% interval excluding zero", run)
	case against > 0:
		cl.Verdict = NotReproduced
		cl.Why = fmt.Sprintf("%d of %d comparisons go significantly against the paper, %d with it, %d within noise", against, run, rep, run-rep-against)
	default:
		cl.Verdict = Inconclusive
		cl.Why = fmt.Sprintf("%d of %d comparisons go the paper's way, the other %d are within noise (95%% interval holds zero)", rep, run, run-rep)
	}
}

// add appends the comparison c when ok (both arms exist).
func (cl *Claim) add(c Comparison, ok bool) {
	if ok {
		cl.Rows = append(cl.Rows, c)
	}
}

// seedValues are the per-seed values of key of an arm.
func seedValues(ar ArmResults, key string) []float64 {
	var vs []float64
	for _, s := range ar.Seeds {
		if v, ok := value(ar.Arm, s.Result, key); ok {
			vs = append(vs, v)
		}
	}
	return vs
}

// results are the collected arms of the experiments found under a folder,
// by experiment, preset and arm name.
type results map[string]map[string]map[string]ArmResults

func collectAll(out string) (results, error) {
	sets, err := ResultSets(out)
	if err != nil {
		return nil, err
	}
	rs := results{}
	for _, set := range sets {
		all, _, err := Collect(out, set.Def, set.Preset)
		if err != nil {
			return nil, err
		}
		name := set.Def.Name
		if rs[name] == nil {
			rs[name] = map[string]map[string]ArmResults{}
		}
		rs[name][set.Preset] = map[string]ArmResults{}
		for _, ar := range all {
			rs[name][set.Preset][ar.Arm.Name] = ar
		}
	}
	return rs, nil
}

// presets lists the presets of an experiment that have results, in size order.
func (rs results) presets(exp string) []string {
	var out []string
	for _, p := range Presets {
		if _, ok := rs[exp][p]; ok {
			out = append(out, p)
		}
	}
	return out
}

// compare is arm a against arm b of exp at preset on the per-seed values
// that f derives from each arm (nil for none), with the paper's sign want.
func (rs results) compare(exp, preset, what, a, b string, want, digits int, f func(ArmResults) []float64) (Comparison, bool) {
	A, okA := rs[exp][preset][a]
	B, okB := rs[exp][preset][b]
	if !okA || !okB {
		return Comparison{}, false
	}
	va, vb := f(A), f(B)
	c := Comparison{Experiment: exp, Preset: preset, What: what, A: a, B: b, SA: meanSD(va), SB: meanSD(vb), Want: want, Seeds: min(len(va), len(vb)), Digits: digits}
	if iv, ok := WelchDiff(va, vb); ok {
		c.Diff = iv
	} else {
		c.Diff = Interval{Est: c.SA.Mean - c.SB.Mean, Lo: math.NaN(), Hi: math.NaN()}
	}
	c.judge()
	return c, true
}

// valPPL is the per-seed validation perplexity of an arm.
func valPPL(ar ArmResults) []float64 { return seedValues(ar, "val_ppl") }

// Findings judges the papers' claims against the results under out.
func Findings(out string) ([]Claim, error) {
	rs, err := collectAll(out)
	if err != nil {
		return nil, err
	}
	claims := []Claim{
		rs.ropeClaim(), rs.switchesClaim(), rs.dmClaim(), rs.bestSetClaim(),
		rs.cdmoeClaim(), rs.moeClaim(), rs.mqarClaim(), rs.extrapolationClaim(),
	}
	for i := range claims {
		claims[i].judge()
	}
	return claims, nil
}

var table1Sets3 = []struct{ slug, title string }{{"ssd", "SSD"}, {"ssd-qcatn", "SSD + QCAtn"}, {"ssd-ifa", "SSD + IFA"}, {"ssd-ifa-dm", "SSD + IFA + DM"}}

func (rs results) ropeClaim() Claim {
	cl := Claim{
		Title:  "RoPE gives SSD a lower perplexity than Conv1d+D and than a_t",
		Source: "WM Table 1; TransXSSM Table 2",
		Paper:  "at length 8192, RoPE has the lowest ppl in every module set with SSD (e.g. SSD 8.33 vs 8.56 Conv1d+D and 8.62 a_t).",
	}
	for _, exp := range []string{"table1", "ssdlong"} {
		for _, p := range rs.presets(exp) {
			for _, set := range table1Sets3 {
				for _, other := range []struct{ slug, title string }{{"a_t", "a_t"}, {"conv1d-D", "Conv1d+D"}} {
					cl.add(rs.compare(exp, p, set.title+": RoPE vs "+other.title, set.slug+".rope", set.slug+"."+other.slug, -1, 2, valPPL))
				}
			}
		}
	}
	cl.Notes = []string{"ssdlong is table1's SSD rows at 8× the context (1024 bytes at small): the claim is made at 8192 tokens."}
	return cl
}

func (rs results) switchesClaim() Claim {
	cl := Claim{
		Title:   "SSD's positional switches one at a time (measured effects, not a paper claim)",
		Source:  "WM Table 1's variants, split",
		Paper:   "the paper's variants change two switches at once (Conv1d+D = conv and D; RoPE = RoPE and D; a_t = none), so it does not report these.",
		Informs: true,
	}
	pairs := []struct{ what, a, b string }{
		{"D alone: D only vs a_t", "d-only", "a_t"},
		{"conv alone: conv only vs a_t", "conv-only", "a_t"},
		{"RoPE alone: RoPE only vs a_t", "rope-only", "a_t"},
		{"conv given D: Conv1d+D vs D only", "conv1d-D", "d-only"},
		{"RoPE given D: RoPE vs D only", "rope", "d-only"},
	}
	for _, exp := range []string{"table1", "ssdlong"} {
		for _, p := range rs.presets(exp) {
			for _, pr := range pairs {
				cl.add(rs.compare(exp, p, "SSD "+pr.what, "ssd."+pr.a, "ssd."+pr.b, 0, 2, valPPL))
			}
		}
	}
	cl.Notes = []string{"A − B < 0 means the switch lowers perplexity."}
	return cl
}

func (rs results) dmClaim() Claim {
	cl := Claim{
		Title:  "the dynamic mask improves inner-function attention",
		Source: "WM Table 1",
		Paper:  "SSD + IFA + DM has a lower ppl than SSD + IFA for every SSD variant (7.96 vs 8.12 with RoPE).",
	}
	for _, p := range rs.presets("table1") {
		for _, v := range []struct{ slug, title string }{{"rope", "RoPE"}, {"a_t", "a_t"}, {"conv1d-D", "Conv1d+D"}} {
			cl.add(rs.compare("table1", p, "IFA + DM vs IFA ("+v.title+")", "ssd-ifa-dm."+v.slug, "ssd-ifa."+v.slug, -1, 2, valPPL))
		}
		cl.add(rs.compare("table1", p, "IFA + DM (doge) vs IFA (RoPE), not in the paper", "ssd-ifa-doge.rope", "ssd-ifa.rope", 0, 2, valPPL))
	}
	cl.Notes = []string{"DM (paper) is a learned post-softmax gain per key position (our reading of eq. 4); DM (doge) is the value-dependent pre-softmax bias of the authors' later code. IFA's retrieval keys get no gradient (top-k)."}
	return cl
}

func (rs results) bestSetClaim() Claim {
	cl := Claim{
		Title:  "SSD + IFA + DM is the best module set",
		Source: "WM Table 1 (RoPE column)",
		Paper:  "SSD + IFA + DM 7.96, below SSD + IFA 8.12, SSD + QCAtn 8.18, SSD 8.33 and QCAtn 8.38.",
	}
	for _, p := range rs.presets("table1") {
		for _, o := range []struct{ slug, title string }{{"qcatn", "QCAtn"}, {"ssd", "SSD"}, {"ssd-qcatn", "SSD + QCAtn"}, {"ssd-ifa", "SSD + IFA"}} {
			cl.add(rs.compare("table1", p, "SSD + IFA + DM vs "+o.title+" (RoPE)", "ssd-ifa-dm.rope", o.slug+".rope", -1, 2, valPPL))
		}
	}
	return cl
}

func (rs results) cdmoeClaim() Claim {
	cl := Claim{
		Title:  "more CDMoE in place of MLP gives a lower perplexity at equal parameters",
		Source: "WM Table 2",
		Paper:  "ppl falls from 8.18 (0% CDMoE) to 7.49 (50%); dense MLPs in the first and last state transformations (37.5%, 7.52) are close to all-CDMoE.",
	}
	for _, p := range rs.presets("table2") {
		arms := rs["table2"][p]
		var xs, ys []float64
		seeds := math.MaxInt
		for _, ar := range arms {
			vs := valPPL(ar)
			seeds = min(seeds, len(vs))
			for _, v := range vs {
				xs, ys = append(xs, ar.Arm.Values["cdmoe_ratio"]), append(ys, v)
			}
		}
		if len(xs) > 0 {
			c := Comparison{Experiment: "table2", Preset: p, What: "slope of val ppl over the CDMoE ratio (all rows, all seeds)", A: "all rows", Want: -1, Seeds: seeds, Digits: 2,
				SA: meanSD(ys), SB: Stat{Mean: math.NaN()}}
			if iv, ok := Slope(xs, ys); ok {
				c.Diff = iv
			} else {
				c.Diff = Interval{Est: math.NaN(), Lo: math.NaN(), Hi: math.NaN()}
			}
			c.judge()
			cl.Rows = append(cl.Rows, c)
		}
		cl.add(rs.compare("table2", p, "all-CDMoE (row 6) vs all-MLP (row 1)", "row6", "row1", -1, 2, valPPL))
		for k := 2; k <= 5; k++ {
			cl.add(rs.compare("table2", p, fmt.Sprintf("row %d vs all-MLP (row 1)", k), fmt.Sprintf("row%d", k), "row1", 0, 2, valPPL))
		}
		cl.add(rs.compare("table2", p, "dense first and last (row 5) vs all-CDMoE (row 6)", "row5", "row6", 0, 2, valPPL))
	}
	cl.Notes = []string{"the slope is per unit of CDMoE ratio (0 → 1) of the pattern that runs; rows 2–5 and row 5 vs row 6 inform and are not part of the verdict."}
	return cl
}

func (rs results) moeClaim() Claim {
	cl := Claim{
		Title:  "MoE-SEI and CDMoE beat a routed MoE at equal total and active parameters",
		Source: "WM Table 3",
		Paper:  "on C-Eval (not reproducible offline): CDMoE best on every task, MoE-SEI above MoE on average. Here: validation perplexity.",
	}
	for _, p := range rs.presets("table3") {
		for _, o := range []struct{ slug, title string }{{"moe-sei", "MoE-SEI"}, {"cdmoe", "CDMoE"}} {
			cl.add(rs.compare("table3", p, o.title+" vs MoE", o.slug, "moe", -1, 2, valPPL))
		}
	}
	return cl
}

func (rs results) mqarClaim() Claim {
	cl := Claim{
		Title:  "IFA + DM recalls best on MQAR at the longest sequence length",
		Source: "WM Figure 5",
		Paper:  "a figure (no numbers): IFA with the dynamic mask keeps the highest accuracy as the sequence grows.",
	}
	for _, p := range rs.presets("mqar") {
		arms := rs["mqar"][p]
		longest := 0
		dms := map[string]bool{}
		for _, ar := range arms {
			if T, err := strconv.Atoi(ar.Arm.Label("seq_len")); err == nil && len(ar.Seeds) > 0 {
				longest = max(longest, T)
			}
			dms[ar.Arm.Label("d_model")] = true
		}
		var ds []int
		for d := range dms {
			if v, err := strconv.Atoi(d); err == nil {
				ds = append(ds, v)
			}
		}
		sort.Ints(ds)
		for _, d := range ds {
			for _, o := range []struct{ slug, title string }{{"qcatn", "QCAtn"}, {"ssd", "SSD"}, {"ifa", "IFA"}} {
				a, b := fmt.Sprintf("ifa-dm.d%d.t%d", d, longest), fmt.Sprintf("%s.d%d.t%d", o.slug, d, longest)
				acc := func(ar ArmResults) []float64 { return seedValues(ar, "accuracy") }
				cl.add(rs.compare("mqar", p, fmt.Sprintf("IFA + DM vs %s (d_model %d, length %d)", o.title, d, longest), a, b, +1, 3, acc))
			}
		}
	}
	return cl
}

func (rs results) extrapolationClaim() Claim {
	cl := Claim{
		Title:  "CoCA with dynamic NTK extrapolates flattest",
		Source: "CoCA Tables 1–2",
		Paper:  "from 512 to 32k tokens, CoCA + NTK's sliding-window ppl grows least (20.1 → 101) against RoPE (19.7 → ∞), RoPE + NTK (→ 381) and CoCA (→ 172).",
	}
	for _, p := range rs.presets("extrapolation") {
		// growth is ppl at the longest evaluation length over ppl at the
		// training length, per seed.
		growth := func(ar ArmResults) []float64 {
			var out []float64
			T := ar.Arm.Train.SeqLen
			for _, s := range ar.Seeds {
				longest := 0
				for k := range s.Result.Measures {
					if n, ok := strings.CutPrefix(k, "ppl@"); ok {
						if v, err := strconv.Atoi(n); err == nil {
							longest = max(longest, v)
						}
					}
				}
				base, ok1 := s.Result.Measures[fmt.Sprintf("ppl@%d", T)]
				far, ok2 := s.Result.Measures[fmt.Sprintf("ppl@%d", longest)]
				if ok1 && ok2 && base > 0 {
					out = append(out, far/base)
				}
			}
			return out
		}
		for _, o := range []struct{ slug, title string }{{"rope", "RoPE"}, {"rope-ntk", "RoPE + NTK"}, {"coca", "CoCA"}} {
			cl.add(rs.compare("extrapolation", p, "ppl growth (longest ÷ training length): CoCA + NTK vs "+o.title, "coca-ntk", o.slug, -1, 2, growth))
		}
	}
	return cl
}

// FindingsMarkdown writes the claims as findings.md: a summary table, then
// per claim the paper's statement, the comparisons and the verdict.
func FindingsMarkdown(out string, claims []Claim) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# Findings: the papers' claims against measured results\n\n")
	fmt.Fprintf(&b, "Generated by `wm findings %s` from the saved results; nothing here is typed in by hand.\n\n", out)
	b.WriteString("How to read it. Each comparison is A − B of a per-seed measure (validation perplexity unless it says otherwise): the difference of the means over seeds with a 95% confidence interval by Welch's t (unequal variances). A comparison that tests a claim is **reproduced** when its interval lies entirely on the paper's side of zero, **not reproduced** when it lies entirely on the other side, and **inconclusive** when it holds zero or an arm has fewer than ")
	fmt.Fprintf(&b, "%d seeds. A claim is reproduced when all its comparisons are, not reproduced when at least one goes significantly against it, inconclusive otherwise. Comparisons marked *informs* are measured effects without a claim. These are byte-level models on the KJV, thousands of times smaller and shorter-trained than the papers': a verdict says what holds at this scale, not whether the paper is right at its own.\n\n", MinSeeds)
	b.WriteString("## Summary\n\n| # | claim | source | verdict | why |\n| --- | --- | --- | --- | --- |\n")
	for i, cl := range claims {
		fmt.Fprintf(&b, "| %d | %s | %s | **%s** | %s |\n", i+1, cl.Title, cl.Source, cl.Verdict, cl.Why)
	}
	for i, cl := range claims {
		fmt.Fprintf(&b, "\n## %d. %s\n\n*%s.* Paper: %s\n\n", i+1, cl.Title, cl.Source, cl.Paper)
		if len(cl.Rows) == 0 {
			b.WriteString("No results: run the experiments named above (`wm run NAME --preset small --seeds 3 --out RESULTS`).\n")
		} else {
			b.WriteString("| experiment | preset | comparison | A (mean ± sd) | B (mean ± sd) | A − B [95% CI] | A − B (% of B) | seeds | verdict |\n| --- | --- | --- | --- | --- | --- | --- | --- | --- |\n")
			var notRun []string
			for _, r := range cl.Rows {
				if r.Seeds == 0 {
					notRun = append(notRun, fmt.Sprintf("%s %s (%s)", r.Experiment, r.Preset, r.What))
					continue
				}
				rel := "—"
				if r.B != "" && r.SB.Mean != 0 && !math.IsNaN(r.SB.Mean) && !math.IsNaN(r.Diff.Est) {
					rel = fmt.Sprintf("%+.1f%%", 100*r.Diff.Est/r.SB.Mean)
				}
				ci := fmt.Sprintf("%+.*f", r.Digits+1, r.Diff.Est)
				if !math.IsNaN(r.Diff.Lo) {
					ci += fmt.Sprintf(" [%+.*f, %+.*f]", r.Digits+1, r.Diff.Lo, r.Digits+1, r.Diff.Hi)
				}
				sb := "—"
				if r.B != "" {
					sb = fmt.Sprintf("%s: %s", r.B, statSD(r.SB, r.Digits))
				} else {
					ci = "slope " + ci
				}
				verdict := r.Verdict
				if r.Want == 0 && r.Seeds >= MinSeeds {
					verdict = "*informs:* " + verdict
				}
				fmt.Fprintf(&b, "| %s | %s | %s | %s: %s | %s | %s | %s | %d | %s |\n", r.Experiment, r.Preset, r.What, r.A, statSD(r.SA, r.Digits), sb, ci, rel, r.Seeds, verdict)
			}
			if len(notRun) > 0 {
				b.WriteString("\nNo results yet for: " + strings.Join(notRun, "; ") + ".\n")
			}
		}
		fmt.Fprintf(&b, "\n**Verdict: %s.** %s.\n", cl.Verdict, strings.ToUpper(cl.Why[:1])+cl.Why[1:])
		for _, n := range cl.Notes {
			b.WriteString("\n- " + n)
		}
		if len(cl.Notes) > 0 {
			b.WriteString("\n")
		}
	}
	return b.String()
}

// statSD prints mean ± sd (the sd whenever there is more than one seed).
func statSD(s Stat, digits int) string {
	if s.N > 1 {
		return format(s.Mean, digits) + " ± " + format(s.SD, digits)
	}
	return format(s.Mean, digits)
}

// WriteFindings judges the claims against the results under out and
// writes the Markdown atomically to path (default out/findings.md).
func WriteFindings(out, path string) (string, []Claim, error) {
	claims, err := Findings(out)
	if err != nil {
		return "", nil, err
	}
	if path == "" {
		path = filepath.Join(out, "findings.md")
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return "", nil, errors.Wrap(err, "findings")
	}
	return path, claims, atomicfile.WriteBytes(path, []byte(FindingsMarkdown(out, claims)))
}
