package ops

import (
	"fmt"
	"math"
	"math/rand"
	"testing"
)

// gemmTall and gemmTallSerial compute the product, whether they run it whole or in row blocks
// (the blocked path is forced on here, whatever this machine's BLAS):
// every element within float32's rounding of a k-term sum of the float64
// product, for untransposed and transposed right operands, a row count
// that leaves a short last block, leading dimensions wider than the
// operands (the columns past n untouched), beta 0 (c's old values ignored,
// NaN included) and beta 1. (Not to the bit against one product: OpenBLAS's
// AVX2 kernels round rows differently with the row count, as any split of
// the rows does.)
func TestGemmTallComputesTheProduct(t *testing.T) {
	defer func(v bool) { blasSmallKernels = v }(blasSmallKernels)
	r := rand.New(rand.NewSource(5))
	fill := func(n int) []float32 { return normalFloat32s(r, n) }
	for _, blocked := range []bool{false, true} {
		blasSmallKernels = blocked
		for _, c := range []struct{ m, n, k, extra int }{{2048, 176, 64, 0}, {1000, 64, 64, 3}, {333, 36, 64, 0}, {5, 64, 176, 1}} {
			if blocked && c.m > 100 && tallRowBlock(c.n, c.k) == 0 {
				t.Fatalf("m=%d n=%d k=%d: the case does not block", c.m, c.n, c.k)
			}
			for _, transB := range []bool{false, true} {
				for _, beta := range []float32{0, 1} {
					name := fmt.Sprintf("blocked=%v m=%d n=%d k=%d transB=%v beta=%v", blocked, c.m, c.n, c.k, transB, beta)
					lda, ldc := c.k+c.extra, c.n+c.extra
					ldb, bRows := c.n+c.extra, c.k
					if transB {
						ldb, bRows = c.k+c.extra, c.n
					}
					a, b, c0 := fill(c.m*lda), fill(bRows*ldb), fill(c.m*ldc)
					if beta == 0 {
						for i := range c0 {
							if i%ldc < c.n {
								c0[i] = float32(math.NaN())
							}
						}
					}
					for _, serial := range []bool{false, true} {
						got := append([]float32(nil), c0...)
						if serial {
							gemmTallSerial(transB, c.m, c.n, c.k, a, lda, b, ldb, beta, got, ldc)
						} else {
							gemmTall(transB, c.m, c.n, c.k, a, lda, b, ldb, beta, got, ldc)
						}
						term := func(i, j, q int) float64 {
							if transB {
								return float64(a[i*lda+q]) * float64(b[j*ldb+q])
							}
							return float64(a[i*lda+q]) * float64(b[q*ldb+j])
						}
						checkGemmResult(t, fmt.Sprintf("%s serial=%v", name, serial), got, c0, c.m, c.n, c.k, ldc, beta, term)
					}
				}
			}
		}
	}
}

// gemmTall takes the 64-wide kernel exactly where tallTiles64 says (a
// product OpenBLAS would pack, float32, the kernel on, n at least 64, k at
// most 256) and computes the product there too: a d_model-256 projection
// over rows that leave a short last block of tallTileRows and of six, 260
// and 688 columns (the last tile masked), with b untransposed and
// transposed (copied), leading dimensions wider than the operands, beta 0
// (c poisoned with NaN) and 1; and not for depth 344 or 36 columns.
func TestGemmTallTiles64(t *testing.T) {
	defer func(v bool) { blasSmallKernels = v }(blasSmallKernels)
	blasSmallKernels = false // as OpenBLAS's Haswell kernels and d_model 256: every product packed
	r := rand.New(rand.NewSource(66))
	for _, c := range []struct{ m, n, k, extra int }{{601, 256, 256, 3}, {7, 128, 64, 0}, {40, 260, 256, 0}, {30, 688, 256, 2}, {50, 256, 344, 1}, {20, 36, 256, 0}} {
		for _, transB := range []bool{false, true} {
			for _, beta := range []float32{0, 1} {
				name := fmt.Sprintf("m=%d n=%d k=%d transB=%v beta=%v", c.m, c.n, c.k, transB, beta)
				lda, ldc := c.k+c.extra, c.n+c.extra
				ldb, bRows := c.n+c.extra, c.k
				if transB {
					ldb, bRows = c.k+c.extra, c.n
				}
				a, b, c0 := normalFloat32s(r, c.m*lda), normalFloat32s(r, bRows*ldb), normalFloat32s(r, c.m*ldc)
				if beta == 0 {
					for i := range c0 {
						if i%ldc < c.n {
							c0[i] = float32(math.NaN())
						}
					}
				}
				got := append([]float32(nil), c0...)
				rec, err := RecordGemm(func() error {
					gemmTall(transB, c.m, c.n, c.k, a, lda, b, ldb, beta, got, ldc)
					return nil
				})
				if err != nil {
					t.Fatal(err)
				}
				kernel := width64On() && c.n >= width64 && c.k <= 256
				if tallTiles64(c.n, c.k, a) != kernel {
					t.Fatalf("%s: tallTiles64 says %v; want %v", name, !kernel, kernel)
				}
				for s := range rec.Shapes {
					if s.Width64 != kernel {
						t.Errorf("%s: recorded %+v; want the 64-wide kernel %v", name, s, kernel)
					}
				}
				term := func(i, j, q int) float64 {
					if transB {
						return float64(a[i*lda+q]) * float64(b[j*ldb+q])
					}
					return float64(a[i*lda+q]) * float64(b[q*ldb+j])
				}
				checkGemmResult(t, name, got, c0, c.m, c.n, c.k, ldc, beta, term)
			}
		}
	}
}

