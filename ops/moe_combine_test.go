package ops

import (
	"fmt"
	"math"
	"math/rand"
	"runtime"
	"testing"

	"gorgonia.org/tensor"
)

// moeCombine shares tokens out to workers; each token's sum must equal, to
// the bit, the serial sum over experts in expert order (three per token, so
// that the order shows), whatever the number of workers, with gates (the
// forward) and without (the backward); closing a block (a residual stream
// given), it is x + that sum, by blocks of residualRowBlock tokens (the
// tokens span several, and a part of one).
func TestMoECombineSplitInvariant(t *testing.T) {
	const tokens, d, n = 2*residualRowBlock + 37, 5, 6
	r := rand.New(rand.NewSource(9))
	k := moeKernel{x: tensor.Shape{tokens, d}, d: d, n: n}
	if k.tokens() != tokens {
		t.Fatalf("kernel has %d tokens, want %d", k.tokens(), tokens)
	}
	g := make([]float32, tokens*n)
	experts := make([]moeExpert[float32], n)
	for tok := 0; tok < tokens; tok++ {
		for _, e := range r.Perm(n)[:3] {
			g[tok*n+e] = r.Float32()
		}
		for e := 0; e < n; e++ {
			if g[tok*n+e] != 0 {
				experts[e].tokens = append(experts[e].tokens, tok)
			}
		}
	}
	for e := range experts {
		experts[e].rows = make([]float32, len(experts[e].tokens)*d)
		for i := range experts[e].rows {
			experts[e].rows[i] = float32(r.NormFloat64())
		}
	}
	x := make([]float32, tokens*d)
	for i := range x {
		x[i] = float32(r.NormFloat64())
	}
	for _, c := range []struct {
		gates, xres []float32
	}{{g, nil}, {nil, nil}, {g, x}} {
		want := make([]float32, tokens*d)
		for e, ex := range experts {
			for i, tok := range ex.tokens {
				scale := float32(1)
				if c.gates != nil {
					scale = c.gates[tok*n+e]
				}
				for j := 0; j < d; j++ {
					want[tok*d+j] += scale * ex.rows[i*d+j]
				}
			}
		}
		if c.xres != nil {
			for i := range want {
				want[i] = c.xres[i] + want[i]
			}
		}
		for _, procs := range []int{1, 2, 3, 5} {
			old := runtime.GOMAXPROCS(procs)
			got := make([]float32, tokens*d)
			for i := range got {
				got[i] = 7 // overwritten: the combine clears its ranges
			}
			moeCombine(got, c.gates, c.xres, experts, k)
			runtime.GOMAXPROCS(old)
			for i := range got {
				if got[i] != want[i] {
					t.Fatalf("gates %v, residual %v, GOMAXPROCS %d: value %d is %v, serial sum %v", c.gates != nil, c.xres != nil, procs, i, got[i], want[i])
				}
			}
		}
	}
}

// moeTokens lists, for each expert, the tokens whose gate is not zero (NaN
// counts, ±0 does not), ascending, as appending token by token did, from
// float32 and float64 gates alike, through both of its paths (moeChoices32
// for float32 gates of at most 64 experts, moeTokensGo for the rest) and
// moeTokensGo itself; an expert nobody chose has none, and no expert's list
// reaches into another's (appending to one leaves the next alone). The
// widths cover a mask shorter than eight gates, a tail after eight, a full
// 64-bit mask, and one expert past it.
func TestMoETokensMatchesAppend(t *testing.T) {
	for _, n := range []int{1, 3, 8, 13, 64, 65} {
		r := rand.New(rand.NewSource(int64(9 + n)))
		const tokens = 300
		g := make([]float32, tokens*n)
		for i := range g {
			switch r.Intn(8) {
			case 0:
				g[i] = r.Float32() + 0.01
			case 1:
				g[i] = float32(math.Copysign(0, -1))
			case 2:
				g[i] = -r.Float32() - 0.01
			}
		}
		g[7*n+n/2] = float32(math.NaN())
		never := n / 3
		for tk := 0; tk < tokens; tk++ {
			g[tk*n+never] = 0 // this expert is never chosen
		}
		k := moeKernel{x: tensor.Shape{tokens, 4}, d: 4, n: n}
		g64 := make([]float64, len(g))
		for i, v := range g {
			g64[i] = float64(v)
		}
		for _, c := range []struct {
			name string
			got  []moeExpert[float32]
		}{{"moeTokens", moeTokens(g, k)}, {"moeTokensGo", moeTokensGo(g, tokens, n)}, {"moeTokens float64", asExperts32(moeTokens(g64, k))}} {
			got := c.got
			if len(got) != n {
				t.Fatalf("n=%d %s: %d experts", n, c.name, len(got))
			}
			for e := 0; e < n; e++ {
				var want []int
				for tk := 0; tk < tokens; tk++ {
					if v := g[tk*n+e]; v != 0 {
						want = append(want, tk)
					}
				}
				if fmt.Sprint(got[e].tokens) != fmt.Sprint(want) {
					t.Fatalf("n=%d %s, expert %d: tokens %v, want %v", n, c.name, e, got[e].tokens, want)
				}
			}
			for e := 0; e+1 < n; e++ {
				if len(got[e].tokens) == 0 || len(got[e+1].tokens) == 0 {
					continue
				}
				next := append([]int(nil), got[e+1].tokens...)
				_ = append(got[e].tokens, -1)
				if fmt.Sprint(got[e+1].tokens) != fmt.Sprint(next) {
					t.Fatalf("n=%d %s: appending to expert %d's tokens changed expert %d's", n, c.name, e, e+1)
				}
			}
		}
	}
}

// asExperts32 is the token lists of float64 experts, as float32 experts.
func asExperts32(ex []moeExpert[float64]) []moeExpert[float32] {
	out := make([]moeExpert[float32], len(ex))
	for i := range ex {
		out[i].tokens = ex[i].tokens
	}
	return out
}
