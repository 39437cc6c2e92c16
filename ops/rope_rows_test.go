package ops

import (
	"fmt"
	"math"
	"math/rand"
	"testing"
)

// RoPE's float32 rotation in this build (C under the openblas tag) equals
// the Go definition to the bit: head dims that leave a tail after the
// vector loop, one head and several, both directions, a range of
// positions that wraps around the sequence (batch rows), values of very
// different scales.
func TestRopeRowsMatchGo(t *testing.T) {
	r := rand.New(rand.NewSource(10))
	for _, c := range []struct{ b, t, h, d int }{{1, 1, 1, 2}, {2, 5, 3, 6}, {3, 7, 4, 16}, {2, 33, 2, 34}, {1, 64, 4, 64}} {
		n := c.b * c.t * c.h * c.d
		x := make([]float32, n)
		for i := range x {
			x[i] = float32(r.NormFloat64() * math.Pow(10, float64(i%9-4)))
		}
		cos, sin := DefaultRope().tables(c.t, c.d)
		for _, sign := range []float64{1, -1} {
			for _, span := range [][2]int{{0, c.b * c.t}, {1, c.b*c.t - 1}, {c.t + 2, c.b * c.t}} { // the last from inside a later row
				if span[1] <= span[0] {
					continue
				}
				got, want := make([]float32, n), make([]float32, n)
				ropeRows32(got, x, cos, sin, span[0], span[1], c.t, c.h, c.d, sign)
				ropeRowsGo(want, x, cos, sin, span[0], span[1], c.t, c.h, c.d, sign)
				assertSame32(t, fmt.Sprintf("b=%d t=%d h=%d d=%d sign=%v rows %v", c.b, c.t, c.h, c.d, sign, span), got, want)
			}
		}
	}
}
