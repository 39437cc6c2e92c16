package train

import (
	"math"
	"math/rand"
	"testing"
)

// The float32 update this build runs (in C under the openblas tag, each of
// its loops this CPU has) must equal adamwGo, the definition, to the bit:
// over lengths that leave a tail after the eight- and four-wide loops, with
// and without decay, across several steps so that the moments feed back,
// and on gradients from tiny to large, zeros and a negative scale among
// them.
func TestAdamWKernelMatchesGo(t *testing.T) {
	adamwLevels(func(loop string) { adamwMatchesGo(t, loop) })
}

func adamwMatchesGo(t *testing.T, loop string) {
	r := rand.New(rand.NewSource(3))
	for _, n := range []int{0, 1, 3, 4, 7, 8, 13, 64, 1027} {
		for _, decay := range []float64{0, 0.01} {
			w := make([]float32, n)
			for j := range w {
				w[j] = float32(r.NormFloat64())
			}
			wGo := append([]float32(nil), w...)
			m, v := make([]float64, n), make([]float64, n)
			mGo, vGo := make([]float64, n), make([]float64, n)
			for step := 1; step <= 4; step++ {
				g := spreadValues(r, n, 5, 1e-20, -4, 9)
				s := adamwStep{scale: 0.75, beta1: 0.9, beta2: 0.999, lr: 3e-3, decay: decay,
					c1: 1 - math.Pow(0.9, float64(step)), c2: 1 - math.Pow(0.999, float64(step)), eps: 1e-8}
				if step == 3 {
					s.scale = -2
				}
				adamw32(w, g, m, v, s)
				adamwGo(wGo, g, mGo, vGo, s)
				for j := range w {
					if math.Float32bits(w[j]) != math.Float32bits(wGo[j]) || m[j] != mGo[j] || v[j] != vGo[j] {
						t.Fatalf("%s, n=%d decay=%v step %d value %d: w=%v m=%v v=%v, definition w=%v m=%v v=%v",
							loop, n, decay, step, j, w[j], m[j], v[j], wGo[j], mGo[j], vGo[j])
					}
				}
			}
		}
	}
}

// The vector loops divide the moments by the bias corrections c1 and c2
// with a reciprocal and two fused corrections, which must give the
// division's quotient to the bit. A float32 weight hides a last-bit error
// in them, so this checks the quotients themselves, on each loop this CPU
// has: against c1 and c2 of the first 300 steps, random c over the range
// that takes the corrections, and c outside it (divided in every lane),
// with a from across the double range (subnormals included), at and beside
// the bounds 2^-800 and 2^800, near-halfway quotients, ±0, infinities and
// NaN.
func TestAdamWQuotientsExact(t *testing.T) {
	r := rand.New(rand.NewSource(5))
	var cs []float64
	for step := 1; step <= 300; step++ {
		cs = append(cs, 1-math.Pow(0.9, float64(step)), 1-math.Pow(0.999, float64(step)))
	}
	for range 100 {
		cs = append(cs, math.Ldexp(1+r.Float64(), r.Intn(61)-31))
	}
	cs = append(cs, 1, 0x1p-30, 0x1p30, 1-0x1p-53, math.Nextafter(0x1p-30, 0), math.Nextafter(0x1p30, math.Inf(1)),
		0, math.Copysign(0, -1), -0.5, math.Inf(1), math.NaN(), 0x1p-1074)
	edges := []float64{0, math.Copysign(0, -1), math.Inf(1), math.Inf(-1), math.NaN(), 0x1p-1074, 0x1p-1022,
		math.MaxFloat64, 0x1p-800, math.Nextafter(0x1p-800, 0), math.Nextafter(0x1p-800, 1),
		0x1p800, math.Nextafter(0x1p800, 0), math.Nextafter(0x1p800, math.Inf(1))}
	a := make([]float64, 1021) // a tail after the four- and eight-lane loops
	q := make([]float64, len(a))
	adamwLevels(func(loop string) {
		for _, c := range cs {
			for j := range a {
				switch {
				case j < 2*len(edges):
					a[j] = edges[j%len(edges)]
					if j >= len(edges) {
						a[j] = -a[j]
					}
				case j%3 == 0:
					// a near c·(q + ulp/2): the quotient near a halfway point.
					x := math.Ldexp(1+r.Float64(), r.Intn(200)-100)
					a[j] = c * (x + (math.Nextafter(x, math.Inf(1))-x)/2)
				default:
					a[j] = math.Float64frombits(r.Uint64())
				}
			}
			adamwQuotients(a, q, c)
			for j := range a {
				want := a[j] / c
				if math.Float64bits(q[j]) != math.Float64bits(want) && !(math.IsNaN(q[j]) && math.IsNaN(want)) {
					t.Fatalf("%s: %v / %v = %v (%#x), division gives %v (%#x)", loop, a[j], c, q[j],
						math.Float64bits(q[j]), want, math.Float64bits(want))
				}
			}
		}
	})
}
