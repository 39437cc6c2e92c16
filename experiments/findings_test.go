package experiments

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A comparison's verdict follows its interval and the claim's sign; a
// claim's verdict follows its rows.
func TestVerdictRules(t *testing.T) {
	row := func(lo, hi float64, want, seeds int) Comparison {
		c := Comparison{Diff: Interval{Est: (lo + hi) / 2, Lo: lo, Hi: hi}, Want: want, Seeds: seeds}
		c.judge()
		return c
	}
	for _, c := range []struct {
		lo, hi      float64
		want, seeds int
		verdict     string
	}{
		{-2, -1, -1, 3, Reproduced},
		{1, 2, -1, 3, NotReproduced},
		{-1, 1, -1, 3, Inconclusive},
		{1, 2, +1, 3, Reproduced},
		{-2, -1, -1, 2, Inconclusive + " (2 seed(s), 3 needed)"},
		{-2, -1, 0, 3, "A lower"},
		{-1, 1, 0, 3, "no difference resolved"},
		{0, 0, -1, 0, NotRun},
	} {
		if got := row(c.lo, c.hi, c.want, c.seeds).Verdict; got != c.verdict {
			t.Errorf("[%g, %g] want %d seeds %d: %q, want %q", c.lo, c.hi, c.want, c.seeds, got, c.verdict)
		}
	}
	claim := func(rows ...Comparison) Claim {
		cl := Claim{Rows: rows}
		cl.judge()
		return cl
	}
	rep, against, noise, few := row(-2, -1, -1, 3), row(1, 2, -1, 3), row(-1, 1, -1, 3), row(-2, -1, -1, 2)
	info := row(1, 2, 0, 3)
	for _, c := range []struct {
		cl   Claim
		want string
	}{
		{claim(rep, rep, info), Reproduced},
		{claim(rep, against), NotReproduced},
		{claim(rep, noise), Inconclusive},
		{claim(rep, few), Inconclusive},
		{claim(row(0, 0, -1, 0)), NotRun},
		{claim(), NotRun},
	} {
		if c.cl.Verdict != c.want {
			t.Errorf("rows %v: %q (%s), want %q", c.cl.Rows, c.cl.Verdict, c.cl.Why, c.want)
		}
	}
	if !strings.Contains(claim(rep, against, noise).Why, "1 of 3 comparisons go significantly against the paper, 1 with it, 1 within noise") {
		t.Errorf("why: %q", claim(rep, against, noise).Why)
	}
	informs := Claim{Informs: true, Rows: []Comparison{info}}
	informs.judge()
	if informs.Verdict != Measured {
		t.Errorf("a claim that only informs: %q", informs.Verdict)
	}
}

// table3 at tiny with 3 seeds: the MoE claim gets its two comparisons with
// 3 seeds, intervals around the difference of the means and a verdict;
// claims whose experiments did not run say so; findings.md holds them all.
func TestFindingsFromResults(t *testing.T) {
	out := t.TempDir()
	def, _ := Lookup("table3")
	if _, err := (Runner{Out: out, Preset: Tiny, Seeds: 3}).Run(def); err != nil {
		t.Fatal(err)
	}
	path, claims, err := WriteFindings(out, "")
	if err != nil {
		t.Fatal(err)
	}
	var moe *Claim
	for i := range claims {
		if strings.HasPrefix(claims[i].Title, "MoE-SEI and CDMoE") {
			moe = &claims[i]
		} else if claims[i].Verdict != NotRun {
			t.Errorf("%q: %q with only table3 run", claims[i].Title, claims[i].Verdict)
		}
	}
	if moe == nil || len(moe.Rows) != 3 {
		t.Fatalf("the MoE claim: %+v", moe)
	}
	for _, r := range moe.Rows[:2] {
		if r.Seeds != 3 || !(r.Diff.Lo <= r.Diff.Est && r.Diff.Est <= r.Diff.Hi) || math.Abs(r.Diff.Est-(r.SA.Mean-r.SB.Mean)) > 1e-12 {
			t.Errorf("%s: %+v", r.What, r)
		}
		if r.Verdict != Reproduced && r.Verdict != NotReproduced && !strings.HasPrefix(r.Verdict, Inconclusive) {
			t.Errorf("%s: verdict %q", r.What, r.Verdict)
		}
	}
	if moe.Verdict == NotRun {
		t.Errorf("MoE claim not judged: %s", moe.Why)
	}
	md, err := os.ReadFile(path)
	if err != nil || filepath.Base(path) != "findings.md" {
		t.Fatalf("%s: %v", path, err)
	}
	for _, want := range []string{"## Positive controls", "## The papers' claims", "| table3 | tiny | MoE-SEI vs MoE |", "paired t (3 seeds)", "**Verdict: " + moe.Verdict, "## 11. CoCA with dynamic NTK"} {
		if !strings.Contains(string(md), want) {
			t.Errorf("findings.md lacks %q", want)
		}
	}
	if _, err := Findings(filepath.Join(out, "nope")); err == nil {
		t.Error("a missing folder gave no error")
	}
}

