package ops

import (
	"math"
	"math/big"
	"math/rand"
	"testing"
)

// dot8Values is n float32 values for Dot8's tests: with spread, sizes from
// 1e-20 to 1e15, both signs, zeros and subnormals (1e-40) among them;
// without, N(0, 1), whose sums' last bits depend on the order of the adds.
func dot8Values(r *rand.Rand, n int, spread bool) []float32 {
	x := make([]float32, n)
	for j := range x {
		switch {
		case !spread:
			x[j] = float32(r.NormFloat64())
		case j%7 == 0:
			x[j] = 0
		case j%7 == 1:
			x[j] = float32(r.NormFloat64() * 1e-40)
		default:
			x[j] = float32(r.NormFloat64() * math.Pow(10, float64(r.Intn(36)-20)))
		}
	}
	return x
}

// Dot8 on float32 in this build (C under the openblas tag) gives dot8's
// bits: over every length that leaves a tail after eight and longer ones,
// for a·b and a·a (the clipping norm's ‖g‖²). With the openblas tag,
// TestDot8EveryLevel runs this on each variant the CPU has.
func TestDot8MatchesGo(t *testing.T) {
	r := rand.New(rand.NewSource(5))
	for _, n := range []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 23, 64, 1000, 4099} {
		for _, spread := range []bool{false, true} {
			a, b := dot8Values(r, n, spread), dot8Values(r, n, spread)
			for _, c := range []struct {
				name string
				x, y []float32
			}{{"a·b", a, b}, {"a·a", a, a}} {
				if got, want := Dot8(c.x, c.y), dot8(c.x, c.y); math.Float64bits(got) != math.Float64bits(want) {
					t.Errorf("%s, %d values (spread %v): %v, dot8 %v", c.name, n, spread, got, want)
				}
			}
		}
	}
}

// exactSumSquares is Σ x² rounded once to float64.
func exactSumSquares[T float32 | float64](x []T) float64 {
	s := new(big.Float).SetPrec(4096)
	for _, v := range x {
		f := new(big.Float).SetPrec(4096).SetFloat64(float64(v))
		s.Add(s, f.Mul(f, f))
	}
	v, _ := s.Float64()
	return v
}

// Dot8(x, x) is within the error bound of adding n non-negative values in
// float64 in any order, (n−1)·2⁻⁵³ of the exact sum (each square of a
// float32 is exact), on float32 and on float64 (whose squares round too:
// n·2⁻⁵³ then).
func TestDot8SquaresNearExact(t *testing.T) {
	r := rand.New(rand.NewSource(6))
	for _, n := range []int{1, 7, 9, 100, 4099} {
		x := dot8Values(r, n, true)
		if got, want := Dot8(x, x), exactSumSquares(x); math.Abs(got-want) > float64(n-1)*0x1p-53*want {
			t.Errorf("float32, %d values: %v, exact %v", n, got, want)
		}
		x64 := make([]float64, n)
		for j := range x64 {
			x64[j] = r.NormFloat64() * math.Pow(10, float64(r.Intn(40)-20))
		}
		if got, want := Dot8(x64, x64), exactSumSquares(x64); math.Abs(got-want) > float64(n)*0x1p-53*want*(1+1e-15) {
			t.Errorf("float64, %d values: %v, exact %v", n, got, want)
		}
	}
}

// BenchmarkDot8 times Dot8(x, x) on 2.8M float32 values (a d_model-256
// model's gradients), in nanoseconds a value.
func BenchmarkDot8(b *testing.B) {
	x := dot8Values(rand.New(rand.NewSource(1)), 2_810_160, false)
	for _, name := range []string{"build", "go"} {
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				if name == "go" {
					dot8(x, x)
				} else {
					Dot8(x, x)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(x)), "ns/value")
		})
	}
}
