package ops

import (
	"fmt"
	"math"
	"math/rand"
	"sort"
	"testing"

	"gorgonia.org/tensor"
)

// The router of a float32 model (its softmax in float32 rows) agrees with
// the float64 definition on the same logits: every probability within the
// float32 softmax's bound (TestFloat32SoftmaxRowsMatchFloat64's), and the
// same experts chosen wherever the k-th and the next probability are
// further apart than that bound; 8 experts (the default) and counts around
// a vector's width, logits near and far apart, and NaN logits, which route
// a token to its first k experts in both; the float32 routing runs on
// buffers that held another routing.
func TestRouteFloat32MatchesFloat64(t *testing.T) {
	r := rand.New(rand.NewSource(21))
	for _, n := range []int{2, 8, 9, 17, 64} {
		for _, spread := range []float64{0.1, 3, 30} {
			const tokens, k = 300, 2
			l32, l64 := make([]float32, tokens*n), make([]float64, tokens*n)
			for i := range l32 {
				l32[i] = float32(spread * r.NormFloat64())
				l64[i] = float64(l32[i])
			}
			l32[7*n+1], l64[7*n+1] = float32(math.NaN()), math.NaN()
			kern := routerKernel{shape: tensor.Shape{tokens, n}, k: k, saved: &routerSaved{}}
			other := make([]float32, len(l32)) // routed first: the buffers are reused
			for i := range other {
				other[i] = float32(r.NormFloat64())
			}
			route(other, kern)
			s32, c32 := route(l32, kern)
			s32, c32 = append([]float64(nil), s32...), append([]bool(nil), c32...)
			kern.saved = &routerSaved{}
			s64, c64 := route(l64, kern)
			name := fmt.Sprintf("n=%d spread=%g", n, spread)
			for tk := 0; tk < tokens; tk++ {
				row, p32, p64 := l64[tk*n:(tk+1)*n], s32[tk*n:(tk+1)*n], s64[tk*n:(tk+1)*n]
				if tk == 7 {
					for i := range p32 {
						if !math.IsNaN(p32[i]) || c32[tk*n+i] != (i < k) || c64[tk*n+i] != (i < k) {
							t.Fatalf("%s: a NaN logit: token 7, expert %d: s %v, chosen %v (float64: %v), want NaN and the first %d", name, i, p32[i], c32[tk*n+i], c64[tk*n+i], k)
						}
					}
					continue
				}
				m, bound := maxOf(row), make([]float64, n)
				for i := range p32 {
					bound[i] = (math.Abs(row[i]-m)*0x1p-24+1e-6)*p64[i] + 1e-30
					if d := math.Abs(p32[i] - p64[i]); d > bound[i] {
						t.Fatalf("%s: token %d expert %d: s = %g, float64 gives %g", name, tk, i, p32[i], p64[i])
					}
				}
				order := make([]int, n)
				for i := range order {
					order[i] = i
				}
				sort.SliceStable(order, func(a, b int) bool { return p64[order[a]] > p64[order[b]] })
				if n > k && p64[order[k-1]]-p64[order[k]] <= bound[order[k-1]]+bound[order[k]] {
					continue // a near tie: either choice is within rounding
				}
				for i := 0; i < n; i++ {
					if c32[tk*n+i] != c64[tk*n+i] {
						t.Fatalf("%s: token %d: float32 chose %v, float64 %v", name, tk, c32[tk*n:(tk+1)*n], c64[tk*n:(tk+1)*n])
					}
				}
			}
		}
	}
}
