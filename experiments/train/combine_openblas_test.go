//go:build openblas

package train

import (
	"math"
	"math/rand"
	"testing"
)

// The C sums of the shards' gradients give combineWeightedGo's bits, in
// the AVX2 loops and the portable ones, for no, one, two and three shards,
// lengths that leave a tail, and terms of -0 (0 + w·-0 is +0).
func TestCombineKernelsMatchGo(t *testing.T) {
	r := rand.New(rand.NewSource(4))
	has := combineAVX2
	defer func() { combineAVX2 = has }()
	for _, avx2 := range []bool{false, true} {
		combineAVX2 = avx2 && has
		for _, n := range []int{0, 1, 7, 8, 9, 100} {
			for shards := 0; shards <= 3; shards++ {
				srcs, ws := make([][]float32, shards), make([]float32, shards)
				for k := range srcs {
					srcs[k] = make([]float32, n)
					for j := range srcs[k] {
						srcs[k][j] = float32(r.NormFloat64())
					}
					if n > 0 {
						srcs[k][0] = float32(math.Copysign(0, -1))
					}
					ws[k] = float32(r.Float64())
				}
				got, want := make([]float32, n), make([]float32, n)
				for j := range got {
					got[j], want[j] = float32(math.NaN()), 5 // stale values either way
				}
				combineWeighted32(got, srcs, ws)
				combineWeightedGo(want, srcs, ws)
				for j := range want {
					if math.Float32bits(got[j]) != math.Float32bits(want[j]) {
						t.Fatalf("avx2=%v n=%d shards=%d: dst[%d] = %v (%#x), Go gives %v (%#x)", combineAVX2, n, shards, j,
							got[j], math.Float32bits(got[j]), want[j], math.Float32bits(want[j]))
					}
				}
			}
		}
	}
}
