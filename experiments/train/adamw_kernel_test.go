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
