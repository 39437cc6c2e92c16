package experiments

import (
	"math"
	"sort"

	"gonum.org/v1/gonum/stat/distuv"
)

// Interval is an estimate with a two-sided confidence interval (95%
// unless At moved it) and the test of "no difference".
type Interval struct {
	Est, Lo, Hi float64
	// DF are the degrees of freedom of the t distribution used; SE the
	// estimate's standard error.
	DF, SE float64
	// P is the two-sided p-value of the estimate against zero.
	P float64
}

// tQuantile975 is the 97.5% quantile of Student's t with df degrees of
// freedom (the half-width factor of a 95% interval).
func tQuantile975(df float64) float64 {
	return distuv.StudentsT{Mu: 0, Sigma: 1, Nu: df}.Quantile(0.975)
}

// tInterval is est ± the t quantile at 95% times se, with its p-value.
func tInterval(est, se, df float64) Interval {
	if se == 0 {
		p := 1.0
		if est != 0 {
			p = 0
		}
		return Interval{Est: est, Lo: est, Hi: est, DF: df, SE: 0, P: p}
	}
	h := tQuantile975(df) * se
	p := 2 * distuv.StudentsT{Mu: 0, Sigma: 1, Nu: df}.Survival(math.Abs(est)/se)
	return Interval{Est: est, Lo: est - h, Hi: est + h, DF: df, SE: se, P: p}
}

// At is the interval at confidence 1 − alpha (two-sided) around the same
// estimate and standard error.
func (iv Interval) At(alpha float64) Interval {
	if iv.SE == 0 || math.IsNaN(iv.SE) {
		return iv
	}
	h := distuv.StudentsT{Mu: 0, Sigma: 1, Nu: iv.DF}.Quantile(1-alpha/2) * iv.SE
	iv.Lo, iv.Hi = iv.Est-h, iv.Est+h
	return iv
}

// PairedDiff is the mean of a[i] − b[i] with a 95% interval by the paired
// t test (n − 1 degrees of freedom): the pairs share a seed, and so the
// order of the training data, which removes that source of variance from
// the difference. It needs at least two pairs of equal length.
func PairedDiff(a, b []float64) (Interval, bool) {
	if len(a) < 2 || len(a) != len(b) {
		return Interval{}, false
	}
	d := make([]float64, len(a))
	for i := range a {
		d[i] = a[i] - b[i]
	}
	s := meanSD(d)
	return tInterval(s.Mean, s.SD/math.Sqrt(float64(len(d))), float64(len(d)-1)), true
}

// Holm returns the Holm–Bonferroni adjusted p-values of ps (Holm 1979):
// sorted ascending, the i-th (0-based) of m is multiplied by m − i, then
// made non-decreasing, capped at 1. A hypothesis is rejected at family-wise
// level α when its adjusted p is below α. NaN p-values (no test) stay NaN
// and do not count in m.
func Holm(ps []float64) []float64 {
	idx, out := byP(ps)
	m, run := len(idx), 0.0
	for r, i := range idx {
		run = math.Max(run, math.Min(1, float64(m-r)*ps[i]))
		out[i] = run
	}
	return out
}

// byP is the indices of the p-values that are not NaN, smallest p first
// (ties in their order), and a result of len(ps) NaNs to fill in.
func byP(ps []float64) (idx []int, out []float64) {
	for i, p := range ps {
		if !math.IsNaN(p) {
			idx = append(idx, i)
		}
	}
	sort.SliceStable(idx, func(i, j int) bool { return ps[idx[i]] < ps[idx[j]] })
	out = make([]float64, len(ps))
	for i := range out {
		out[i] = math.NaN()
	}
	return idx, out
}

// HolmAlphas are the confidence levels (as alpha) of the intervals that
// go with Holm's step-down test at family-wise level alpha: the i-th
// smallest p-value of m is tested at alpha/(m − i); once one is not
// rejected the procedure stops, and it and every later one keep that
// step's level. An interval excludes zero exactly when Holm rejects its
// hypothesis (for a t test). NaN p-values get NaN.
func HolmAlphas(ps []float64, alpha float64) []float64 {
	idx, out := byP(ps)
	m, stopped := len(idx), -1.0
	for r, i := range idx {
		a := alpha / float64(m-r)
		if stopped > 0 {
			a = stopped
		} else if ps[i] >= a {
			stopped = a
		}
		out[i] = a
	}
	return out
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
		return tInterval(d, 0, math.Inf(1)), true
	}
	df := (va + vb) * (va + vb) / (va*va/float64(len(a)-1) + vb*vb/float64(len(b)-1))
	return tInterval(d, se, df), true
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
	return tInterval(b, se, float64(n-2)), true
}
