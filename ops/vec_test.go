package ops

import (
	"math"
	"math/rand"
	"testing"
)

// sum64 and dot agree with a plain float64 loop to rounding, at every
// length around the unrolling (the tails included).
func TestSum64AndDot(t *testing.T) {
	r := rand.New(rand.NewSource(3))
	for n := 0; n <= 11; n++ {
		a, b := make([]float32, n), make([]float32, n)
		var wantSum, wantDot, scale float64
		for i := range a {
			a[i], b[i] = float32(r.NormFloat64()), float32(r.NormFloat64())
			wantSum += float64(a[i])
			wantDot += float64(a[i]) * float64(b[i])
			scale += math.Abs(float64(a[i])) * (1 + math.Abs(float64(b[i])))
		}
		if got := sum64(a); math.Abs(got-wantSum) > 1e-15*scale {
			t.Errorf("n=%d: sum64 = %v, want %v", n, got, wantSum)
		}
		if got := dot(a, b); math.Abs(got-wantDot) > 1e-15*scale {
			t.Errorf("n=%d: dot = %v, want %v", n, got, wantDot)
		}
	}
}
