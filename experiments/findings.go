package experiments

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/wonderful-matrices/wonderful-matrices-go/plots"
)

// The verdicts of a claim.
const (
	Reproduced    = "reproduced"
	NotReproduced = "not reproduced"
	Inconclusive  = "inconclusive at this scale"
	NotRun        = "not run"
)

// MinSeeds is the number of seeds per arm a verdict needs; NoisyMinSeeds
// the number an arm needs when its sd exceeds NoisyCV of its mean.
const (
	MinSeeds      = 3
	NoisyMinSeeds = 5
)

// FamilyAlpha is the family-wise error rate of each claim's comparisons
// (Holm–Bonferroni over the comparisons that test the claim).
const FamilyAlpha = 0.05

// Comparison is one measured difference: A − B of a per-seed value, paired
// over the seeds both arms ran when there are at least two (a seed fixes
// the order of the training data, shared by the arms of an experiment),
// Welch's unpaired t otherwise; or a slope, or A against a threshold.
type Comparison struct {
	Experiment, Preset string
	// What the comparison reads ("SSD: RoPE vs a_t").
	What string
	// A and B name the arms (B is the threshold or "" for a trend).
	A, B   string
	SA, SB Stat
	// Diff is the estimate with its interval at confidence 1 − Alpha:
	// the Holm step-down level for a comparison that tests a claim, 95%
	// for one that informs.
	Diff  Interval
	Alpha float64
	// PHolm is the Holm-adjusted p-value within the claim (NaN when the
	// comparison informs or has no test).
	PHolm float64
	// Test names the test ("paired t", "Welch t", "regression t",
	// "one-sample t").
	Test string
	// Want is the sign of A − B the claim predicts (−1, +1), 0 for a
	// comparison that only informs.
	Want int
	// Seeds is the number of pairs (paired), or the fewest seeds of A and B.
	Seeds int
	// Noisy names an arm whose sd exceeds NoisyCV of its mean with fewer
	// than NoisyMinSeeds seeds ("" when none).
	Noisy   string
	Verdict string
	// Digits of the values in the table.
	Digits int
}

// Claim is one claim of the papers (or a positive control) with the
// comparisons that test it.
type Claim struct {
	Title, Source string
	// Paper is what the paper reports for it (for a control: why the
	// effect is known).
	Paper   string
	Rows    []Comparison
	Verdict string
	// Why says how the rows led to the verdict.
	Why   string
	Notes []string
	// Informs marks a set of measured effects that no paper claims: it
	// gets no verdict.
	Informs bool
	// Control marks a positive control: an effect known to exist, which
	// must come out reproduced, or the instrument is suspect.
	Control bool
	// Figure is the base name of a plot drawn beside findings.md by plot,
	// "" for none.
	Figure string
	plot   func() plots.Lines
}

// Measured is the verdict of a set of comparisons that tests no claim.
const Measured = "measured (no claim)"

