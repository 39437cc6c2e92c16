package ops

import (
	"fmt"
	"math/rand"
	"testing"

	"gorgonia.org/tensor"
)

// BenchmarkMoEExperts times the routed experts' kernel (MoEExperts, SPEC §3
// MoE; DeepSeekMoE eq. 3), which the routed MoE and MoE-SEI sublayers run,
// at the step benchmarks' sizes: 8 experts, two chosen per token, d_ff as
// the layers' default (layers.MoEConfig), at d_model 64 over 2048 tokens
// and d_model 256 over 4096. fwd is an evaluation's forward; fwd+bwd a
// training step's forward (which saves the experts' activations) and the
// backward that takes the save.
func BenchmarkMoEExperts(b *testing.B) {
	for _, z := range []struct{ T, d, f int }{{2048, 64, 88}, {4096, 256, 344}} {
		b.Run(fmt.Sprintf("d%d", z.d), func(b *testing.B) { benchMoEExperts(b, z.T, z.d, z.f) })
	}
}

func benchMoEExperts(b *testing.B, T, d, f int) {
	const N = 8
	// Time the kernel as a program runs it, without the tests' NaN fill of
	// scratch buffers (poison_test.go).
	defer func(p bool) { poisonUninitScratch = p }(poisonUninitScratch)
	poisonUninitScratch = false
	r := rand.New(rand.NewSource(1))
	f32 := func(n int) []float32 { return normalFloat32s(r, n) }
	x, dy := f32(T*d), f32(T*d)
	g := make([]float32, T*N)
	for tok := 0; tok < T; tok++ {
		e1 := r.Intn(N)
		e2 := (e1 + 1 + r.Intn(N-1)) % N
		g[tok*N+e1], g[tok*N+e2] = 0.6, 0.4
	}
	W1, W3, W2 := f32(N*d*f), f32(N*d*f), f32(N*f*d)
	y := make([]float32, T*d)
	grads := []any{make([]float32, T*d), make([]float32, T*N), make([]float32, N*d*f), make([]float32, N*d*f), make([]float32, N*f*d)}
	in := []any{x, g, W1, W3, W2}
	for _, withGrad := range []bool{false, true} {
		name := "fwd"
		if withGrad {
			name = "fwd+bwd"
		}
		b.Run(name, func(b *testing.B) {
			k := moeKernel{x: tensor.Shape{T, d}, n: N, d: d, f: f, saved: &moeSaved{wanted: withGrad}}
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				if err := k.forward(in, y); err != nil {
					b.Fatal(err)
				}
				if withGrad {
					if err := k.backward(in, y, dy, grads); err != nil {
						b.Fatal(err)
					}
				}
			}
			b.ReportMetric(float64(T*b.N)/b.Elapsed().Seconds(), "tok/s")
		})
	}
}

// BenchmarkMoETokens times the lists of each expert's tokens that every
// routed MoE forward builds from its gates, 8 experts with two chosen per
// token over 2048 tokens (the d_model 64 step benchmarks') and 4096:
// moeTokens as the build runs it (C under the openblas build) and
// moeTokensGo, the Go path, side by side.
func BenchmarkMoETokens(b *testing.B) {
	const N = 8
	for _, T := range []int{2048, 4096} {
		r := rand.New(rand.NewSource(1))
		g := make([]float32, T*N)
		for tok := 0; tok < T; tok++ {
			e1 := r.Intn(N)
			e2 := (e1 + 1 + r.Intn(N-1)) % N
			g[tok*N+e1], g[tok*N+e2] = 0.6, 0.4
		}
		k := moeKernel{x: tensor.Shape{T, 64}, n: N, d: 64}
		b.Run(fmt.Sprintf("tokens%d/moeTokens", T), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				moeTokens(g, k)
			}
		})
		b.Run(fmt.Sprintf("tokens%d/moeTokensGo", T), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				moeTokensGo(g, T, N)
			}
		})
	}
}
