package ops

import (
	"fmt"
	"testing"
)

// BenchmarkGemm reports the GFLOP/s of the float32 products a d_model-256
// linear layer runs on 4096 tokens (y = x w, dx = dy wᵀ, dw = xᵀ dy), on one
// goroutine (gemm) and split across GOMAXPROCS (parallelGemm), so that a
// step's time can be set against what the BLAS of this build can do.
func BenchmarkGemm(b *testing.B) {
	const rows, din, dout = 4096, 256, 1024
	x, w, y := make([]float32, rows*din), make([]float32, din*dout), make([]float32, rows*dout)
	for i := range x {
		x[i] = float32(i%13) / 13
	}
	for i := range w {
		w[i] = float32(i%7) / 7
	}
	cases := []struct {
		name string
		run  func(par bool)
	}{
		{"y=xw", func(par bool) { mm(par, false, false, rows, dout, din, x, din, w, dout, y, dout) }},
		{"dx=dy·wT", func(par bool) { mm(par, false, true, rows, din, dout, y, dout, w, dout, x, din) }},
		{"dw=xT·dy", func(par bool) { mm(par, true, false, din, dout, rows, x, din, y, dout, w, dout) }},
	}
	for _, c := range cases {
		for _, par := range []bool{false, true} {
			b.Run(fmt.Sprintf("%s/parallel=%v", c.name, par), func(b *testing.B) {
				for i := 0; i < b.N; i++ {
					c.run(par)
				}
				b.ReportMetric(2*rows*din*dout*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
			})
		}
	}
}

func mm(par, ta, tb bool, m, n, k int, a []float32, lda int, bm []float32, ldb int, c []float32, ldc int) {
	if par {
		parallelGemm(ta, tb, m, n, k, 1, a, lda, bm, ldb, 0, c, ldc)
		return
	}
	gemm(ta, tb, m, n, k, 1, a, lda, bm, ldb, 0, c, ldc)
}
