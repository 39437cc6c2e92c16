package ops

import (
	"math"
	"math/rand"
	"testing"
)

// log1pUnit32 agrees with math.Log1p within 1 ulp of float32 over its range
// [0, 1]: tiny arguments (where 1+u rounds to 1 or nearly), both sides of
// the √2 switch, and 1.
func TestLog1pUnit32(t *testing.T) {
	worst, at := 0.0, float32(0)
	check := func(u float32) {
		if d := ulps32(log1pUnit32(u), math.Log1p(float64(u))); d > worst {
			worst, at = d, u
		}
	}
	for e := -149.0; e <= 0; e += 0.00173 {
		check(float32(math.Pow(2, e)))
	}
	r := rand.New(rand.NewSource(3))
	for i := 0; i < 200000; i++ {
		check(r.Float32())
	}
	s := float32(math.Sqrt2 - 1)
	for _, u := range []float32{math.SmallestNonzeroFloat32, 0x1p-24, 0x1p-23, s, math.Nextafter32(s, 0), math.Nextafter32(s, 1), 1} {
		check(u)
	}
	if worst > 1 {
		t.Errorf("log1pUnit32 is %.2f ulp from math.Log1p at %g, want <= 1", worst, at)
	}
	if got := log1pUnit32(0); got != 0 {
		t.Errorf("log1pUnit32(0) = %v", got)
	}
	if got := log1pUnit32(float32(math.NaN())); got == got {
		t.Errorf("log1pUnit32(NaN) = %v", got)
	}
}

// softplus32 agrees with the float64 definition within
// 2 ulp from deep in the left tail (where softplus is e^x) to the right
// (where it is x), and at the edges.
func TestSoftplus32(t *testing.T) {
	worst, at := 0.0, float32(0)
	for x := float32(-100); x <= 100; x += 0.00731 {
		if d := ulps32(softplus32(x), softplus(float64(x))); d > worst {
			worst, at = d, x
		}
	}
	if worst > 2 {
		t.Errorf("softplus32 is %.2f ulp from the float64 softplus at %v, want <= 2", worst, at)
	}
	inf := float32(math.Inf(1))
	x := []float32{-inf, inf, 0, -200, float32(math.NaN())}
	y := make([]float32, len(x))
	softplusGo32(y, x, nil)
	if y[0] != 0 || y[1] != inf || y[2] != float32(math.Ln2) || y[3] != 0 || y[4] == y[4] {
		t.Errorf("softplus(-Inf, +Inf, 0, -200, NaN) = %v", y)
	}
	sigmoidGo32(y, x, nil)
	if y[0] != 0 || y[1] != 1 || y[2] != 0.5 || y[3] != 0 || y[4] == y[4] {
		t.Errorf("sigmoid(-Inf, +Inf, 0, -200, NaN) = %v", y)
	}
}

func BenchmarkSoftplus32(b *testing.B) {
	x := make([]float32, 8192)
	for i := range x {
		x[i] = float32(i)/1024 - 6
	}
	y := make([]float32, len(x))
	b.Run("softplus32", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			softplusGo32(y, x, nil)
		}
	})
	b.Run("float64", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			for j, v := range x {
				y[j] = float32(softplus(float64(v)))
			}
		}
	})
}
