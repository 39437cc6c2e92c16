package ops

import (
	"fmt"
	"math"
	"math/rand"
	"testing"
)

// gemmWidth64 agrees with a float64 sum for every remainder of the kernel's
// six-row blocks, a transposed and an untransposed a, beta 0 (c poisoned
// with NaN, which must not be read) and 1, padded leading dimensions and
// an empty sum, at 64 columns and at widths under 64 (the masked kernel,
// which leaves c's columns past n as they were); a row of c is the same
// bits whatever m it was computed with (from 64 rows, with b copied into
// a panel first), and a masked width's columns the
// same bits as the 64-wide kernel's, as the kernel's doc says.
func TestGemmWidth64MatchesSums(t *testing.T) {
	if width64On() {
		t.Log("the 64-wide kernel is on")
	} else {
		t.Log("the 64-wide kernel is off in this build or on this CPU: gemmWidth64 runs gemm")
	}
	r := rand.New(rand.NewSource(64))
	for _, n := range []int{width64, 63, 48, 33, 17, 16, 1} {
		for _, transA := range []bool{false, true} {
			// 64 rows and more read b from a panel (WM_W64_PACK_ROWS), the
			// rows alone below from b itself.
			for _, m := range []int{1, 2, 3, 4, 5, 6, 7, 11, 12, 13, 37, 64, 67} {
				for _, k := range []int{0, 1, 5, 64, 130} {
					for _, beta := range []float32{0, 1} {
						name := fmt.Sprintf("n=%d transA=%v m=%d k=%d beta=%v", n, transA, m, k, beta)
						lda, ldb, ldc := k+3, width64+5, width64+7
						arows := m
						if transA {
							lda, arows = m+2, k
						}
						a, b := normalFloat32s(r, max(arows, 1)*lda), normalFloat32s(r, max(k, 1)*ldb)
						c0 := normalFloat32s(r, m*ldc)
						c := append([]float32(nil), c0...)
						if beta == 0 {
							for i := range c {
								c[i] = float32(math.NaN())
							}
						}
						const alpha = 0.375
						before := append([]float32(nil), c...)
						gemmWidth64(transA, m, n, k, float32(alpha), a, lda, b, ldb, beta, c, ldc)
						for i := 0; i < m; i++ {
							for j := n; j < ldc; j++ {
								if math.Float32bits(c[i*ldc+j]) != math.Float32bits(before[i*ldc+j]) {
									t.Fatalf("%s: c[%d,%d] past n changed: %v, was %v", name, i, j, c[i*ldc+j], before[i*ldc+j])
								}
							}
							for j := 0; j < n; j++ {
								var want, size float64
								for p := 0; p < k; p++ {
									var ai float32
									if transA {
										ai = a[p*lda+i]
									} else {
										ai = a[i*lda+p]
									}
									want += float64(ai) * float64(b[p*ldb+j])
									size += math.Abs(float64(ai) * float64(b[p*ldb+j]))
								}
								want = alpha*want + float64(beta)*float64(c0[i*ldc+j])
								size = alpha*size + math.Abs(float64(beta)*float64(c0[i*ldc+j]))
								if got := float64(c[i*ldc+j]); math.Abs(got-want) > 4e-7*float64(k+2)*size+1e-30 || math.IsNaN(got) {
									t.Fatalf("%s: c[%d,%d] = %v, want %v", name, i, j, got, want)
								}
							}
						}
						// each row alone: the same bits
						for i := 0; i < m; i++ {
							row := append([]float32(nil), c0[i*ldc:i*ldc+n]...)
							ai := a[i:]
							if !transA {
								ai = a[i*lda:]
							}
							gemmWidth64(transA, 1, n, k, float32(alpha), ai, lda, b, ldb, beta, row, n)
							for j := range row {
								if row[j] != c[i*ldc+j] && width64On() {
									t.Fatalf("%s: row %d alone gives c[%d] = %v, in the block %v", name, i, j, row[j], c[i*ldc+j])
								}
							}
						}
						if n == width64 || !width64On() {
							continue
						}
						// a masked width: the 64-wide kernel's bits on its columns
						wide := append([]float32(nil), c0...)
						gemmWidth64(transA, m, width64, k, float32(alpha), a, lda, b, ldb, beta, wide, ldc)
						for i := 0; i < m; i++ {
							for j := 0; j < n; j++ {
								if math.Float32bits(wide[i*ldc+j]) != math.Float32bits(c[i*ldc+j]) {
									t.Fatalf("%s: c[%d,%d] = %v, the 64-wide kernel %v", name, i, j, c[i*ldc+j], wide[i*ldc+j])
								}
							}
						}
					}
				}
			}
		}
	}
}

