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
// (where it is x).
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
}

// The softplus and sigmoid kernels of this build (C under the openblas tag,
// one variant per kernel level; softplusGo32 and sigmoidGo32 otherwise)
// agree with the float64 definitions over the same sweep: softplus within
// 2 ulp like softplus32, σ within 2.5 ulp (exp32's ulp and two roundings)
// down to x = −88, below which e^−x overflows float32 and σ is 0 instead of
// a subnormal, as sigmoid32 gives. Scaled, each is its unscaled value times
// the scale, rounded once. At the edges they are exact.
func TestFloat32SoftplusKernels(t *testing.T) {
	var x []float32
	for v := float32(-100); v <= 100; v += 0.00731 {
		x = append(x, v)
	}
	scale := make([]float32, len(x))
	for i := range scale {
		scale[i] = 1 + float32(i%7)/8
	}
	y, ys := make([]float32, len(x)), make([]float32, len(x))
	for _, k := range []struct {
		name     string
		f32      func(dst, x, scale []float32)
		f        func(float64) float64
		from, ok float64
	}{{"softplus", softplusVec32, softplus, -100, 2}, {"sigmoid", sigmoidVec32, sigmoid, -88, 2.5}} {
		k.f32(y, x, nil)
		k.f32(ys, x, scale)
		worst, at := 0.0, float32(0)
		for i, v := range x {
			if float64(v) >= k.from {
				if d := ulps32(y[i], k.f(float64(v))); d > worst {
					worst, at = d, v
				}
			}
			if want := y[i] * scale[i]; math.Float32bits(ys[i]) != math.Float32bits(want) {
				t.Fatalf("%s(%v) scaled by %v = %v, want %v", k.name, v, scale[i], ys[i], want)
			}
		}
		if worst > k.ok {
			t.Errorf("%s is %.2f ulp from float64 at %v, want <= %v", k.name, worst, at, k.ok)
		}
	}
	inf := float32(math.Inf(1))
	x = []float32{-inf, inf, 0, -200, float32(math.NaN())}
	y = y[:len(x)]
	softplusVec32(y, x, nil)
	if y[0] != 0 || y[1] != inf || y[2] != float32(math.Ln2) || y[3] != 0 || y[4] == y[4] {
		t.Errorf("softplus(-Inf, +Inf, 0, -200, NaN) = %v", y)
	}
	sigmoidVec32(y, x, nil)
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
	b.Run("kernel", func(b *testing.B) { // C under the openblas tag
		for i := 0; i < b.N; i++ {
			softplusVec32(y, x, nil)
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
