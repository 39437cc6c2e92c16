package ops

import (
	"math"
	"math/rand"
	"sort"
	"testing"
)

func TestTopKMatchesSort(t *testing.T) {
	r := rand.New(rand.NewSource(5))
	for trial := 0; trial < 200; trial++ {
		n := 1 + r.Intn(40)
		k := 1 + r.Intn(n)
		s := make([]float64, n)
		for i := range s {
			s[i] = float64(r.Intn(10)) // many ties
		}
		want := make([]int, n)
		for i := range want {
			want[i] = i
		}
		sort.SliceStable(want, func(a, b int) bool { return s[want[a]] > s[want[b]] })
		got := make([]int, k)
		topK(got, s, k)
		for i := 0; i < k; i++ {
			if got[i] != want[i] {
				t.Fatalf("topK(%v, %d) = %v, want %v", s, k, got, want[:k])
			}
		}
	}
}

// retrieveAllSums is retrieve as listing 8 writes it: all k² sums of the
// halves' top-k, and their top-k.
func retrieveAllSums(k cdmoeKernel, sim []float32, out []expertChoice) {
	half := [2][]float32{sim[:k.nk], sim[k.nk : 2*k.nk]}
	idx := [2][]int{make([]int, k.topk), make([]int, k.topk)}
	for p := range idx {
		topK(idx[p], half[p], k.topk)
	}
	sums := make([]float32, k.topk*k.topk)
	for i := range k.topk {
		for j := range k.topk {
			sums[i*k.topk+j] = half[0][idx[0][i]] + half[1][idx[1][j]]
		}
	}
	pick := make([]int, k.topk)
	topK(pick, sums, k.topk)
	for r, pi := range pick {
		ix, iy := idx[0][pi/k.topk], idx[1][pi%k.topk]
		out[r] = expertChoice{e: ix*k.nk + iy, ix: ix, iy: iy, s: float64(sums[pi])}
	}
}

// retrieve forms only the sums that can be picked; its choice must be the
// listing's to the bit, ties (few distinct values) and non-finite
// similarities included.
func TestRetrieveMatchesAllSums(t *testing.T) {
	r := rand.New(rand.NewSource(11))
	for trial := 0; trial < 3000; trial++ {
		nk := 1 + r.Intn(40)
		k := cdmoeKernel{nk: nk, topk: 1 + r.Intn(nk)}
		sim := make([]float32, 2*nk)
		levels := 1 + r.Intn(12)
		for i := range sim {
			switch {
			case trial%5 == 0:
				sim[i] = float32(r.Intn(levels)) / 4 // many ties
			case trial%7 == 0 && r.Intn(8) == 0:
				sim[i] = []float32{float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1))}[r.Intn(3)]
			default:
				sim[i] = float32(r.NormFloat64())
			}
		}
		b := newRetrieveBufs[float32](k)
		got, want := make([]expertChoice, k.topk), make([]expertChoice, k.topk)
		retrieve(k, sim, &b, got)
		retrieveAllSums(k, sim, want)
		for i := range want {
			g, w := got[i], want[i]
			if g.e != w.e || g.ix != w.ix || g.iy != w.iy || math.Float64bits(g.s) != math.Float64bits(w.s) {
				t.Fatalf("nk=%d k=%d sim=%v: pick %d = %+v, want %+v", nk, k.topk, sim, i, g, w)
			}
		}
	}
}