// gemmHeadN runs only heads 64 wide on the kernel: a 16-wide head (d_model
// 64's) is recorded as gemm, a 64-wide one as the kernel's where it is on.
func TestGemmHeadNOnlyAt64(t *testing.T) {
	r := rand.New(rand.NewSource(67))
	for _, n := range []int{16, 48, width64} {
		a, b, c := normalFloat32s(r, 12*32), normalFloat32s(r, 32*n), make([]float32, 12*n)
		rec, err := RecordGemm(func() error {
			gemmHeadN(false, 12, n, 32, 1, a, 32, b, n, 0, c, n)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		want := n == width64 && width64On()
		for s := range rec.Shapes {
			if s.Width64 != want {
				t.Errorf("n=%d: recorded %+v; want the 64-wide kernel %v", n, s, want)
			}
		}
	}
}

// A recording marks the products the 64-wide kernel ran, and replays them
// on it; gemmHeadN counts their work in GemmFLOPs as gemm does.
func TestGemmHeadNRecorded(t *testing.T) {
	const m, k = 70, 33
	a, b, c := make([]float32, m*k), make([]float32, k*width64), make([]float32, m*width64)
	before := GemmFLOPs()
	rec, err := RecordGemm(func() error {
		gemmHeadN(false, m, width64, k, 1, a, k, b, width64, 0, c, width64)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := GemmFLOPs()-before, int64(2*m*width64*k); got != want {
		t.Fatalf("GemmFLOPs grew by %d, want %d", got, want)
	}
	want := GemmShape{M: m, N: width64, K: k, LDA: k, LDB: width64, LDC: width64, Width64: width64On()}
	if len(rec.Shapes) != 1 || rec.Shapes[want] != 1 {
		t.Fatalf("recorded %v, want one %+v", rec.Shapes, want)
	}
	if _, err := ReplayGemmShapes(rec.Shapes, 1, 1); err != nil {
		t.Fatal(err)
	}
}

// gemmPackedN agrees with a float64 sum, beta 0 (c poisoned with NaN) and
// 1, and takes the 64-wide kernel exactly where its doc says: float32,
// the kernel on, n at least 64 and a product OpenBLAS would pack (d_model
// 256's 256 columns over 688, and 688 or 200 columns, the last tile
// masked; not d_model 64's 64 over 176, which the small kernels take, nor
// 36 columns).
func TestGemmPackedNRoutes(t *testing.T) {
	r := rand.New(rand.NewSource(65))
	for _, c := range []struct{ m, n, k int }{{37, 256, 688}, {5, 64, 176}, {9, 200, 688}, {13, 688, 256}, {11, 36, 688}} {
		for _, beta := range []float32{0, 1} {
			name := fmt.Sprintf("m=%d n=%d k=%d beta=%v", c.m, c.n, c.k, beta)
			a, b, c0 := normalFloat32s(r, c.m*c.k), normalFloat32s(r, c.k*c.n), normalFloat32s(r, c.m*c.n)
			out := append([]float32(nil), c0...)
			if beta == 0 {
				for i := range out {
					out[i] = float32(math.NaN())
				}
			}
			rec, err := RecordGemm(func() error {
				gemmPackedN(c.m, c.n, c.k, a, c.k, b, c.n, beta, out, c.n)
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			kernel := width64On() && c.n >= width64 && tallRowBlock(c.n, c.k) == 0
			for s := range rec.Shapes {
				if s.Width64 != kernel {
					t.Errorf("%s: recorded %+v; want the 64-wide kernel %v", name, s, kernel)
				}
			}
			for i := 0; i < c.m; i++ {
				for j := 0; j < c.n; j++ {
					var want, size float64
					for p := 0; p < c.k; p++ {
						v := float64(a[i*c.k+p]) * float64(b[p*c.n+j])
						want, size = want+v, size+math.Abs(v)
					}
					want += float64(beta) * float64(c0[i*c.n+j])
					if got := float64(out[i*c.n+j]); math.Abs(got-want) > 4e-7*float64(c.k+2)*size || math.IsNaN(got) {
						t.Fatalf("%s: c[%d,%d] = %v, want %v", name, i, j, got, want)
					}
				}
			}
		}
	}
}
