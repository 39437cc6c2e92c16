package ops

import (
	"math"
	"math/rand"
	"testing"

	"gorgonia.org/tensor"
)

// A kernel that says it writes its gradients whole (writesWholeGradients)
// gets its packed vector uncleared, holding the last step's gradients. Each
// such kernel here, on inputs that leave parts of a gradient without a
// contribution (an expert no token chose, the gates of experts a token did
// not choose, an ignored target, the columns outside a slice), gives into
// NaN-filled buffers the bits it gives into zeroed ones.
func TestWholeGradientKernelsWriteEveryValue(t *testing.T) {
	r := rand.New(rand.NewSource(12))
	const T, d, f, N, V = 9, 4, 3, 4, 5
	g := make([]float64, T*N)
	for tok := 0; tok < T; tok++ { // two experts per token, expert 3 chosen by none
		g[tok*N+tok%3], g[tok*N+(tok+1)%3] = 0.3+r.Float64(), 0.2+r.Float64()
	}
	targets := make([]float64, T)
	for i := range targets {
		targets[i] = float64(r.Intn(V))
	}
	targets[2], targets[7] = -1, -1 // ignored
	for _, c := range []struct {
		name string
		k    kernel
		in   []any
		dOut []float64
	}{
		{"moe_experts", moeKernel{x: tensor.Shape{T, d}, n: N, d: d, f: f, saved: &moeSaved{}},
			[]any{randData(r, T*d, nil), g, randData(r, N*d*f, nil), randData(r, N*d*f, nil), randData(r, N*f*d, nil)},
			randData(r, T*d, nil)},
		{"cross_entropy", crossEntropyKernel{red: ReduceMean, logits: tensor.Shape{T, V}, targets: tensor.Shape{T}},
			[]any{randData(r, T*V, nil), targets}, []float64{1.5}},
		{"columns", columnsKernel{x: tensor.Shape{T, 7}, lo: 2, hi: 5}, []any{randData(r, T*7, nil)}, randData(r, T*3, nil)},
	} {
		t.Run(c.name, func(t *testing.T) {
			if !overwritesGradients(c.k) {
				t.Fatal("the kernel does not say it writes its gradients whole")
			}
			grads := func(fill float64) [][]float64 {
				dIn, gs := make([]any, len(c.in)), make([][]float64, len(c.in))
				for j, want := range c.k.diffWRT() {
					if want {
						gs[j] = make([]float64, len(c.in[j].([]float64)))
						for i := range gs[j] {
							gs[j][i] = fill
						}
						dIn[j] = gs[j]
					}
				}
				if err := c.k.backward(c.in, nil, c.dOut, dIn); err != nil {
					t.Fatal(err)
				}
				return gs
			}
			want, got := grads(0), grads(math.NaN())
			for j := range want {
				for i := range want[j] {
					if math.Float64bits(got[j][i]) != math.Float64bits(want[j][i]) {
						t.Fatalf("gradient %d [%d] = %v over NaN, %v over zeros", j, i, got[j][i], want[j][i])
					}
				}
			}
		})
	}
}
