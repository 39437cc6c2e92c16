package ops

import (
	"fmt"
	"testing"
)

// BenchmarkGemm reports the GFLOP/s of the float32 products a d_model-256
// linear layer runs on 4096 tokens (linearProducts), on one goroutine
// (gemm) and split across GOMAXPROCS (parallelGemm), so that a step's time
// can be set against what the BLAS of this build can do.
func BenchmarkGemm(b *testing.B) {
	for _, par := range []bool{false, true} {
		mm := gemm[float32]
		if par {
			mm = parallelGemm[float32]
		}
		flops, products := linearProducts(mm)
		for _, p := range products {
			b.Run(fmt.Sprintf("%s/parallel=%v", p.name, par), func(b *testing.B) {
				for i := 0; i < b.N; i++ {
					p.run()
				}
				b.ReportMetric(flops*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
			})
		}
	}
}
