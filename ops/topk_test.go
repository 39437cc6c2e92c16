package ops

import (
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
