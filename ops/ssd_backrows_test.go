package ops

import (
	"fmt"
	"math"
	"math/rand"
	"testing"
)

// The SSD backward's float32 row kernel in this build (C under the openblas
// tag) equals its Go definition to the bit: row widths with and without a
// tail after the eight-lane loop, one head and several, one token of long
// rows (the state passing's form), leading dimensions
// wider than the unit's heads, a scale per token, per head or per both,
// copying and updating, and in place (c is a), over values of very
// different scales.
func TestSSDBackRowsMatchGo(t *testing.T) {
	r := rand.New(rand.NewSource(11))
	fill := func(n int) []float32 { return spreadFloat32s(r, n) }
	for _, c := range []struct{ L, hb, p, extra int }{{1, 1, 1, 0}, {5, 1, 7, 3}, {17, 3, 13, 5}, {64, 4, 16, 0}, {9, 3, 32, 8}, {4, 2, 40, 0}, {64, 2, 64, 64}, {3, 2, 256, 0}, {1, 6, 520, 0}} {
		P, ld := c.hb*c.p, c.hb*c.p+c.extra
		for _, sc := range []struct {
			name     string
			ssi, ssj int
		}{{"per token and head", 1, c.L + 2}, {"per head", 0, 1}, {"per token, strided", c.hb + 1, 1}} {
			for _, add := range []bool{false, true} {
				for _, inPlace := range []bool{false, true} {
					name := fmt.Sprintf("L=%d hb=%d p=%d ld=%d scale %s add=%v in place=%v", c.L, c.hb, c.p, ld, sc.name, add, inPlace)
					a, b, scale := fill(c.L*ld), fill(c.L*P), fill((c.L+2)*(c.hb+1))
					cv, want := fill(c.L*ld), []float32(nil)
					if inPlace {
						cv = append([]float32(nil), a...)
					}
					want = append(want, cv...)
					aGo := a
					if inPlace {
						aGo = want
					}
					dots, wantDots := make([]float64, c.hb*c.L), make([]float64, c.hb*c.L)
					av := a
					if inPlace {
						av = cv
					}
					ssdRowsDotScale(dots, av, ld, b, P, cv, ld, scale, sc.ssi, sc.ssj, c.L, c.hb, c.p, add)
					ssdRowsDotScaleGo(wantDots, aGo, ld, b, P, want, ld, scale, sc.ssi, sc.ssj, c.L, c.hb, c.p, add)
					assertSame32(t, name+" c", cv, want)
					for i := range wantDots {
						if math.Float64bits(dots[i]) != math.Float64bits(wantDots[i]) {
							t.Fatalf("%s: dots[%d] = %v, Go gives %v (bit-identical)", name, i, dots[i], wantDots[i])
						}
					}
				}
			}
		}
	}
}

// dot8 is the dot product, within float64's rounding of its eight lanes'
// sums, and its lanes are the ones it documents: the same products summed
// in another order by hand give the same bits.
func TestDot8(t *testing.T) {
	r := rand.New(rand.NewSource(12))
	for _, n := range []int{0, 1, 7, 8, 9, 16, 23, 64} {
		a, b := make([]float32, n), make([]float32, n)
		var exact, mag float64
		var l [8]float64
		for q := range a {
			a[q], b[q] = float32(r.NormFloat64()), float32(r.NormFloat64())
			pr := float64(a[q]) * float64(b[q])
			exact += pr
			mag += math.Abs(pr)
			if q < n/8*8 {
				l[q%8] += pr
			} else {
				l[q-n/8*8] += pr
			}
		}
		got := dot8(a, b)
		want := ((l[0] + l[4]) + (l[2] + l[6])) + ((l[1] + l[5]) + (l[3] + l[7]))
		if math.Float64bits(got) != math.Float64bits(want) {
			t.Errorf("n=%d: dot8 = %v, its lanes folded by hand give %v", n, got, want)
		}
		if math.Abs(got-exact) > float64(n)*mag*0x1p-52 {
			t.Errorf("n=%d: dot8 = %v, the sum in order gives %v", n, got, exact)
		}
	}
}

// BenchmarkSSDRowsDotScale times the SSD backward's row kernel on one
// chunk's [64, hb·p] matrices at d_model 64 (4 heads of 16) and 256 (4
// heads of 64), copying and updating.
func BenchmarkSSDRowsDotScale(b *testing.B) {
	r := rand.New(rand.NewSource(13))
	for _, c := range []struct{ hb, p int }{{4, 16}, {4, 64}} {
		for _, add := range []bool{false, true} {
			b.Run(fmt.Sprintf("hb=%d/p=%d/add=%v", c.hb, c.p, add), func(b *testing.B) {
				const L = 64
				P := c.hb * c.p
				a, x, cv := spreadFloat32s(r, L*P), spreadFloat32s(r, L*P), make([]float32, L*P)
				scale, dots := spreadFloat32s(r, L*c.hb), make([]float64, L*c.hb)
				for b.Loop() {
					ssdRowsDotScale(dots, a, P, x, P, cv, P, scale, 1, L, L, c.hb, c.p, add)
				}
			})
		}
	}
}
