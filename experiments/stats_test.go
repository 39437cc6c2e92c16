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
