package experiments

import (
	"math"
	"testing"
)

// Welch's interval and the regression slope against values computed by
// hand (scipy.stats gives the same t quantiles: 4.302653 for 2 df).
func TestWelchAndSlope(t *testing.T) {
	if q := tQuantile975(2); math.Abs(q-4.302653) > 1e-5 {
		t.Fatalf("t(0.975, 2) = %v, want 4.302653", q)
	}
	// Equal n and sd: df = 2(n−1) = 4, se = sqrt(2·1/3), t(0.975,4) = 2.776445.
	iv, ok := WelchDiff([]float64{4, 5, 6}, []float64{6, 7, 8})
	se := math.Sqrt(2.0 / 3)
	if !ok || iv.Est != -2 || math.Abs(iv.DF-4) > 1e-9 || math.Abs(iv.Hi-(-2+2.776445*se)) > 1e-5 {
		t.Fatalf("welch: %+v", iv)
	}
	if _, ok := WelchDiff([]float64{1}, []float64{1, 2}); ok {
		t.Error("one value gave an interval")
	}
	if iv, ok := WelchDiff([]float64{1, 1}, []float64{2, 2}); !ok || iv.Lo != -1 || iv.Hi != -1 {
		t.Errorf("no spread: %+v", iv)
	}
	// y = 2 − x exactly: slope −1 with a zero-width interval.
	iv, ok = Slope([]float64{0, 1, 2, 3}, []float64{2, 1, 0, -1})
	if !ok || math.Abs(iv.Est+1) > 1e-12 || math.Abs(iv.Hi-iv.Lo) > 1e-12 {
		t.Errorf("slope: %+v", iv)
	}
	if _, ok := Slope([]float64{1, 1, 1}, []float64{1, 2, 3}); ok {
		t.Error("no spread in x gave a slope")
	}
}

// The paired t test against a hand computation: differences {1, 2, 1, 3},
// mean 1.75, sd sqrt(2.75/3), se sd/2, t = 3.655631 on 3 df; t(0.975, 3)
// = 3.182446; the p-value from the closed form of t's CDF on 3 df,
// F(t) = 1/2 + (t/(√3(1+t²/3)) + atan(t/√3))/π.
func TestPairedDiff(t *testing.T) {
	iv, ok := PairedDiff([]float64{5, 7, 6, 9}, []float64{4, 5, 5, 6})
	se := math.Sqrt(2.75/3) / 2
	if !ok || iv.Est != 1.75 || iv.DF != 3 || math.Abs(iv.SE-se) > 1e-12 {
		t.Fatalf("paired: %+v", iv)
	}
	if math.Abs(iv.Lo-(1.75-3.182446*se)) > 1e-5 || math.Abs(iv.Hi-(1.75+3.182446*se)) > 1e-5 {
		t.Errorf("interval [%v, %v], want 1.75 ± %v", iv.Lo, iv.Hi, 3.182446*se)
	}
	if math.Abs(iv.P-0.0353528470) > 1e-8 {
		t.Errorf("p = %v, want 0.0353528470", iv.P)
	}
	// An interval at level alpha excludes zero exactly when p < alpha.
	if in := iv.At(0.03); in.Lo > 0 {
		t.Errorf("at alpha 0.03 (> p) the interval %+v excludes zero", in)
	}
	if in := iv.At(0.04); in.Lo <= 0 {
		t.Errorf("at alpha 0.04 (< p) the interval %+v holds zero", in)
	}
	if _, ok := PairedDiff([]float64{1, 2}, []float64{1}); ok {
		t.Error("unequal lengths paired")
	}
	if _, ok := PairedDiff([]float64{1}, []float64{2}); ok {
		t.Error("one pair gave an interval")
	}
}

// Holm's adjusted p-values and step-down levels for p = {0.01, 0.04, 0.03,
// none, 0.5} (m = 4), worked by hand: sorted 0.01, 0.03, 0.04, 0.5 times
// 4, 3, 2, 1 = 0.04, 0.09, 0.08, 0.5, made non-decreasing: 0.04, 0.09,
// 0.09, 0.5. Levels: 0.05/4 rejects 0.01; 0.05/3 does not reject 0.03, so
// it and every later one stay at 0.05/3.
func TestHolm(t *testing.T) {
	ps := []float64{0.01, 0.04, 0.03, math.NaN(), 0.5}
	want := []float64{0.04, 0.09, 0.09, math.NaN(), 0.5}
	for i, got := range Holm(ps) {
		if math.IsNaN(want[i]) != math.IsNaN(got) || (!math.IsNaN(got) && math.Abs(got-want[i]) > 1e-12) {
			t.Errorf("Holm p[%d] = %v, want %v", i, got, want[i])
		}
	}
	wantA := []float64{0.0125, 0.05 / 3, 0.05 / 3, math.NaN(), 0.05 / 3}
	for i, got := range HolmAlphas(ps, 0.05) {
		if math.IsNaN(wantA[i]) != math.IsNaN(got) || (!math.IsNaN(got) && math.Abs(got-wantA[i]) > 1e-12) {
			t.Errorf("Holm level[%d] = %v, want %v", i, got, wantA[i])
		}
	}
	// A rejected hypothesis has its adjusted p below 0.05 and p below its level.
	adj, lv := Holm(ps), HolmAlphas(ps, 0.05)
	for i, p := range ps {
		if !math.IsNaN(p) && (adj[i] < 0.05) != (p < lv[i]) {
			t.Errorf("p[%d] = %v: adjusted %v and level %v disagree", i, p, adj[i], lv[i])
		}
	}
}
