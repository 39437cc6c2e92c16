package ops

import (
	"fmt"
	"runtime"
	"sync"
	"testing"
)

// BenchmarkGemm reports the GFLOP/s of the float32 products a d_model-256
// linear layer runs on 4096 tokens (linearProducts): on one goroutine
// (one: gemm), split across GOMAXPROCS (split: parallelGemm), split as a
// linear layer's op runs them (layer: layerGemm, the 64-wide kernel where
// it takes them), and as GOMAXPROCS
// products at once on operands of their own (concurrent, as data-parallel
// shards run them), so that a step's time can be set against what the BLAS
// of this build can do.
func BenchmarkGemm(b *testing.B) {
	for _, way := range []string{"one", "split", "layer"} {
		mm := map[string]gemmFunc{"one": gemm[float32], "split": parallelGemm[float32], "layer": layerGemm}[way]
		flops, products := linearProducts(mm)
		for _, p := range products {
			b.Run(fmt.Sprintf("%s/%s", p.name, way), func(b *testing.B) {
				for i := 0; i < b.N; i++ {
					p.run()
				}
				b.ReportMetric(flops*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
			})
		}
	}
	procs := runtime.GOMAXPROCS(0)
	sets := make([][]linearProduct, procs)
	var flops float64
	for g := range sets {
		flops, sets[g] = linearProducts(gemm[float32])
	}
	for i, p := range sets[0] {
		b.Run(p.name+"/concurrent", func(b *testing.B) {
			var wg sync.WaitGroup
			for g := range sets {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for n := 0; n < b.N; n++ {
						sets[g][i].run()
					}
				}()
			}
			wg.Wait()
			b.ReportMetric(flops*float64(procs*b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
		})
	}
}
