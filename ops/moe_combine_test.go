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
// forward) and without (the backward).
func TestMoECombineSplitInvariant(t *testing.T) {
	const tokens, d, n = 37, 5, 6
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
	for _, gates := range [][]float32{g, nil} {
		want := make([]float32, tokens*d)
		for e, ex := range experts {
			for i, tok := range ex.tokens {
				scale := float32(1)
				if gates != nil {
					scale = gates[tok*n+e]
				}
				for j := 0; j < d; j++ {
					want[tok*d+j] += scale * ex.rows[i*d+j]
				}
			}
		}
		for _, procs := range []int{1, 2, 3, 5} {
			old := runtime.GOMAXPROCS(procs)
			got := make([]float32, tokens*d)
			for i := range got {
				got[i] = 7 // overwritten: the combine clears its ranges
			}
			moeCombine(got, gates, experts, k)
			runtime.GOMAXPROCS(old)
			for i := range got {
				if got[i] != want[i] {
					t.Fatalf("gates %v, GOMAXPROCS %d: value %d is %v, serial sum %v", gates != nil, procs, i, got[i], want[i])
				}
			}
		}
	}
}

// moeTokens lists, for each expert, the tokens whose gate is not zero (NaN
// counts, ±0 does not), ascending, as appending token by token did, from
// float32 and float64 gates alike; an expert nobody chose has none, and no
// expert's list reaches into another's (appending to one leaves the next
// alone).
func TestMoETokensMatchesAppend(t *testing.T) {
	r := rand.New(rand.NewSource(9))
	const tokens, n = 300, 8
	g := make([]float32, tokens*n)
	for i := range g {
		switch r.Intn(8) {
		case 0:
			g[i] = r.Float32() + 0.01
		case 1:
			g[i] = float32(math.Copysign(0, -1))
		}
	}
	g[7*n+2] = float32(math.NaN())
	for tk := 0; tk < tokens; tk++ {
		g[tk*n+5] = 0 // expert 5 is never chosen
	}
	k := moeKernel{x: tensor.Shape{tokens, 4}, d: 4, n: n}
	got := moeTokens(g, k)
	for e := 0; e < n; e++ {
		var want []int
		for tk := 0; tk < tokens; tk++ {
			if v := g[tk*n+e]; v != 0 {
				want = append(want, tk)
			}
		}
		if len(got[e].tokens) != len(want) {
			t.Fatalf("expert %d: %d tokens, want %d", e, len(got[e].tokens), len(want))
		}
		for i := range want {
			if got[e].tokens[i] != want[i] {
				t.Fatalf("expert %d, token %d: %d, want %d", e, i, got[e].tokens[i], want[i])
			}
		}
	}
	g64 := make([]float64, len(g))
	for i, v := range g {
		g64[i] = float64(v)
	}
	got64 := moeTokens(g64, k)
	for e := range got64 {
		if fmt.Sprint(got64[e].tokens) != fmt.Sprint(got[e].tokens) {
			t.Fatalf("expert %d: float64 gates give tokens %v, float32 %v", e, got64[e].tokens, got[e].tokens)
		}
	}
	if e := 2; len(got[e].tokens) > 0 && len(got[e+1].tokens) > 0 {
		next := append([]int(nil), got[e+1].tokens...)
		_ = append(got[e].tokens, -1)
		for i, v := range got[e+1].tokens {
			if v != next[i] {
				t.Fatalf("appending to expert %d's tokens changed expert %d's", e, e+1)
			}
		}
	}
}
