package ops

import (
	"math"
	"math/rand"
	"testing"
)

// A small a·bᵀ through a copy of bᵀ (as gemm runs it where BLAS has small
// kernels; forced here, since gonum's BLAS runs it as well) gives the
// product within float32 rounding of the float64 sums, for beta 0 and 1,
// leading dimensions wider than the rows, and sizes around the 8 × 8 tiles
// of the copy; the shape recorded is the untransposed product that ran.
func TestGemmUntransposedBComputesTheProduct(t *testing.T) {
	defer func(v bool) { blasSmallKernels = v }(blasSmallKernels)
	blasSmallKernels = true
	rng := rand.New(rand.NewSource(5))
	for _, sz := range [][3]int{{64, 64, 16}, {64, 16, 64}, {13, 9, 7}, {1, 5, 3}, {40, 24, 33}} {
		m, n, k := sz[0], sz[1], sz[2]
		lda, ldb, ldc := k+2, k+1, n+3
		a, b := make([]float32, m*lda), make([]float32, n*ldb)
		for i := range a {
			a[i] = float32(rng.NormFloat64())
		}
		for i := range b {
			b[i] = float32(rng.NormFloat64())
		}
		for _, beta := range []float32{0, 1} {
			c := make([]float32, m*ldc)
			for i := range c {
				c[i] = float32(rng.NormFloat64())
			}
			c0 := append([]float32(nil), c...)
			if !untransposeB(false, true, m, n, k) {
				t.Fatalf("%d×%d×%d: untransposeB is false with small kernels", m, n, k)
			}
			shapes, err := RecordGemmShapes(func() error {
				gemm(false, true, m, n, k, 1, a, lda, b, ldb, beta, c, ldc)
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			ran := GemmShape{M: m, N: n, K: k, LDA: lda, LDB: n, LDC: ldc, Accumulate: beta != 0}
			if len(shapes) != 1 || shapes[ran] != 1 {
				t.Fatalf("%d×%d×%d: recorded %v, want %+v once", m, n, k, shapes, ran)
			}
			for i := 0; i < m; i++ {
				for j := 0; j < n; j++ {
					want, mag := float64(beta)*float64(c0[i*ldc+j]), math.Abs(float64(beta)*float64(c0[i*ldc+j]))
					for l := 0; l < k; l++ {
						p := float64(a[i*lda+l]) * float64(b[j*ldb+l])
						want += p
						mag += math.Abs(p)
					}
					if got := float64(c[i*ldc+j]); math.Abs(got-want) > 4*float64(k+1)*0x1p-24*mag {
						t.Fatalf("%d×%d×%d beta %g: c[%d][%d] = %g, want %g", m, n, k, beta, i, j, got, want)
					}
				}
			}
			for i := 0; i < m; i++ { // the columns past n are not written
				for j := n; j < ldc && i*ldc+j < len(c); j++ {
					if c[i*ldc+j] != c0[i*ldc+j] {
						t.Fatalf("%d×%d×%d: c[%d][%d] past the product was written", m, n, k, i, j)
					}
				}
			}
		}
	}
	if untransposeB(false, true, 128, 128, 128) || untransposeB(true, true, 8, 8, 8) || untransposeB(false, false, 8, 8, 8) {
		t.Error("untransposeB is true for a product past the small kernels' size, or not of the form a·bᵀ")
	}
}
