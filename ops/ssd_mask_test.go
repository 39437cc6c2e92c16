package ops

import (
	"math"
	"math/rand"
	"testing"
)

// ssdMaskGradCase is one random diagonal block for the mask-gradient
// kernels: G∘seg in gm, seg, dG = Q and dcum.
type ssdMaskGradCase struct {
	gm, seg, dG []float32
	dcum        []float64
}

func newSSDMaskGradCase(r *rand.Rand, L int) ssdMaskGradCase {
	f32 := func(n int) []float32 {
		s := make([]float32, n)
		for i := range s {
			s[i] = float32(r.NormFloat64())
		}
		return s
	}
	c := ssdMaskGradCase{gm: f32(L * L), seg: f32(L * L), dG: f32(L * L), dcum: make([]float64, L)}
	for i := range c.dcum {
		c.dcum[i] = r.NormFloat64()
	}
	return c
}

func (c ssdMaskGradCase) clone() ssdMaskGradCase {
	return ssdMaskGradCase{gm: c.gm, seg: c.seg, dG: append([]float32(nil), c.dG...), dcum: append([]float64(nil), c.dcum...)}
}

// ssdMaskGrad (in C under the openblas build) gives ssdMaskGradGo's seg∘Q to
// the bit and its dcum within the reordering of the sums: 4L·2⁻⁵³ of the
// sum of the magnitudes of what is added to each entry.
func TestSSDMaskGradMatchesGo(t *testing.T) {
	r := rand.New(rand.NewSource(7))
	for _, L := range []int{1, 3, 4, 5, 17, 64} {
		c := newSSDMaskGradCase(r, L)
		got, want := c.clone(), c.clone()
		ssdMaskGrad(got.gm, got.seg, got.dG, got.dcum, L)
		ssdMaskGradGo(want.gm, want.seg, want.dG, want.dcum, L)
		for i := range want.dG {
			if math.Float32bits(got.dG[i]) != math.Float32bits(want.dG[i]) {
				t.Fatalf("L=%d: dG[%d] = %v, Go gives %v", L, i, got.dG[i], want.dG[i])
			}
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
