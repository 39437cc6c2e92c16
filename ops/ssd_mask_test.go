package ops

import (
	"math"
	"math/rand"
	"testing"
)

// ssdMaskGradCase is one random diagonal block for the mask-gradient
// kernels: G∘seg in gm, seg, dG = Q and dcum.
type ssdMaskGradCase struct {
	gm, seg, dG, acc []float32
	dcum             []float64
}

func newSSDMaskGradCase(r *rand.Rand, L int) ssdMaskGradCase {
	f32 := func(n int) []float32 {
		s := make([]float32, n)
		for i := range s {
			s[i] = float32(r.NormFloat64())
		}
		return s
	}
	c := ssdMaskGradCase{gm: f32(L * L), seg: f32(L * L), dG: f32(L * L), acc: f32(L * L), dcum: make([]float64, L)}
	for i := range c.dcum {
		c.dcum[i] = r.NormFloat64()
	}
	return c
}

func (c ssdMaskGradCase) clone() ssdMaskGradCase {
	return ssdMaskGradCase{gm: c.gm, seg: c.seg, dG: append([]float32(nil), c.dG...), acc: append([]float32(nil), c.acc...),
		dcum: append([]float64(nil), c.dcum...)}
}

// ssdMaskGrad (in C under the openblas build) gives ssdMaskGradGo's seg∘Q
// and its sum into acc to the bit, and its dcum within the reordering of
// the sums: 4L·2⁻⁵³ of the sum of the magnitudes of what is added to each
// entry.
func TestSSDMaskGradMatchesGo(t *testing.T) {
	r := rand.New(rand.NewSource(7))
	for _, L := range []int{1, 3, 4, 5, 17, 64} {
		for _, withAcc := range []bool{false, true} {
			c := newSSDMaskGradCase(r, L)
			got, want := c.clone(), c.clone()
			if withAcc {
				ssdMaskGrad(got.gm, got.seg, got.dG, got.dcum, got.acc, L)
				ssdMaskGradGo(want.gm, want.seg, want.dG, want.dcum, want.acc, L)
			} else {
				ssdMaskGrad(got.gm, got.seg, got.dG, got.dcum, nil, L)
				ssdMaskGradGo(want.gm, want.seg, want.dG, want.dcum, nil, L)
			}
			for i := range want.dG {
				if math.Float32bits(got.dG[i]) != math.Float32bits(want.dG[i]) {
					t.Fatalf("L=%d: dG[%d] = %v, Go gives %v", L, i, got.dG[i], want.dG[i])
				}
				if math.Float32bits(got.acc[i]) != math.Float32bits(want.acc[i]) {
					t.Fatalf("L=%d acc=%v: acc[%d] = %v, Go gives %v", L, withAcc, i, got.acc[i], want.acc[i])
				}
			}
			if withAcc && L > 1 && got.acc[1] != c.acc[1] {
				t.Fatalf("L=%d: acc[1], above the diagonal, changed", L)
			}
			mag := make([]float64, L)
			for k := range mag {
				mag[k] = math.Abs(c.dcum[k])
			}
			for i := 0; i < L; i++ {
				for j := 0; j <= i; j++ {
					rr := math.Abs(float64(c.gm[i*L+j]) * float64(c.dG[i*L+j]))
					mag[i] += rr
					mag[j] += rr
				}
			}
			for k := range want.dcum {
				if diff := math.Abs(got.dcum[k] - want.dcum[k]); diff > 4*float64(L)*0x1p-53*mag[k] {
					t.Fatalf("L=%d: dcum[%d] = %v, Go gives %v (differ by %.3g, bound %.3g)", L, k, got.dcum[k], want.dcum[k], diff, 4*float64(L)*0x1p-53*mag[k])
				}
			}
		}
	}
}

// ssdMask (in C under the openblas build) gives ssdMaskGo's masked G and
// exp(segsum) to the bit, in place and from another matrix: each entry
// takes the same operations.
func TestSSDMaskMatchesGo(t *testing.T) {
	r := rand.New(rand.NewSource(9))
	for _, L := range []int{1, 3, 4, 5, 17, 64, 67} {
		for _, withSeg := range []bool{false, true} {
			for _, inPlace := range []bool{false, true} {
				gm, r64 := make([]float32, L*L), make([]float64, L)
				for i := range gm {
					gm[i] = float32(r.NormFloat64())
				}
				for i := range r64 {
					r64[i] = math.Exp(-r.Float64())
				}
				run := func(mask func(gm, src, seg []float32, row, r []float64, L int)) (g, seg []float32) {
					g, src := append([]float32(nil), gm...), gm
					if inPlace {
						src = g
					} else {
						for i := range g {
							g[i] = float32(i) // stale values the kernel must overwrite
						}
					}
					if withSeg {
						seg = make([]float32, L*L)
						for i := range seg {
							seg[i] = float32(i)
						}
					}
					mask(g, src, seg, make([]float64, L), r64, L)
					return g, seg
				}
				gotG, gotS := run(ssdMask[float32])
				wantG, wantS := run(ssdMaskGo[float32])
				for i := range wantG {
					if math.Float32bits(gotG[i]) != math.Float32bits(wantG[i]) {
						t.Fatalf("L=%d seg=%v in place=%v: gm[%d] = %v, Go gives %v", L, withSeg, inPlace, i, gotG[i], wantG[i])
					}
					if withSeg && math.Float32bits(gotS[i]) != math.Float32bits(wantS[i]) {
						t.Fatalf("L=%d: seg[%d] = %v, Go gives %v", L, i, gotS[i], wantS[i])
					}
				}
			}
		}
	}
}
