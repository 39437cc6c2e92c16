//go:build openblas

package ops

import (
	"fmt"
	"math"
	"math/rand"
	"testing"
)

// CDMoE's C kernels run a worker's tokens in one call, each token's experts
// in blocks: at each kernel level they must give what the Go loops give,
// for a range of tokens inside the batch, with more experts per token than
// a block (5 heads × 16 = 80), experts chosen twice, and the key offsets
// they compute from each choice's head and keys; both for sizes the
// general body runs (d_model 136: 64-value chunks and a tail after them)
// and for d_model 64 with halves of 32, which the backward runs in a body
// of its own. (Go's dots and activation round differently from C's, and dq
// sums 80 such terms: they agree to about 1e-5; a slip of index or offset
// moves a value by its own size.)
func TestCDMoEExpertsCMatchGo(t *testing.T) {
	defer setKernelLevel(levelAVX512)
	for _, k := range []cdmoeKernel{
		{b: 1, t: 9, dm: 24, heads: 5, nk: 16, half: 5, topk: 16, act: siluFunc},
		{b: 1, t: 9, dm: 64, heads: 5, nk: 16, half: 32, topk: 16, act: siluFunc},
		{b: 1, t: 9, dm: 136, heads: 4, nk: 16, half: 12, topk: 7, act: siluFunc},
	} {
		t.Run(fmt.Sprintf("d%d_half%d", k.dm, k.half), func(t *testing.T) { cdmoeExpertsMatchGo(t, k) })
	}
}

func cdmoeExpertsMatchGo(t *testing.T, k cdmoeKernel) {
	N, qd, lo, hi := k.b*k.t, k.qdim(), 2, 8
	c := newCDMoEExpertsCase(k, 23, func(r *rand.Rand) (int, int, float64) {
		ix, iy := r.Intn(k.nk), r.Intn(4) // few keys: experts chosen twice
		return ix, iy, float64(float32(r.NormFloat64()))
	})
	sh, g, Edown, Eup, keys, chosen := c.sh, c.g, c.Edown, c.Eup, c.keys, c.chosen
	type result struct{ y, dphi, dq, dEdown, dEup, dkeys []float32 }
	fresh := func() (result, cdmoeGrads[float32]) {
		res := result{make([]float32, N*k.dm), make([]float32, N*k.dm), make([]float32, N*qd),
			make([]float32, len(Edown)), make([]float32, len(Eup)), make([]float32, len(keys))}
		return res, cdmoeGrads[float32]{res.dEdown, res.dEup, res.dkeys}
	}
	want, acc := fresh()
	for n := lo; n < hi; n++ {
		copy(want.y[n*k.dm:], sh.phi[n*k.dm:(n+1)*k.dm])
		for hh := 0; hh < k.heads; hh++ {
			ch := chosen[(n*k.heads+hh)*k.topk : (n*k.heads+hh+1)*k.topk]
			cdmoeExpertsForward(k, sh.phi[n*k.dm:(n+1)*k.dm], Edown, Eup, ch, want.y[n*k.dm:(n+1)*k.dm])
			acc.expertsBackward(k, n, hh, sh, ch, g, Edown, Eup, keys, want.dphi, want.dq)
		}
	}
	for _, level := range []int{levelAVX2, levelSSE2} {
		if setKernelLevel(level) != level {
			continue
		}
		got, acc := fresh()
		if !cdmoeExpertsRangeC(k, lo, hi, chosen, got.y, nil, sh, Edown, Eup, keys, nil, nil, nil) ||
			!cdmoeExpertsRangeC(k, lo, hi, chosen, nil, g, sh, Edown, Eup, keys, &acc, got.dphi, got.dq) {
			t.Fatalf("level %d: the C kernels did not run", level)
		}
		for _, c := range []struct {
			name      string
			got, want []float32
		}{{"y", got.y, want.y}, {"dphi", got.dphi, want.dphi}, {"dq", got.dq, want.dq},
			{"dEdown", got.dEdown, want.dEdown}, {"dEup", got.dEup, want.dEup}, {"dkeys", got.dkeys, want.dkeys}} {
			for i := range c.want {
				if d := math.Abs(float64(c.got[i] - c.want[i])); d > 1e-4*(1+math.Abs(float64(c.want[i]))) {
					t.Fatalf("level %d: %s[%d] = %v in C, %v in Go", level, c.name, i, c.got[i], c.want[i])
				}
			}
		}
	}
}

