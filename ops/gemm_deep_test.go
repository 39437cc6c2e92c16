package ops

import (
	"fmt"
	"math"
	"math/rand"
	"testing"
)

// gemmDeep computes aᵀ·b whether it runs whole or in blocks of rows (the
// blocked path is forced on here, whatever this machine's BLAS): every
// element within float32's rounding of a k-term sum of the float64 product,
// for row counts that divide into blocks evenly and not, leading dimensions
// wider than the operands (the columns past n untouched), beta 0 (c's old
// values ignored, NaN included) and beta 1.
func TestGemmDeepComputesTheProduct(t *testing.T) {
	defer func(v bool) { blasSmallKernels = v }(blasSmallKernels)
	r := rand.New(rand.NewSource(6))
	for _, blocked := range []bool{false, true} {
		blasSmallKernels = blocked
		for _, c := range []struct{ m, n, k, extra int }{{64, 176, 2048, 0}, {176, 64, 2048, 3}, {64, 36, 1000, 1}, {64, 64, 100, 0}} {
			blk := deepRowBlock(c.m, c.n)
			if blocked && (blk == 0 || blk >= c.k) && c.k > 244 {
				t.Fatalf("m=%d n=%d k=%d: the case does not block", c.m, c.n, c.k)
			}
			for _, beta := range []float32{0, 1} {
				name := fmt.Sprintf("blocked=%v m=%d n=%d k=%d beta=%v", blocked, c.m, c.n, c.k, beta)
				lda, ldb, ldc := c.m+c.extra, c.n+c.extra, c.n+c.extra
				a, b, c0 := normalFloat32s(r, c.k*lda), normalFloat32s(r, c.k*ldb), normalFloat32s(r, c.m*ldc)
				if beta == 0 {
					for i := range c0 {
						if i%ldc < c.n {
							c0[i] = float32(math.NaN())
						}
					}
				}
				got := append([]float32(nil), c0...)
				gemmDeep(blk, c.m, c.n, c.k, a, lda, b, ldb, beta, got, ldc)
				term := func(i, j, q int) float64 { return float64(a[q*lda+i]) * float64(b[q*ldb+j]) }
				checkGemmResult(t, name, got, c0, c.m, c.n, c.k, ldc, beta, term)
			}
		}
	}
}

// A weight gradient split by output columns over workers, each passing the
// block of the whole output, gives the bits of the unsplit product: the
// blocks of rows, and so the order of every element's sum, do not depend on
// the split (Linear's backward splits dw's columns over GOMAXPROCS).
func TestGemmDeepColumnSplitSameBits(t *testing.T) {
	r := rand.New(rand.NewSource(7))
	m, n, k := 64, 176, 2048
	a, b := normalFloat32s(r, k*m), normalFloat32s(r, k*n)
	blk := deepRowBlock(m, n)
	whole := make([]float32, m*n)
	gemmDeep(blk, m, n, k, a, m, b, n, 0, whole, n)
	for _, parts := range []int{2, 3} {
		split := make([]float32, m*n)
		for p := 0; p < parts; p++ {
			lo, hi := p*n/parts, (p+1)*n/parts
			gemmDeep(blk, m, hi-lo, k, a, m, b[lo:], n, 0, split[lo:], n)
		}
		for i := range whole {
			if math.Float32bits(whole[i]) != math.Float32bits(split[i]) {
				t.Fatalf("blk %d, %d column parts: element %d is %v, unsplit %v", blk, parts, i, split[i], whole[i])
			}
		}
	}
}
