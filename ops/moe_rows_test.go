package ops

import (
	"fmt"
	"math/rand"
	"testing"
)

// The routed MoE's float32 row kernels in this build (C under the openblas
// tag) equal their Go definitions to the bit: row widths with and without a
// tail after the eight-lane loop, an expert holding every token, some or
// one, the combine with gates (the forward) and without (the backward),
// over values of very different scales, and dot products whose value
// depends on the order of their sums.
func TestMoERowsMatchGo(t *testing.T) {
	r := rand.New(rand.NewSource(13))
	fill := func(n int) []float32 { return spreadFloat32s(r, n) }
	const tokens, n = 23, 5
	for _, d := range []int{1, 7, 8, 13, 40, 64, 256} {
		for _, every := range []int{1, 3, tokens} {
			var tok []int
			for t := every / 2; t < tokens; t += every {
				tok = append(tok, t)
			}
			m, e := len(tok), every%n
			name := fmt.Sprintf("d=%d, %d of %d tokens", d, m, tokens)

			rows, g := fill(m*d), fill(tokens*n)
			for _, gates := range [][]float32{g, nil} {
				dst := fill(tokens * d)
				want := append([]float32(nil), dst...)
				moeScatterRows(dst, rows, tok, gates, n, e, d)
				moeScatterRowsGo(want, rows, tok, gates, n, e, d)
				assertSame32(t, fmt.Sprintf("%s: combine (gates %v)", name, gates != nil), dst, want)
			}

			dy, Y := fill(tokens*d), fill(m*d)
			if d >= 8 {
				// Products that cancel across lanes 0 and 4 with a small one
				// in lane 1: a sum in any other order than dot8's loses it.
				for _, t := range tok {
					copy(dy[t*d:], []float32{1e20, 1, 0, 0, -1e20, 0, 0, 0})
				}
				for r := range m {
					copy(Y[r*d:], []float32{1, 1, 0, 0, 1, 0, 0, 0})
				}
			}
			dg, wantDg := fill(tokens*n), []float32(nil)
			wantDg = append(wantDg, dg...)
			dY, wantDY := make([]float32, m*d), make([]float32, m*d)
			moeGateGrad(dg, dY, dy, Y, g, tok, n, e, d)
			moeGateGradGo(wantDg, wantDY, dy, Y, g, tok, n, e, d)
			assertSame32(t, name+": gate gradient", dg, wantDg)
			assertSame32(t, name+": dY", dY, wantDY)
		}
	}
}
