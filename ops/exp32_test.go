package ops

import (
	"math"
	"testing"
)

// exp32 agrees with math.Exp rounded to float32 within 2 ulp over the whole
// float32 range where the result is normal, and handles the edges.
func TestExp32(t *testing.T) {
	worst := 0.0
	for x := float32(-87); x <= 88.7; x += 0.000731 {
		if d := ulps32(exp32(x), float64(float32(math.Exp(float64(x))))); d > worst {
			worst = d
		}
	}
	if worst > 2 {
		t.Errorf("exp32 is %.1f ulp from math.Exp at worst, want <= 2", worst)
	}
	for _, c := range []struct{ x, want float32 }{
		{0, 1}, {89, float32(math.Inf(1))}, {-104, 0}, {float32(math.Inf(-1)), 0}, {float32(math.Inf(1)), float32(math.Inf(1))},
	} {
		if got := exp32(c.x); got != c.want {
			t.Errorf("exp32(%v) = %v, want %v", c.x, got, c.want)
		}
	}
	if got := exp32(float32(math.NaN())); got == got {
		t.Errorf("exp32(NaN) = %v, want NaN", got)
	}
	// Subnormal results: within one subnormal step of math.Exp rounded to
	// float32 (they have few bits, so this is the best any float32 exp does).
	for x := float32(-103.9); x < -87.4; x += 0.0137 {
		want := float32(math.Exp(float64(x)))
		if got := exp32(x); math.Abs(float64(got-want)) > math.SmallestNonzeroFloat32 {
			t.Fatalf("exp32(%v) = %g, want %g", x, got, want)
		}
	}
}

func BenchmarkExp32(b *testing.B) {
	x := make([]float32, 4096)
	for i := range x {
		x[i] = float32(i)/256 - 8
	}
	y := make([]float32, len(x))
	b.Run("exp32", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			for j, v := range x {
				y[j] = exp32(v)
			}
		}
	})
	b.Run("math.Exp", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			for j, v := range x {
				y[j] = float32(math.Exp(float64(v)))
			}
		}
	})
}