// The README's summary block is rewritten between its markers, and only
// there; a file without the markers is an error that changes nothing.
func TestReplaceSummary(t *testing.T) {
	dir := t.TempDir()
	readme := filepath.Join(dir, "README.md")
	body := "# title\n\nbefore\n\n" + SummaryStart + "\nold table\n" + SummaryEnd + "\n\nafter\n"
	if err := os.WriteFile(readme, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	claims := []Claim{{Title: "a control", Control: true, Verdict: Reproduced, Why: "w1"}, {Title: "a claim", Verdict: Inconclusive, Why: "w2"}}
	if err := ReplaceSummary(readme, "docs/findings.md", claims); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(readme)
	got := string(b)
	for _, want := range []string{"before\n\n" + SummaryStart, "#### Positive controls", "| 1 | a control |  | **reproduced** | w1 |", "| 2 | a claim |  | **inconclusive at this scale** | w2 |", "[docs/findings.md](docs/findings.md)", SummaryEnd + "\n\nafter\n"} {
		if !strings.Contains(got, want) {
			t.Errorf("README lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "old table") {
		t.Errorf("the old block survived:\n%s", got)
	}
	plain := filepath.Join(dir, "plain.md")
	os.WriteFile(plain, []byte("no markers\n"), 0o644)
	if err := ReplaceSummary(plain, "f.md", claims); err == nil {
		t.Error("a file without markers was accepted")
	}
	if b, _ := os.ReadFile(plain); string(b) != "no markers\n" {
		t.Errorf("the file without markers changed: %q", b)
	}
}

// At a larger preset that ran only some arms, a comparison with an arm that
// did not run there is left out; at the first preset it is listed as having
// no results.
func TestCompareLeavesOutUnrunSetsAtLargerPresets(t *testing.T) {
	seeds := []SeedResult{{Seed: 0}}
	rs := results{"table1": {
		Small:  {"a": {}, "b": {}, "c": {Seeds: seeds}},
		Medium: {"a": {}, "b": {}, "c": {Seeds: seeds}},
	}}
	if _, ok := rs.compare("table1", Medium, "a vs b", "a", "b", -1, 2, testPPL); ok {
		t.Error("medium: a comparison of two arms that did not run there was kept")
	}
	if c, ok := rs.compare("table1", Small, "a vs b", "a", "b", -1, 2, testPPL); !ok || c.Seeds != 0 {
		t.Errorf("small: ok %v, seeds %d; want the comparison listed with no results", ok, c.Seeds)
	}
	if _, ok := rs.compare("table1", Medium, "a vs c", "a", "c", -1, 2, testPPL); ok {
		t.Error("medium: a comparison with an arm that did not run there was kept")
	}
	if c, ok := rs.compare("table1", Small, "a vs c", "a", "c", -1, 2, testPPL); !ok || c.Seeds != 0 {
		t.Errorf("small, one arm ran: ok %v, seeds %d; want it listed with no results", ok, c.Seeds)
	}
}
