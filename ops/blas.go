package ops

import (
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"gonum.org/v1/gonum/blas"
	G "gorgonia.org/gorgonia"
)

// gemmFLOPs counts the floating-point operations (2·m·n·k per call) the
// fused ops have asked gemm for since the process started.
var gemmFLOPs atomic.Int64

// GemmFLOPs returns the floating-point operations the fused ops have run
// through gemm since the process started (2·m·n·k per product), so that a
// benchmark can set a step's time against its matrix-product work.
func GemmFLOPs() int64 { return gemmFLOPs.Load() }

// gemm computes c = alpha*op(a)*op(b) + beta*c with the BLAS Gorgonia uses
// (pure Go by default, OpenBLAS under the openblas build tag), so the fused
// ops speed up with the same switch as Gorgonia's own matmuls. op(a) is m×k,
// op(b) k×n, c m×n, all row-major with leading dimensions lda, ldb, ldc: a
// head of a [b,t,h,d] tensor is a matrix with leading dimension h*d. A
// small a·bᵀ runs untransposed on a copy of bᵀ (gemm_nt.go).
func gemm[T floats](transA, transB bool, m, n, k int, alpha T, a []T, lda int, b []T, ldb int, beta T, c []T, ldc int) {
	if m == 0 || n == 0 {
		return
	}
	if untransposeB(transA, transB, m, n, k) {
		gemmUntransposedB(m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
		return
	}
	gemmFLOPs.Add(2 * int64(m) * int64(n) * int64(k))
	if r := gemmRecording.Load(); r != nil {
		var zero T
		_, f64 := any(zero).(float64)
		call := r.enterBLAS(GemmShape{Float64: f64, TransA: transA, TransB: transB, M: m, N: n, K: k, LDA: lda, LDB: ldb, LDC: ldc, Accumulate: beta != 0}, 1)
		blasGemm(transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
		r.leaveBLAS(call)
		return
	}
	blasGemm(transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
}

// blasGemm is gemm without the counting: the BLAS call itself (and the
// k = 0 case, which BLAS implementations disagree on).
func blasGemm[T floats](transA, transB bool, m, n, k int, alpha T, a []T, lda int, b []T, ldb int, beta T, c []T, ldc int) {
	if m == 0 || n == 0 {
		return
	}
	ta, tb := blas.NoTrans, blas.NoTrans
	if transA {
		ta = blas.Trans
	}
	if transB {
		tb = blas.Trans
	}
	if k == 0 {
		for i := 0; i < m; i++ {
			row := c[i*ldc : i*ldc+n]
			for j := range row {
				if beta == 0 {
					row[j] = 0 // as BLAS: c is not read when beta is 0
				} else {
					row[j] *= beta
				}
			}
		}
		return
	}
	switch cc := any(c).(type) {
	case []float32:
		G.WhichBLAS().Sgemm(ta, tb, m, n, k, float32(alpha), any(a).([]float32), lda, any(b).([]float32), ldb, float32(beta), cc, ldc)
	case []float64:
		G.WhichBLAS().Dgemm(ta, tb, m, n, k, float64(alpha), any(a).([]float64), lda, any(b).([]float64), ldb, float64(beta), cc, ldc)
	}
}

// parallelGemm is gemm with c split into one block per worker (by rows of
// c when it has at least as many rows as columns, by columns otherwise), so
// that a single large product keeps every core busy while OpenBLAS runs
// single-threaded (see blas_openblas.go). Every element of c is still one
// gemm's sum over all of k, so the result does not depend on the split.
func parallelGemm[T floats](transA, transB bool, m, n, k int, alpha T, a []T, lda int, b []T, ldb int, beta T, c []T, ldc int) {
	flops := gemmWork(m, n, k)
	if m >= n {
		parallelRangesWork(m, flops, func(_, lo, hi int) {
			ao := lo * lda
			if transA {
				ao = lo
			}
			gemm(transA, transB, hi-lo, n, k, alpha, a[ao:], lda, b, ldb, beta, c[lo*ldc:], ldc)
		})
		return
	}
	parallelRangesWork(n, flops, func(_, lo, hi int) {
		bo := lo
		if transB {
			bo = lo * ldb
		}
		gemm(transA, transB, m, hi-lo, k, alpha, a, lda, b[bo:], ldb, beta, c[lo:], ldc)
	})
}

// GemmRate measures the float32 matrix-product rate of this build's BLAS,
// in FLOP/s, the way a step can use the cores: the products of a
// d_model-256 linear layer over 4096 tokens ([4096×256]·[256×1024], its
// transposes for the two gradients) split across GOMAXPROCS (as one graph's
// fused ops split them), or GOMAXPROCS such products at once on operands of
// their own, one goroutine each (as data-parallel shards run them),
// whichever is faster; with one thread the two are the same. Where the
// 64-wide kernel is on, the split is also measured as a linear layer's op
// runs it (layerGemm: y = x w on the kernel, gemmTall's tallTiles64), and
// the faster split counts. Each way runs
// for at least minTime after one untimed product. `wm bench` sets a step's
// matrix-product work (GemmFLOPs) against it: the fastest a step could be if
// everything else took no time.
func GemmRate(minTime time.Duration) float64 {
	split := gemmRateOf(minTime, 1, parallelGemm[float32])
	if width64On() {
		split = max(split, gemmRateOf(minTime, 1, layerGemm))
	}
	if p := runtime.GOMAXPROCS(0); p > 1 {
		return max(split, gemmRateOf(minTime, p, gemm[float32]))
	}
	return split
}

// gemmRateOf runs linearProducts through mm on the given number of
// goroutines at once, each on its own operands: each sets up and runs one
// untimed product, then all start together and each times at least minTime
// of products. It returns the sum of their FLOP/s.
func gemmRateOf(minTime time.Duration, goroutines int, mm gemmFunc) float64 {
	rates := make([]float64, goroutines)
	var ready, done sync.WaitGroup
	start := make(chan struct{})
	for g := range goroutines {
		ready.Add(1)
		done.Add(1)
		go func() {
			defer done.Done()
			f, products := linearProducts(mm)
			products[0].run()
			ready.Done()
			<-start
			t0 := time.Now()
			n := 0
			for ; time.Since(t0) < minTime || n < len(products); n++ {
				products[n%len(products)].run()
			}
			rates[g] = f * float64(n) / time.Since(t0).Seconds()
		}()
	}
	ready.Wait()
	close(start)
	done.Wait()
	var total float64
	for _, r := range rates {
		total += r
	}
	return total
}

// layerGemm runs a product the way a linear layer's op does: c = a·op(b)
// through gemmTall (split over the workers, on the 64-wide kernel where
// tallTiles64 holds), c = aᵀ·b through parallelGemm. alpha must be 1, as
// gemmTall's is.
func layerGemm(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	if alpha != 1 {
		panic("ops: layerGemm computes products with alpha 1 only")
	}
	if transA {
		parallelGemm(transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
		return
	}
	gemmTall(transB, m, n, k, a, lda, b, ldb, beta, c, ldc)
}

// gemmFunc is gemm, parallelGemm or layerGemm on float32.
type gemmFunc func(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int)

// linearProduct is one named product of linearProducts.
type linearProduct struct {
	name string
	run  func()
}

// linearProducts are the three float32 products of a d_model-256 linear
// layer over 4096 tokens (y = x w, dx = dy wᵀ, dw = xᵀ dy) through mm, on
// operands of their own, and the FLOPs of each; GemmRate and BenchmarkGemm
// time them.
func linearProducts(mm gemmFunc) (flops float64, products []linearProduct) {
	const rows, din, dout = 4096, 256, 1024
	x, w, y := make([]float32, rows*din), make([]float32, din*dout), make([]float32, rows*dout)
	for i := range x {
		x[i] = float32(i%13) / 13
	}
	for i := range w {
		w[i] = float32(i%7) / 7
	}
	return 2 * rows * din * dout, []linearProduct{
		{"y=xw", func() { mm(false, false, rows, dout, din, 1, x, din, w, dout, 0, y, dout) }},
		{"dx=dy·wT", func() { mm(false, true, rows, din, dout, 1, y, dout, w, dout, 0, x, din) }},
		{"dw=xT·dy", func() { mm(true, false, din, dout, rows, 1, x, din, y, dout, 0, w, dout) }},
	}
}