// judge sets the comparison's verdict from its interval (already at its
// level): reproduced when the interval lies on the claim's side of zero,
// not reproduced when on the other side, inconclusive when it holds zero,
// when there are fewer than MinSeeds seeds, or when an arm is noisy with
// fewer than NoisyMinSeeds.
func (c *Comparison) judge() {
	switch {
	case c.Seeds == 0:
		c.Verdict = NotRun
	case c.Seeds < MinSeeds:
		c.Verdict = fmt.Sprintf("%s (%d seed(s), %d needed)", Inconclusive, c.Seeds, MinSeeds)
	case c.Want != 0 && c.Noisy != "":
		c.Verdict = fmt.Sprintf("%s (%s varies by more than %.0f%% over seeds: %d seeds needed)", Inconclusive, c.Noisy, 100*NoisyCV, NoisyMinSeeds)
	case math.IsNaN(c.Diff.Lo):
		c.Verdict = Inconclusive + " (no test)"
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

// correct moves the intervals of the rows that test the claim to Holm's
// step-down levels at FamilyAlpha (so that an interval excludes zero
// exactly when Holm rejects), records the adjusted p-values, and judges
// every row. Rows that inform keep their 95% intervals.
func (cl *Claim) correct() {
	var idx []int
	var ps []float64
	for i, r := range cl.Rows {
		cl.Rows[i].PHolm = math.NaN()
		cl.Rows[i].Alpha = 0.05
		if r.Want != 0 && r.Seeds >= MinSeeds && !math.IsNaN(r.Diff.P) {
			idx = append(idx, i)
			ps = append(ps, r.Diff.P)
		}
	}
	adj, lv := Holm(ps), HolmAlphas(ps, FamilyAlpha)
	for k, i := range idx {
		r := &cl.Rows[i]
		r.PHolm, r.Alpha = adj[k], lv[k]
		r.Diff = r.Diff.At(lv[k])
	}
	for i := range cl.Rows {
		cl.Rows[i].judge()
	}
}

// judge corrects and judges the rows, then sets the claim's verdict from
// the rows that test it (Want ≠ 0): reproduced when every one is; not
// reproduced when at least one goes significantly against the claim;
// inconclusive otherwise; not run when no row has results.
func (cl *Claim) judge() {
	cl.correct()
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
		case r.Seeds < MinSeeds || (r.Noisy != "" && r.Verdict != Reproduced && r.Verdict != NotReproduced):
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
	side := "the paper"
	if cl.Control {
		side = "the known effect"
	}
	switch {
	case cl.Informs && len(cl.Rows) > notRun:
		cl.Verdict, cl.Why = Measured, "effects measured without a claim of the papers to test"
	case run == 0:
		cl.Verdict, cl.Why = NotRun, "no results for this claim's experiments under the results folder"
	case few > 0:
		cl.Verdict, cl.Why = Inconclusive, fmt.Sprintf("%d of %d comparisons have too few seeds (%d per arm, %d for an arm whose sd exceeds %.0f%% of its mean)", few, run, MinSeeds, NoisyMinSeeds, 100*NoisyCV)
	case rep == run:
		cl.Verdict, cl.Why = Reproduced, fmt.Sprintf("all %d comparisons go %s's way, each Holm-corrected interval excluding zero", run, side)
	case against > 0:
		cl.Verdict = NotReproduced
		cl.Why = fmt.Sprintf("%d of %d comparisons go significantly against %s, %d with it, %d within noise (Holm-corrected)", against, run, side, rep, run-rep-against)
	default:
		cl.Verdict = Inconclusive
		cl.Why = fmt.Sprintf("%d of %d comparisons go %s's way, the other %d are within noise (Holm-corrected interval holds zero)", rep, run, side, run-rep)
	}
}

// add appends the comparison c when ok (both arms exist).
func (cl *Claim) add(c Comparison, ok bool) {
	if ok {
		cl.Rows = append(cl.Rows, c)
	}
}

// seedMeasure is a per-seed value of an arm, by seed.
type seedMeasure func(ArmResults) map[int]float64

// measureOf is the measure key of an arm at each seed that has it.
func measureOf(key string) seedMeasure {
	return func(ar ArmResults) map[int]float64 {
		out := map[int]float64{}
		for _, s := range ar.Seeds {
			if v, ok := value(ar.Arm, s.Result, key); ok {
				out[s.Seed] = v
			}
		}
		return out
	}
}

// testPPL is the per-seed test perplexity: every perplexity claim reads it.
var testPPL = measureOf("test_ppl")

// values lists a per-seed map's values in seed order.
func values(m map[int]float64) []float64 {
	var seeds []int
	for s := range m {
		seeds = append(seeds, s)
	}
	sort.Ints(seeds)
	out := make([]float64, len(seeds))
	for i, s := range seeds {
		out[i] = m[s]
	}
	return out
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

// presets lists the presets of an experiment that have results, in size
// order; tiny is left out when a larger preset has results (tiny runs are
// smoke tests, not evidence).
func (rs results) presets(exp string) []string {
	var out []string
	for _, p := range Presets {
		if _, ok := rs[exp][p]; ok {
			out = append(out, p)
		}
	}
	if len(out) > 1 && out[0] == Tiny {
		out = out[1:]
	}
	return out
}

// side is one side of a comparison: an arm of an experiment at a preset
// and the per-seed value read from it.
type side struct {
	exp, preset, arm string
	f                seedMeasure
}

func (rs results) arm(s side) (ArmResults, bool) {
	ar, ok := rs[s.exp][s.preset][s.arm]
	return ar, ok
}

// label names a side in a table: the arm, with its preset when the other
// side's differs.
func (s side) label(other side) string {
	if s.preset != other.preset || s.exp != other.exp {
		return fmt.Sprintf("%s (%s %s)", s.arm, s.exp, s.preset)
	}
	return s.arm
}

// noisy names the sides whose values vary by more than NoisyCV of their
// mean with fewer than NoisyMinSeeds seeds.
func noisy(names []string, stats []Stat) string {
	var out []string
	for i, st := range stats {
		if st.N < NoisyMinSeeds && st.N > 1 && st.SD > NoisyCV*math.Abs(st.Mean) {
			out = append(out, names[i])
		}
	}
	return strings.Join(out, " and ")
}

// compareSides is A − B with the claim's sign want: paired over the seeds
// both have when there are at least two, Welch otherwise; ok is false when
// an arm is missing.
func (rs results) compareSides(what string, a, b side, want, digits int) (Comparison, bool) {
	A, okA := rs.arm(a)
	B, okB := rs.arm(b)
	if !okA || !okB {
		return Comparison{}, false
	}
	ma, mb := a.f(A), b.f(B)
	va, vb := values(ma), values(mb)
	c := Comparison{Experiment: a.exp, Preset: a.preset, What: what, A: a.label(b), B: b.label(a), SA: meanSD(va), SB: meanSD(vb), Want: want, Digits: digits}
	if a.preset != b.preset {
		c.Preset = a.preset + " vs " + b.preset
	}
	var pa, pb []float64
	for s, v := range ma {
		if w, ok := mb[s]; ok {
			pa, pb = append(pa, v), append(pb, w)
		}
	}
	if iv, ok := PairedDiff(pa, pb); ok {
		c.Diff, c.Test, c.Seeds = iv, fmt.Sprintf("paired t (%d seeds)", len(pa)), len(pa)
	} else if iv, ok := WelchDiff(va, vb); ok {
		c.Diff, c.Test, c.Seeds = iv, "Welch t", min(len(va), len(vb))
	} else {
		c.Diff, c.Seeds = Interval{Est: c.SA.Mean - c.SB.Mean, Lo: math.NaN(), Hi: math.NaN(), P: math.NaN()}, min(len(va), len(vb))
	}
	c.Noisy = noisy([]string{c.A, c.B}, []Stat{c.SA, c.SB})
	return c, true
}

// compare is arm a against arm b of exp at preset on the per-seed values f.
//
// At a preset other than the experiment's first (medium beside small), a
// comparison is made only where both arms ran there, and otherwise left out
// rather than listed as having no results: a larger preset runs a chosen
// subset of the arms (findings-runs.sh runs table1's SSD rows at medium).
// At the first preset every comparison is listed.
func (rs results) compare(exp, preset, what, a, b string, want, digits int, f seedMeasure) (Comparison, bool) {
	if ps := rs.presets(exp); len(ps) > 0 && preset != ps[0] && (!rs.ran(exp, preset, a) || !rs.ran(exp, preset, b)) {
		return Comparison{}, false
	}
	return rs.compareSides(what, side{exp, preset, a, f}, side{exp, preset, b, f}, want, digits)
}

// ran says whether arm has at least one finished seed at preset.
func (rs results) ran(exp, preset, arm string) bool {
	ar, ok := rs[exp][preset][arm]
	return ok && len(ar.Seeds) > 0
}

// threshold is arm a's per-seed value against a fixed level (A − level),
// by the one-sample t test.
func (rs results) threshold(exp, preset, what, arm string, f seedMeasure, level float64, want, digits int) (Comparison, bool) {
	A, ok := rs[exp][preset][arm]
	if !ok {
		return Comparison{}, false
	}
	va := values(f(A))
	st := meanSD(va)
	c := Comparison{Experiment: exp, Preset: preset, What: what, A: arm, B: fmt.Sprintf("%g", level), SA: st, SB: Stat{Mean: level, N: 1},
		Want: want, Digits: digits, Seeds: len(va), Test: "one-sample t"}
	if len(va) >= 2 {
		c.Diff = tInterval(st.Mean-level, st.SD/math.Sqrt(float64(len(va))), float64(len(va)-1))
	} else {
		c.Diff = Interval{Est: st.Mean - level, Lo: math.NaN(), Hi: math.NaN(), P: math.NaN()}
	}
	c.Noisy = noisy([]string{arm}, []Stat{st})
	return c, true
}

// Findings judges the positive controls and the papers' claims against the
// results under out, controls first.
func Findings(out string) ([]Claim, error) {
	rs, err := collectAll(out)
	if err != nil {
		return nil, err
	}
	claims := []Claim{
		rs.recallControl(), rs.extrapolationControl(), rs.longerTrainingControl(),
		rs.ropeClaim(), rs.switchesClaim(), rs.dmClaim(), rs.bestSetClaim(),
		rs.cdmoeClaim(), rs.moeClaim(), rs.mqarClaim(), rs.extrapolationClaim(), rs.scaleTrend(),
	}
	for i := range claims {
		claims[i].judge()
	}
	return claims, nil
}
