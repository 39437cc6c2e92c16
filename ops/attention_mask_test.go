package ops

import (
	"fmt"
	"math"
	"math/rand"
	"testing"
)

// The paper mask's float32 row passes in this build (C under the openblas
// tag) equal the Go definition to the bit: row lengths that leave a tail
// after the vector loop and ones that do not, one row and several, values of
// very different scales with zeros of both signs and infinities among them,
// the mask's gradient added to over two calls, and operands that are views
// into longer rows (the head's mask row runs to max_pos).
func TestPaperMaskRowsMatchGo(t *testing.T) {
	r := rand.New(rand.NewSource(12))
	value := func(i int) float32 {
		switch i % 23 {
		case 5:
			return float32(math.Copysign(0, -1))
		case 11:
			return 0
		case 17:
			return float32(math.Inf(1 - 2*(i%2)))
		}
		return float32(r.NormFloat64() * math.Pow(10, float64(i%11-5)))
	}
	for _, c := range []struct{ rows, n int }{{1, 1}, {1, 7}, {3, 8}, {2, 37}, {5, 64}, {64, 256}} {
		name := fmt.Sprintf("rows=%d n=%d", c.rows, c.n)
		P, dM0, l := make([]float32, c.rows*c.n), make([]float32, c.rows*c.n), make([]float32, c.n+9)
		for i := range P {
			P[i], dM0[i] = value(i), value(3*i+1)
		}
		for i := range l {
			l[i] = value(7*i + 2)
		}

		got, want := make([]float32, len(P)), make([]float32, len(P))
		paperMaskRows(got, P, l, c.rows, c.n)
		paperMaskRowsGo(want, P, l, c.rows, c.n)
		assertSame32(t, name+" M", got, want)

		dM, wantDM := append([]float32(nil), dM0...), append([]float32(nil), dM0...)
		dl, wantDl := make([]float64, c.n+3), make([]float64, c.n+3)
		for j := range dl {
			dl[j] = r.NormFloat64()
			wantDl[j] = dl[j]
		}
		for call := range 2 { // dl adds up over calls; dM is scaled again
			paperMaskBackwardRows(P, dM, l, dl, c.rows, c.n)
			paperMaskBackwardRowsGo(P, wantDM, l, wantDl, c.rows, c.n)
			assertSame32(t, fmt.Sprintf("%s call %d dP", name, call), dM, wantDM)
			for j := range wantDl {
				if math.Float64bits(dl[j]) != math.Float64bits(wantDl[j]) {
					t.Fatalf("%s call %d: dl[%d] = %v, Go gives %v (bit-identical)", name, call, j, dl[j], wantDl[j])
				}
			}
		}
	}
}
