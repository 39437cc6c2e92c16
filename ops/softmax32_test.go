package ops

import (
	"fmt"
	"math"
	"math/rand"
	"testing"
)

// The float32 causal softmax rows and their gradient (C under the openblas
// build, in both its variants: see TestFloat32KernelsSSE2) agree with the
// float64 Go definitions, for rows whose visible part is shorter than,
// equal to and longer than a vector, with tails of every length, scores
// spread far enough for the exponential's clamps, and a hidden part that
// must come out zero whatever it held; and for whole rows (last0 = n−1,
// the router's), more of them than the row is long.
func TestFloat32SoftmaxRowsMatchFloat64(t *testing.T) {
	r := rand.New(rand.NewSource(5))
	for _, n := range []int{1, 3, 8, 9, 17, 64, 259} {
		for _, spread := range []float64{1, 30} {
			for _, whole := range []bool{false, true} {
				rows := min(n, 12)
				last0 := n - rows
				if whole {
					rows, last0 = n+5, n-1
				}
				p32, p64 := make([]float32, rows*n), make([]float64, rows*n)
				g32, g64 := make([]float32, rows*n), make([]float64, rows*n)
				for i := range p32 {
					p32[i], g32[i] = float32(spread*r.NormFloat64()), float32(r.NormFloat64())
					p64[i], g64[i] = float64(p32[i]), float64(g32[i])
				}
				scores := append([]float64(nil), p64...)
				softmaxRows32(p32, rows, n, last0)
				softmaxRowsGo(p64, rows, n, last0)
				for i := range p32 {
					// float32 rounds s − max (relative 2⁻²⁴), which exp turns
					// into a relative error of |s − max|·2⁻²⁴; the rest is the
					// exponential's and the normalisation's few ulps.
					row := scores[i/n*n : i/n*n+min(last0+i/n+1, n)]
					arg := math.Abs(scores[i] - maxOf(row))
					if d := math.Abs(float64(p32[i]) - p64[i]); d > (arg*0x1p-24+1e-6)*p64[i]+1e-30 {
						t.Fatalf("n=%d spread=%g: P[%d] = %g, float64 gives %g", n, spread, i, p32[i], p64[i])
					}
				}
				// the gradient through the float64 probabilities, rounded to float32 as the kernel reads them
				for i := range p64 {
					p64[i] = float64(p32[i])
				}
				d32, d64 := make([]float32, rows*n), make([]float64, rows*n)
				softmaxGradRows32(d32, p32, g32, rows, n)
				softmaxGradRowsGo(d64, p64, g64, rows, n)
				for i := range d32 {
					// d = P (g − Σ g P): the sum's float32 rounding times g's scale
					if d := math.Abs(float64(d32[i]) - d64[i]); d > 1e-6*(math.Abs(d64[i])+p64[i]*4)+1e-30 {
						t.Fatalf("%s: dS[%d] = %g, float64 gives %g", fmt.Sprintf("n=%d spread=%g", n, spread), i, d32[i], d64[i])
					}
				}
			}
		}
	}
}

// A NaN score makes its row NaN, as in the Go definition; other rows keep
// their values.
func TestFloat32SoftmaxRowsNaN(t *testing.T) {
	const n = 19
	p := make([]float32, 2*n)
	for i := range p {
		p[i] = float32(i%5) / 5
	}
	p[n+11] = float32(math.NaN())
	softmaxRows32(p, 2, n, n-2)
	var sum float64
	for j := 0; j < n-1; j++ {
		sum += float64(p[j])
	}
	if math.Abs(sum-1) > 1e-6 || p[n-1] != 0 {
		t.Errorf("row 0 (no NaN) sums to %g, hidden entry %g", sum, p[n-1])
	}
	for j := 0; j < n; j++ {
		if !math.IsNaN(float64(p[n+j])) {
			t.Fatalf("row 1 has a NaN score, but P[1][%d] = %g", j, p[n+j])
		}
	}
}

// lseParts32 (cross-entropy's log-sum-exp; C under the openblas build)
// finds the row's maximum exactly, as maxOf does, and e^(row−m) and their
// sum as float64 gives them, for rows shorter and longer than a vector.
func TestFloat32LogSumExpPartsMatchFloat64(t *testing.T) {
	r := rand.New(rand.NewSource(9))
	for _, n := range []int{1, 7, 8, 9, 31, 260} {
		row, e := make([]float32, n), make([]float32, n)
		for i := range row {
			row[i] = float32(20 * r.NormFloat64())
		}
		m, sum := lseParts32(row, e)
		if m != maxOf(row) {
			t.Fatalf("n=%d: maximum %g, maxOf gives %g", n, m, maxOf(row))
		}
		var want float64
		for i, v := range row {
			arg := float64(v) - float64(m)
			ev := math.Exp(arg)
			want += ev
			if d := math.Abs(float64(e[i]) - ev); d > (math.Abs(arg)*0x1p-24+1e-6)*ev+1e-30 {
				t.Fatalf("n=%d: e[%d] = %g, float64 gives %g", n, i, e[i], ev)
			}
		}
		if math.Abs(sum-want) > 1e-6*want {
			t.Fatalf("n=%d: sum %g, float64 gives %g", n, sum, want)
		}
	}
}

// The float32 softmax gradient gives each row the bits it gives that row
// alone, whatever rows share its call (the AVX2 kernel runs four rows side
// by side and the rest one at a time), with and without a tail after its
// eight-lane loop, and in place (d is g) as attention calls it.
func TestSoftmaxGradRowsByFours(t *testing.T) {
	r := rand.New(rand.NewSource(7))
	for _, n := range []int{1, 7, 8, 19, 64, 259} {
		for _, rows := range []int{1, 4, 5, 9, 14} {
			p, g := make([]float32, rows*n), make([]float32, rows*n)
			for i := range p {
				p[i], g[i] = float32(r.Float64()), float32(r.NormFloat64())
			}
			whole := make([]float32, rows*n)
			softmaxGradRows32(whole, p, g, rows, n)
			for i := 0; i < rows; i++ {
				one := make([]float32, n)
				softmaxGradRows32(one, p[i*n:(i+1)*n], g[i*n:(i+1)*n], 1, n)
				assertSame32(t, fmt.Sprintf("n=%d rows=%d row %d alone", n, rows, i), whole[i*n:(i+1)*n], one)
			}
			inPlace := append([]float32(nil), g...)
			softmaxGradRows32(inPlace, p, inPlace, rows, n)
			assertSame32(t, fmt.Sprintf("n=%d rows=%d in place", n, rows), inPlace, whole)
		}
	}
}

// BenchmarkSoftmaxGradRows times the float32 softmax gradient on one
// attention block's rows at d_model 64 (64 queries by 256 keys).
func BenchmarkSoftmaxGradRows(b *testing.B) {
	r := rand.New(rand.NewSource(8))
	const rows, n = 64, 256
	p, g, d := make([]float32, rows*n), make([]float32, rows*n), make([]float32, rows*n)
	for i := range p {
		p[i], g[i] = float32(r.Float64()), float32(r.NormFloat64())
	}
	for b.Loop() {
		softmaxGradRows32(d, p, g, rows, n)
	}
}
