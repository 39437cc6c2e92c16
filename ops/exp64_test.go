package ops

import (
	"math"
	"math/rand"
	"testing"
)

// expInPlace is within two ulps of math.Exp over the SSD decays' range and
// beyond (random arguments in [−750, 705], lengths leaving every tail; Go's
// assembly exp overflows from about 709.6, short of the true 709.78), is
// exact at 0, and gives math.Exp's answer for ±Inf, NaN, and arguments
// whose result is subnormal, zero or infinite.
func TestExpInPlaceMatchesMathExp(t *testing.T) {
	rng := rand.New(rand.NewSource(9))
	var x []float64
	for range 20000 {
		x = append(x, rng.Float64()*1455-750)
	}
	for range 20000 {
		x = append(x, -rng.ExpFloat64()) // dt·A: mostly small and negative
	}
	x = append(x, 0, math.Copysign(0, -1), 708, -708, -745.2, -744, 710, math.Inf(1), math.Inf(-1), math.NaN(), 1e-300, -1e-300)
	for _, n := range []int{len(x), 1, 2, 3, 5, 7} {
		got := append([]float64(nil), x[len(x)-n:]...)
		expInPlace(got)
		for i, v := range x[len(x)-n:] {
			want := math.Exp(v)
			switch {
			case math.IsNaN(want):
				if !math.IsNaN(got[i]) {
					t.Fatalf("exp(%g) = %g, want NaN", v, got[i])
				}
			case want == 0 || math.IsInf(want, 0) || want < 0x1p-1022:
				if got[i] != want && math.Abs(got[i]-want) > 0x1p-1074*2 {
					t.Fatalf("exp(%g) = %g, want %g", v, got[i], want)
				}
			default:
				if ulps := math.Abs(got[i]-want) / (math.Nextafter(want, math.Inf(1)) - want); ulps > 2 {
					t.Fatalf("exp(%g) = %.17g, math.Exp %.17g: %.1f ulps apart", v, got[i], want, ulps)
				}
			}
		}
	}
	one := []float64{0}
	if expInPlace(one); one[0] != 1 {
		t.Errorf("exp(0) = %.17g, want 1", one[0])
	}
}

func BenchmarkExpInPlace(b *testing.B) {
	x := make([]float64, 256)
	for i := range x {
		x[i] = -float64(i%37) / 16
	}
	y := make([]float64, len(x))
	b.Run("build", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			copy(y, x)
			expInPlace(y)
		}
	})
	b.Run("math", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			for j, v := range x {
				y[j] = math.Exp(v)
			}
		}
	})
}
