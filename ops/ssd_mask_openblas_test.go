//go:build openblas

package ops

import (
	"math"
	"math/rand"
	"testing"
)

// BenchmarkSSDMaskVariants times the SSD's diagonal-block mask and its
// gradient (one head's 64 × 64 block, exp(segsum) kept, the gradient summed
// into acc) in each kernel variant this CPU has; ns/entry is per entry of
// the block, upper triangle included (the kernels clear it).
func BenchmarkSSDMaskVariants(b *testing.B) {
	const L = 64
	r := rand.New(rand.NewSource(5))
	src, gm, seg := make([]float32, L*L), make([]float32, L*L), make([]float32, L*L)
	for i := range src {
		src[i] = float32(r.NormFloat64())
	}
	r64, row := make([]float64, L), make([]float64, L)
	for i := range r64 {
		r64[i] = math.Exp(-r.Float64() / 8)
	}
	c := newSSDMaskGradCase(r, L)
	defer setKernelLevel(levelAVX512)
	for _, v := range []struct {
		name  string
		level int
	}{{"avx512", levelAVX512}, {"avx2", levelAVX2}, {"sse2", levelSSE2}} {
		b.Run("mask/"+v.name, func(b *testing.B) {
			if setKernelLevel(v.level) != v.level {
				b.Skip("not on this CPU")
			}
			for i := 0; i < b.N; i++ {
				ssdMask(gm, src, seg, row, r64, L)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/(L*L), "ns/entry")
		})
		b.Run("grad/"+v.name, func(b *testing.B) {
			if setKernelLevel(v.level) != v.level {
				b.Skip("not on this CPU")
			}
			for i := 0; i < b.N; i++ {
				// dG is overwritten with seg∘Q in place: the values change
				// from call to call, the work does not.
				ssdMaskGrad(c.gm, c.seg, c.dG, c.dcum, c.acc, L)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/(L*L), "ns/entry")
		})
	}
}
