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

// topKGates keeps a chosen probability's bits, NaN included, and writes +0
// for every other expert, as the branch on each choice did; the loss's P
// is the same to the bit whether tokens is a power of two (a multiply by
// 1/tokens) or not (a division).
func TestTopKGatesAndLossKeepBits(t *testing.T) {
	r := rand.New(rand.NewSource(5))
	const n = 8
	s := make([]float64, 64*n)
	chosen := make([]bool, len(s))
	for i := range s {
		s[i], chosen[i] = r.Float64(), r.Intn(4) == 0
	}
	s[3], chosen[3] = math.NaN(), true
	s[4], chosen[4] = math.NaN(), false
	s[5], chosen[5] = math.Copysign(0, -1), true
	s[6], chosen[6] = math.SmallestNonzeroFloat64, true
	want32, want64 := make([]float32, len(s)), make([]float64, len(s))
	for i, v := range s {
		if chosen[i] {
			want32[i], want64[i] = float32(v), v
		}
	}
	got32, got64 := make([]float32, len(s)), make([]float64, len(s))
	for i := range got32 {
		got32[i], got64[i] = -1, -1 // overwritten whole
	}
	topKGates(got32, s, chosen)
	topKGates(got64, s, chosen)
	for i := range s {
		if math.Float32bits(got32[i]) != math.Float32bits(want32[i]) || math.Float64bits(got64[i]) != math.Float64bits(want64[i]) {
			t.Fatalf("gate %d (s %v, chosen %v): float32 %v, float64 %v; want %v, %v", i, s[i], chosen[i], got32[i], got64[i], want32[i], want64[i])
		}
	}
	for _, tokens := range []int{64, 48} {
		logits := make([]float32, tokens*n)
		for i := range logits {
			logits[i] = float32(r.NormFloat64())
		}
		k := routerKernel{shape: tensor.Shape{tokens, n}, k: 2, loss: true, saved: &routerSaved{}}
		got := make([]float32, 1)
		routerForward(got, logits, k)
		ps, ch := route(logits, k)
		f, P := routerCounts(ch, k), make([]float64, n)
		for tk := 0; tk < tokens; tk++ {
			for i, v := range ps[tk*n : (tk+1)*n] {
				P[i] += v / float64(tokens)
			}
		}
		var L float64
		for i := range f {
			L += f[i] * P[i]
		}
		if math.Float32bits(got[0]) != math.Float32bits(float32(L)) {
			t.Errorf("%d tokens: load-balance loss %v, the division's %v", tokens, got[0], float32(L))
		}
	}
}

// The router's backward masks dgates by the choices instead of branching
// on them: the same bits as the branch, a NaN dgate of an expert not
// chosen included (it contributes +0), for the gates and for the loss.
func TestRouterBackwardKeepsBits(t *testing.T) {
	r := rand.New(rand.NewSource(13))
	const tokens, n = 40, 8
	logits, dy := make([]float32, tokens*n), make([]float32, tokens*n)
	for i := range logits {
		logits[i], dy[i] = float32(r.NormFloat64()), float32(r.NormFloat64())
	}
	for _, loss := range []bool{false, true} {
		k := routerKernel{shape: tensor.Shape{tokens, n}, k: 2, loss: loss, saved: &routerSaved{}}
		s, chosen := route(logits, k)
		g := dy
		if loss {
			g = dy[:1]
		} else {
			for i, c := range chosen {
				if !c {
					dy[i] = float32(math.NaN()) // not chosen: must not reach dx
					break
				}
			}
		}
		// the branch the backward had
		want := make([]float32, tokens*n)
		ds := make([]float64, n)
		for tk := 0; tk < tokens; tk++ {
			var dot float64
			for i := 0; i < n; i++ {
				switch {
				case loss:
					ds[i] = float64(g[0]) * routerCounts(chosen, k)[i] / float64(tokens)
				case chosen[tk*n+i]:
					ds[i] = float64(g[tk*n+i])
				default:
					ds[i] = 0
				}
				dot += s[tk*n+i] * ds[i]
			}
			for i := 0; i < n; i++ {
				want[tk*n+i] = float32(s[tk*n+i] * (ds[i] - dot))
			}
		}
		got := make([]float32, tokens*n)
		routerBackward(got, g, logits, k)
		for i := range want {
			if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
				t.Fatalf("loss %v, dlogit %d: %v, the branch's %v", loss, i, got[i], want[i])
			}
		}
	}
}
