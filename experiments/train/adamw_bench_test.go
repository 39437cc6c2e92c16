package train

import (
	"fmt"
	"math/rand"
	"testing"

	"gorgonia.org/tensor"

	"github.com/wonderful-matrices/wonderful-matrices-go/layers"
)

// BenchmarkAdamW times one AdamW update of float32 parameters the size of a
// d_model-256 four-layer model's (16 weights of 256×688, 2.8M values), with
// random gradients, and reports nanoseconds per parameter value. Run it with
// -cpu 1 and -cpu 2: the update shares the parameters out to GOMAXPROCS
// goroutines.
func BenchmarkAdamW(b *testing.B) {
	var ps layers.Params
	for i := 0; i < 16; i++ {
		ps = append(ps, layers.LinearWeight(fmt.Sprintf("w%d", i), 1, 256, 688))
	}
	if err := ps.Initialize(tensor.Float32, 1); err != nil {
		b.Fatal(err)
	}
	r := rand.New(rand.NewSource(1))
	grads := make([]any, len(ps))
	for i, p := range ps {
		g := make([]float32, p.Size())
		for j := range g {
			g[j] = float32(r.NormFloat64()) * 1e-3
		}
		grads[i] = g
	}
	o := NewAdamW(ps, 0.01)
	o.Update(ps, grads, 1, 1e-3)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		o.Update(ps, grads, 1, 1e-3)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(ps.Count()), "ns/value")
}