// CDMoE's kernels run the dots of WM_DOTS experts in one loop, sum a
// token's rows 64 values at a time in registers, and sum dq's rows (one per
// head and half) over each head's run of choices 32 values at a time; each
// value must be what one expert at a time gave (wm_dot, and a row added per
// expert), to the bit: rows of fewer than eight values, of a tail after
// the eight-value steps, of a tail after the 64-value chunks; fewer
// experts than WM_DOTS, a remainder after the groups, experts chosen more
// than once.
func TestCDMoEPartsKeepBits(t *testing.T) {
	defer setKernelLevel(levelAVX512)
	r := rand.New(rand.NewSource(5))
	for _, level := range []int{levelAVX2, levelSSE2} {
		if setKernelLevel(level) != level {
			continue
		}
		for _, n := range []int{1, 7, 8, 24, 64, 100, 136, 256, 257} {
			for _, m := range []int{1, 7, 8, 9, 17, 32} {
				const rows = 6
				a, base := normalFloat32s(r, n), normalFloat32s(r, rows*n)
				w, y := normalFloat32s(r, m), normalFloat32s(r, n)
				e := make([]int32, m)
				for c := range e {
					e[c] = int32(r.Intn(rows))
				}
				y1 := append([]float32(nil), y...)
				// dq's rows: three of them, in runs (a head's choices), the
				// first coming back after the others.
				off := make([]int32, 4*m)
				for c := range m {
					off[4*c], off[4*c+1] = int32(n*((c/3)%3)), int32(n*r.Intn(rows))
				}
				z := normalFloat32s(r, 3*n)
				z1 := append([]float32(nil), z...)
				dots, dots1 := cdmoePartsC(a, base, e, w, n, y, y1, off, z, z1)
				for c := range dots {
					if math.Float32bits(dots[c]) != math.Float32bits(dots1[c]) {
						t.Fatalf("level %d, n %d, m %d: dot %d = %v, one at a time %v", level, n, m, c, dots[c], dots1[c])
					}
				}
				for j := range y {
					if math.Float32bits(y[j]) != math.Float32bits(y1[j]) {
						t.Fatalf("level %d, n %d, m %d: y[%d] = %v, a row at a time %v", level, n, m, j, y[j], y1[j])
					}
				}
				for j := range z {
					if math.Float32bits(z[j]) != math.Float32bits(z1[j]) {
						t.Fatalf("level %d, n %d, m %d: z[%d] = %v, a row at a time %v", level, n, m, j, z[j], z1[j])
					}
				}
			}
		}
	}
}

// BenchmarkCDMoEExpertsBackward times CDMoE's expert backward in C alone
// (wm_cdmoe_bwd_tokens: each chosen expert's two dots, its activation, the
// updates of its two rows of dEdown and dEup, of the token's dφ and of the
// query's and keys' gradients) for one worker's tokens at d_model 64 (2048
// tokens) and 256 (512 tokens), 4 heads of top-8 over 32² experts, as in
// (SE)3 IE's step. The chosen experts are drawn from the first side² of
// each half's keys: at side 32 they spread over every expert's rows (as
// training's do), at 4 over 16 experts whose rows stay in the first-level
// cache. The difference between the two is the cost of fetching the rows;
// ns/pair is per (token, expert).
func BenchmarkCDMoEExpertsBackward(b *testing.B) { benchCDMoEExperts(b, true) }

// BenchmarkCDMoEExpertsForward is BenchmarkCDMoEExpertsBackward for the
// forward (wm_cdmoe_fwd_tokens: each chosen expert's dot, its activation,
// and its row of Eup added into the token's output).
func BenchmarkCDMoEExpertsForward(b *testing.B) { benchCDMoEExperts(b, false) }

func benchCDMoEExperts(b *testing.B, backward bool) {
	for _, dm := range []int{64, 256} {
		for _, side := range []int{32, 16, 4} {
			b.Run(fmt.Sprintf("d=%d/experts=%d", dm, side*side), func(b *testing.B) {
				k := cdmoeKernel{b: 1, t: 2048 * 64 / dm, dm: dm, heads: 4, nk: 32, half: 32, topk: 8, act: siluFunc}
				N, nc := k.b*k.t, k.heads*k.topk
				c := newCDMoEExpertsCase(k, 1, func(r *rand.Rand) (int, int, float64) { return r.Intn(side), r.Intn(side), 0.5 })
				acc := cdmoeGrads[float32]{make([]float32, len(c.Edown)), make([]float32, len(c.Eup)), make([]float32, len(c.keys))}
				y, dphi, dq := make([]float32, N*k.dm), make([]float32, N*k.dm), make([]float32, N*k.qdim())
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					ran := false
					if backward {
						ran = cdmoeExpertsRangeC(k, 0, N, c.chosen, nil, c.g, c.sh, c.Edown, c.Eup, c.keys, &acc, dphi, dq)
					} else {
						ran = cdmoeExpertsRangeC(k, 0, N, c.chosen, y, nil, c.sh, c.Edown, c.Eup, c.keys, nil, nil, nil)
					}
					if !ran {
						b.Fatal("the C kernel did not run")
					}
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(N*nc), "ns/pair")
			})
		}
	}
}

// cdmoeExpertsCase is the inputs of CDMoE's expert kernels for k: the
// shared activations φ and queries, the upstream gradient, both expert
// tables and the keys, drawn from N(0, 1), and heads·top_k choices per
// token whose keys and score choose draws.
type cdmoeExpertsCase struct {
	sh                  cdmoeAct[float32]
	g, Edown, Eup, keys []float32
	chosen              []expertChoice
}

