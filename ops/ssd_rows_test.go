package ops

import (
	"fmt"
	"math"
	"math/rand"
	"testing"
)

// The SSD scan's float32 row passes in this build (C under the openblas
// tag) equal their Go definitions to the bit: heads of a width that leaves
// a tail after the vector loops, one head and several, leading dimensions
// wider than the unit's heads, with and without the skip weights D, over
// values of very different scales.
func TestSSDRowsMatchGo(t *testing.T) {
	r := rand.New(rand.NewSource(9))
	fill := func(n int) []float32 { return spreadFloat32s(r, n) }
	for _, c := range []struct{ L, hb, p, extra int }{{1, 1, 1, 0}, {5, 1, 7, 3}, {17, 3, 13, 5}, {64, 4, 16, 0}, {64, 4, 32, 0}, {64, 2, 32, 64}, {9, 2, 64, 8}, {3, 2, 203, 1}} {
		P, ld, wst := c.hb*c.p, c.hb*c.p+c.extra, c.L+2
		name := fmt.Sprintf("L=%d hb=%d p=%d ld=%d", c.L, c.hb, c.p, ld)
		x, dt := fill(c.L*ld), fill(c.L*(c.hb+1))
		w := make([]float64, c.hb*wst)
		for i := range w {
			w[i] = math.Exp(-3 * r.Float64())
		}
		U, W, wantU, wantW := make([]float32, c.L*P), make([]float32, c.L*P), make([]float32, c.L*P), make([]float32, c.L*P)
		ssdScaleInputs(U, W, x, ld, dt, c.hb+1, w, wst, c.L, c.hb, c.p, P)
		ssdScaleInputsGo(wantU, wantW, x, ld, dt, c.hb+1, w, wst, c.L, c.hb, c.p, P)
		assertSame32(t, name+" U", U, wantU)
		assertSame32(t, name+" W", W, wantW)
		for _, scale := range []func([]float32, []float32){
			func(W, U []float32) { ssdScaleInputs(U, W, x, ld, dt, c.hb+1, w, wst, c.L, c.hb, c.p, P) },
			func(W, U []float32) { ssdScaleInputsGo(U, W, x, ld, dt, c.hb+1, w, wst, c.L, c.hb, c.p, P) },
		} {
			Wonly := make([]float32, c.L*P)
			scale(Wonly, nil) // W alone: the same bits
			assertSame32(t, name+" W without U", Wonly, wantW)
		}
		Yc, tmp, D := fill(c.L*P), fill(c.L*P), fill(c.hb)
		iw := make([]float64, len(w))
		for i, v := range w {
			iw[i] = 1 / v
		}
		for _, d := range [][]float32{D, nil} {
			for _, sc := range [][]float64{nil, iw} {
				y, want := fill(c.L*ld), make([]float32, c.L*ld)
				copy(want, y) // the columns past the unit's heads stay as they were
				ssdCombineOutput(y, ld, Yc, tmp, P, w, sc, wst, d, x, c.L, c.hb, c.p)
				ssdCombineOutputGo(want, ld, Yc, tmp, P, w, sc, wst, d, x, c.L, c.hb, c.p)
				assertSame32(t, fmt.Sprintf("%s D=%v scaled=%v y", name, d != nil, sc != nil), y, want)
				if sc == nil { // no scale: Yc + e·tmp (+ D·x) as written, to the bit
					for i := 0; i < c.L; i++ {
						for j := 0; j < c.hb; j++ {
							ev := float32(w[j*wst+i])
							for q := 0; q < c.p; q++ {
								o, v := i*ld+j*c.p+q, i*P+j*c.p+q
								plain := Yc[v] + ev*tmp[v]
								if d != nil {
									plain += d[j] * x[o]
								}
								if math.Float32bits(y[o]) != math.Float32bits(plain) {
									t.Fatalf("%s D=%v: y[%d] = %v, Yc + e·tmp + D·x = %v", name, d != nil, o, y[o], plain)
								}
							}
						}
					}
				}
			}
		}
	}
}
