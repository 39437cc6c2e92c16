//go:build openblas

package ops

import (
	"math"
	"math/rand"
	"testing"
)

// TestSoftmaxRowsGroupedSameBits holds the C softmax and log-sum-exp rows,
// which take WM_SOFTMAX_GROUP rows through each pass at a time, to the bits
// of the same rows taken one at a time (a call of one row, with the causal
// offset of that row), in every kernel variant this CPU has: grouping
// reorders the rows' passes, not the operations within a row. The shapes
// cover rows shorter than a vector, causal blocks whose first rows see one
// key, a last group shorter than the others, and fully masked tails.
func TestSoftmaxRowsGroupedSameBits(t *testing.T) {
	defer setKernelLevel(levelAVX512)
	r := rand.New(rand.NewSource(7))
	for _, level := range []struct {
		name  string
		level int
	}{{"avx512", levelAVX512}, {"avx2", levelAVX2}, {"sse2", levelSSE2}} {
		if setKernelLevel(level.level) != level.level {
			t.Logf("%s: not on this CPU", level.name)
			continue
		}
		for _, sh := range []struct{ rows, n, last0 int }{
			{1, 1, 0}, {3, 5, 0}, {4, 16, 12}, {5, 17, 12}, {9, 64, 0}, {64, 256, 192}, {7, 300, 300}, {13, 260, 259}, {6, 1024, 40},
		} {
			src := make([]float32, sh.rows*sh.n)
			for i := range src {
				src[i] = float32(4 * r.NormFloat64())
			}
			src[len(src)/2] = -1e30 // an exponential that underflows
			// The softmax: the block at once against each row alone.
			got := append([]float32(nil), src...)
			softmaxRows32(got, sh.rows, sh.n, sh.last0)
			want := append([]float32(nil), src...)
			for i := 0; i < sh.rows; i++ {
				softmaxRows32(want[i*sh.n:(i+1)*sh.n], 1, sh.n, sh.last0+i)
			}
			for i := range got {
				if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
					t.Fatalf("%s softmax %+v: p[%d] = %v in a block, %v alone", level.name, sh, i, got[i], want[i])
				}
			}
			// The log-sum-exp parts: the block at once against lseParts32 of each row.
			e := make([]float32, len(src))
			maxs := make([]float32, sh.rows)
			sums := make([]float64, sh.rows)
			lsePartsRows32(src, e, maxs, sums, sh.rows, sh.n)
			e1 := make([]float32, sh.n)
			for i := 0; i < sh.rows; i++ {
				m, s := lseParts32(src[i*sh.n:(i+1)*sh.n], e1)
				if math.Float32bits(m) != math.Float32bits(maxs[i]) || math.Float64bits(s) != math.Float64bits(sums[i]) {
					t.Fatalf("%s lse %+v row %d: max, sum %v, %v in a block, %v, %v alone", level.name, sh, i, maxs[i], sums[i], m, s)
				}
				for j, v := range e1 {
					if math.Float32bits(v) != math.Float32bits(e[i*sh.n+j]) {
						t.Fatalf("%s lse %+v: e[%d][%d] = %v in a block, %v alone", level.name, sh, i, j, e[i*sh.n+j], v)
					}
				}
			}
		}
	}
}