// checkGemmResult fails unless got [m, ldc] holds, in its first n columns,
// Σ_q term(i, j, q) over k terms plus beta times c0's element, within
// float32's rounding of a (k+2)-term sum, and c0's values past n
// untouched.
func checkGemmResult(t *testing.T, name string, got, c0 []float32, m, n, k, ldc int, beta float32, term func(i, j, q int) float64) {
	t.Helper()
	for i := 0; i < m; i++ {
		for j := 0; j < ldc; j++ {
			o := i*ldc + j
			if j >= n {
				if math.Float32bits(got[o]) != math.Float32bits(c0[o]) {
					t.Fatalf("%s: c[%d][%d] past n changed: %v, was %v", name, i, j, got[o], c0[o])
				}
				continue
			}
			var want, mag float64
			for q := 0; q < k; q++ {
				p := term(i, j, q)
				want += p
				mag += math.Abs(p)
			}
			if beta != 0 {
				want += float64(beta) * float64(c0[o])
				mag += math.Abs(float64(beta) * float64(c0[o]))
			}
			if diff := math.Abs(float64(got[o]) - want); !(diff <= float64(k+2)*0x1p-24*mag) {
				t.Fatalf("%s: c[%d][%d] = %v, want %v (|Σ| of the terms %v)", name, i, j, got[o], want, mag)
			}
		}
	}
}

// BenchmarkGemmTall times a d_model-64 linear layer's products over 2048
// tokens (forward x·w, input gradient dy·wᵀ), those of the narrow B, C
// and dt projections at d_model 256 over 4096, and a d_model-256
// projection's and MLP input's over 1024 (a shard's worker's rows), each
// way gemmTall can run them: whole on OpenBLAS's packed kernels (whole),
// in row blocks on its small-matrix kernels (blocked) and on the 64-wide
// kernel (tiles, tallTiles64), with the operands out of cache as in a step
// (a 32 MiB array is written between iterations, untimed).
func BenchmarkGemmTall(b *testing.B) {
	defer func(v bool) { blasSmallKernels = v }(blasSmallKernels)
	defer func(v bool) { width64Enabled = v }(width64Enabled)
	small, kernel := blasSmallKernels, width64On()
	evict := make([]float32, 8<<20)
	for _, s := range []struct {
		name   string
		n, k   int
		transB bool
		rows   int
		ways   []string
	}{{"x·w 64x176", 176, 64, false, 2048, []string{"whole", "blocked"}},
		{"dy·wᵀ 176x64", 64, 176, true, 2048, []string{"whole", "blocked"}},
		{"x·w 64x64", 64, 64, false, 2048, []string{"whole", "blocked", "tiles"}},
		{"x·w 256x36 (d256 B, C, dt)", 36, 256, false, 4096, []string{"whole", "blocked"}},
		{"dy·wᵀ 36x256", 256, 36, true, 4096, []string{"whole", "blocked", "tiles"}},
		{"x·w 256x256 (d256 projection)", 256, 256, false, 1024, []string{"whole", "tiles"}},
		{"dy·wᵀ 256x256", 256, 256, true, 1024, []string{"whole", "tiles"}},
		{"x·w 256x688 (d256 MLP input)", 688, 256, false, 1024, []string{"whole", "tiles"}}} {
		a := make([]float32, s.rows*s.k)
		w := make([]float32, s.k*s.n)
		c := make([]float32, s.rows*s.n)
		for i := range a {
			a[i] = float32(i%7) * 0.1
		}
		for i := range w {
			w[i] = float32(i%5) * 0.1
		}
		ldb := s.n
		if s.transB {
			ldb = s.k
		}
		for _, way := range s.ways {
			b.Run(fmt.Sprintf("%s/%s", s.name, way), func(b *testing.B) {
				switch {
				case way == "blocked" && !small:
					b.Skip("this BLAS has no small-matrix kernels (ops.BLASCore)")
				case way == "tiles" && !kernel:
					b.Skip("the 64-wide kernel is off in this build or on this CPU")
				}
				blasSmallKernels, width64Enabled = way == "blocked", way == "tiles"
				for i := 0; i < b.N; i++ {
					b.StopTimer()
					for j := range evict {
						evict[j]++
					}
					b.StartTimer()
					gemmTall(s.transB, s.rows, s.n, s.k, a, s.k, w, ldb, 0, c, s.n)
				}
				b.ReportMetric(2*float64(s.rows*s.n*s.k)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
			})
		}
	}
}