func newCDMoEExpertsCase(k cdmoeKernel, seed int64, choose func(*rand.Rand) (ix, iy int, s float64)) cdmoeExpertsCase {
	N := k.b * k.t
	r := rand.New(rand.NewSource(seed))
	fill := func(n int) []float32 { return normalFloat32s(r, n) }
	c := cdmoeExpertsCase{sh: cdmoeAct[float32]{phi: fill(N * k.dm), q: fill(N * k.qdim())}}
	c.g, c.Edown, c.Eup, c.keys = fill(N*k.dm), fill(k.nk*k.nk*k.dm), fill(k.nk*k.nk*k.dm), fill(k.heads*k.nk*2*k.half)
	c.chosen = make([]expertChoice, N*k.heads*k.topk)
	for i := range c.chosen {
		ix, iy, s := choose(r)
		c.chosen[i] = expertChoice{e: ix*k.nk + iy, ix: ix, iy: iy, s: s}
	}
	return c
}

// At level AVX-512 the backward updates its rows on sixteen lanes
// (wm_cdmoe_bwd_zmm) where d_model is a multiple of 16 and the query
// halves are 16 to 64, and the forward sums its output on sixteen lanes
// (wm_cdmoe_fwd_zmm) where d_model is a multiple of 16. The output and
// every gradient must have the AVX2 kernels' bits, the gradients added
// into buffers that hold values already: d_model 64 with halves of 32 (its
// body of constants), 64-value chunks with and without 16-value ones after
// them, more choices per token than a block (5 heads × 16), experts and
// keys chosen more than once within a head (the rows a choice updates are
// read by the next one), and a head's choices on both sides of a block's
// edge (dq's runs). Sizes they do not take (d_model 72) must run the AVX2
// kernels.
func TestCDMoEExpertsAVX512KeepBits(t *testing.T) {
	defer setKernelLevel(levelAVX512)
	if setKernelLevel(levelAVX512) != levelAVX512 {
		t.Skip("this CPU has no AVX-512")
	}
	for _, k := range []cdmoeKernel{
		{b: 1, t: 11, dm: 64, heads: 5, nk: 16, half: 32, topk: 16, act: siluFunc},
		{b: 2, t: 7, dm: 64, heads: 4, nk: 8, half: 32, topk: 8, act: siluFunc},
		{b: 1, t: 6, dm: 256, heads: 4, nk: 8, half: 32, topk: 8, act: siluFunc},
		{b: 1, t: 6, dm: 176, heads: 5, nk: 8, half: 16, topk: 16, act: siluFunc},
		{b: 1, t: 6, dm: 64, heads: 3, nk: 8, half: 48, topk: 8, act: siluFunc},
		{b: 1, t: 6, dm: 72, heads: 3, nk: 8, half: 12, topk: 8, act: siluFunc},
	} {
		t.Run(fmt.Sprintf("d%d_half%d_heads%d_topk%d", k.dm, k.half, k.heads, k.topk), func(t *testing.T) {
			N, lo, hi := k.b*k.t, 1, k.b*k.t-1
			c := newCDMoEExpertsCase(k, 29, func(r *rand.Rand) (int, int, float64) {
				return r.Intn(k.nk), r.Intn(3), float64(float32(r.NormFloat64()))
			})
			r := rand.New(rand.NewSource(31))
			start := [][]float32{normalFloat32s(r, N*k.dm), normalFloat32s(r, N*k.qdim()),
				normalFloat32s(r, len(c.Edown)), normalFloat32s(r, len(c.Eup)), normalFloat32s(r, len(c.keys)),
				normalFloat32s(r, N*k.dm)}
			run := func(level int) [][]float32 {
				if setKernelLevel(level) != level {
					t.Fatalf("level %d is not available", level)
				}
				out := make([][]float32, len(start))
				for i, s := range start {
					out[i] = append([]float32(nil), s...)
				}
				acc := cdmoeGrads[float32]{out[2], out[3], out[4]}
				if !cdmoeExpertsRangeC(k, lo, hi, c.chosen, nil, c.g, c.sh, c.Edown, c.Eup, c.keys, &acc, out[0], out[1]) ||
					!cdmoeExpertsRangeC(k, lo, hi, c.chosen, out[5], nil, c.sh, c.Edown, c.Eup, c.keys, nil, nil, nil) {
					t.Fatalf("level %d: the C kernels did not run", level)
				}
				return out
			}
			want, got := run(levelAVX2), run(levelAVX512)
			for i, name := range []string{"dphi", "dq", "dEdown", "dEup", "dkeys", "y"} {
				moved := false
				for j := range want[i] {
					if math.Float32bits(got[i][j]) != math.Float32bits(want[i][j]) {
						t.Fatalf("%s[%d] = %v at AVX-512, %v at AVX2", name, j, got[i][j], want[i][j])
					}
					moved = moved || want[i][j] != start[i][j]
				}
				if !moved {
					t.Fatalf("%s: the kernel changed nothing", name)
				}
			}
		})
	}
}
