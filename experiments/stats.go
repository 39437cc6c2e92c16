package experiments

import (
	"math"

	"gonum.org/v1/gonum/stat/distuv"
)

// Interval is an estimate with a two-sided 95% confidence interval.
type Interval struct {
	Est, Lo, Hi float64
	// DF are the degrees of freedom of the t distribution used.
	DF float64
}

// tQuantile975 is the 97.5% quantile of Student's t with df degrees of
// freedom (the half-width factor of a 95% interval).
func tQuantile975(df float64) float64 {
	return distuv.StudentsT{Mu: 0, Sigma: 1, Nu: df}.Quantile(0.975)
}

// WelchDiff is mean(a) − mean(b) with a 95% interval by Welch's t (unequal
// variances, Welch–Satterthwaite degrees of freedom). It needs at least two
// values on each side; ok is false otherwise. When both samples have zero
// spread the interval is the point.
func WelchDiff(a, b []float64) (Interval, bool) {
	if len(a) < 2 || len(b) < 2 {
		return Interval{}, false
	}
	sa, sb := meanSD(a), meanSD(b)
	d := sa.Mean - sb.Mean
	va, vb := sa.SD*sa.SD/float64(len(a)), sb.SD*sb.SD/float64(len(b))
	se := math.Sqrt(va + vb)
	if se == 0 {
		return Interval{Est: d, Lo: d, Hi: d, DF: math.Inf(1)}, true
	}
	df := (va + vb) * (va + vb) / (va*va/float64(len(a)-1) + vb*vb/float64(len(b)-1))
	h := tQuantile975(df) * se
	return Interval{Est: d, Lo: d - h, Hi: d + h, DF: df}, true
}

// Slope is the least-squares slope of y on x with a 95% interval (t with
// n−2 degrees of freedom); ok is false with fewer than 3 points or no
// spread in x.
func Slope(x, y []float64) (Interval, bool) {
	n := len(x)
	if n < 3 || len(y) != n {
		return Interval{}, false
	}
	mx, my := meanSD(x).Mean, meanSD(y).Mean
	var sxx, sxy float64
	for i := range x {
		sxx += (x[i] - mx) * (x[i] - mx)
		sxy += (x[i] - mx) * (y[i] - my)
	}
	if sxx == 0 {
		return Interval{}, false
	}
	b := sxy / sxx
	var sse float64
	for i := range x {
		r := y[i] - my - b*(x[i]-mx)
		sse += r * r
	}
	se := math.Sqrt(sse / float64(n-2) / sxx)
	h := tQuantile975(float64(n-2)) * se
	return Interval{Est: b, Lo: b - h, Hi: b + h, DF: float64(n - 2)}, true
}
