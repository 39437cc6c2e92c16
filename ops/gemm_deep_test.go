package ops

import (
	"fmt"
	"math"
	"math/rand"
	"runtime"
	"testing"
)

// gemmDeep computes aᵀ·b whether it runs whole or in blocks of rows (the
// blocked path is forced on here, whatever this machine's BLAS): every
// element within float32's rounding of a k-term sum of the float64 product,
// for row counts that divide into blocks evenly and not, leading dimensions
// wider than the operands (the columns past n untouched), beta 0 (c's old
// values ignored, NaN included) and beta 1.
func TestGemmDeepComputesTheProduct(t *testing.T) {
	defer func(v bool) { blasSmallKernels = v }(blasSmallKernels)
	r := rand.New(rand.NewSource(6))
	for _, blocked := range []bool{false, true} {
		blasSmallKernels = blocked
		for _, c := range []struct{ m, n, k, extra int }{{64, 176, 2048, 0}, {176, 64, 2048, 3}, {64, 36, 1000, 1}, {64, 64, 100, 0}} {
			blk := deepRowBlock(c.m, c.n)
			if blocked && (blk == 0 || blk >= c.k) && c.k > 244 {
				t.Fatalf("m=%d n=%d k=%d: the case does not block", c.m, c.n, c.k)
			}
			for _, beta := range []float32{0, 1} {
				name := fmt.Sprintf("blocked=%v m=%d n=%d k=%d beta=%v", blocked, c.m, c.n, c.k, beta)
				lda, ldb, ldc := c.m+c.extra, c.n+c.extra, c.n+c.extra
				a, b, c0 := normalFloat32s(r, c.k*lda), normalFloat32s(r, c.k*ldb), normalFloat32s(r, c.m*ldc)
				if beta == 0 {
					for i := range c0 {
						if i%ldc < c.n {
							c0[i] = float32(math.NaN())
						}
					}
				}
				got := append([]float32(nil), c0...)
				gemmDeep(blk, c.m, c.n, c.k, a, lda, b, ldb, beta, got, ldc)
				term := func(i, j, q int) float64 { return float64(a[q*lda+i]) * float64(b[q*ldb+j]) }
				checkGemmResult(t, name, got, c0, c.m, c.n, c.k, ldc, beta, term)
			}
		}
	}
}

// A weight gradient split by output columns over workers, each passing the
// block of the whole output, gives the bits of the unsplit product: the
// blocks of rows, and so the order of every element's sum, do not depend on
// the split (Linear's backward splits dw's columns over GOMAXPROCS). That
// holds on gonum's BLAS and on OpenBLAS's small-matrix kernels (SkylakeX,
// Cooperlake, SapphireRapids), whose sums run over the rows in order for
// any column range. OpenBLAS's other kernels (Haswell's, which
// OPENBLAS_CORETYPE may name on any x86-64) order a column's sum by the
// range it is in, blocked or not: there the bits are those of the worker
// count, as the package promises (doc.go), and the test is skipped.
func TestGemmDeepColumnSplitSameBits(t *testing.T) {
	if core := BLASCore(); core != "" && !blasSmallKernels {
		t.Skipf("OpenBLAS's %s kernels order a column's sum by its column range", core)
	}
	r := rand.New(rand.NewSource(7))
	m, n, k := 64, 176, 2048
	a, b := normalFloat32s(r, k*m), normalFloat32s(r, k*n)
	blk := deepRowBlock(m, n)
	whole := make([]float32, m*n)
	gemmDeep(blk, m, n, k, a, m, b, n, 0, whole, n)
	for _, parts := range []int{2, 3} {
		split := make([]float32, m*n)
		for p := 0; p < parts; p++ {
			lo, hi := p*n/parts, (p+1)*n/parts
			gemmDeep(blk, m, hi-lo, k, a, m, b[lo:], n, 0, split[lo:], n)
		}
		for i := range whole {
			if math.Float32bits(whole[i]) != math.Float32bits(split[i]) {
				t.Fatalf("blk %d, %d column parts: element %d is %v, unsplit %v", blk, parts, i, split[i], whole[i])
			}
		}
	}
}

// weightGradHalves sums the two halves of the rows: its dw has the bits of
// x[:h]ᵀ·dy[:h] + x[h:]ᵀ·dy[h:] computed one after the other (h = rows/2,
// an odd row count included), the same bits at 1 to 4 workers (each
// half's columns split over a share of them), and every element within
// float32's rounding of the float64 sum over all rows.
func TestWeightGradHalvesIsTheSumOfItsHalves(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	r := rand.New(rand.NewSource(8))
	din, dout, rows := 9, 13, 11
	x, dy := normalFloat32s(r, rows*din), normalFloat32s(r, rows*dout)
	h := rows / 2
	first, second := make([]float32, din*dout), make([]float32, din*dout)
	gemm(true, false, din, dout, h, 1, x, din, dy, dout, 0, first, dout)
	gemm(true, false, din, dout, rows-h, 1, x[h*din:], din, dy[h*dout:], dout, 0, second, dout)
	for procs := 1; procs <= 4; procs++ {
		runtime.GOMAXPROCS(procs)
		got := normalFloat32s(r, din*dout) // overwritten whole
		weightGradHalves(got, x, din, dy, dout, rows)
		for i := range got {
			if want := first[i] + second[i]; math.Float32bits(got[i]) != math.Float32bits(want) {
				t.Fatalf("GOMAXPROCS %d: dw[%d] = %v, the halves' sum %v", procs, i, got[i], want)
			}
		}
		term := func(i, j, q int) float64 { return float64(x[q*din+i]) * float64(dy[q*dout+j]) }
		checkGemmResult(t, fmt.Sprintf("GOMAXPROCS %d", procs), got, make([]float32, din*dout), din, dout, rows, dout, 0, term)
	}
}

// weightGrad takes the halves for a gradient the row blocks leave whole
// once it has weightGradHalfRows rows, and runs it as one product below
// that: the bits of weightGradHalves at 2,048 rows, of one gemm at 2,047.
// A 128 × 130 output is past OpenBLAS's small kernels at 64-row blocks, so
// it runs whole in every build; on one worker, so that below the halves it
// is one product (over several, each worker's columns are one, and
// OpenBLAS's Haswell kernels may order a column's sum by the range).
func TestWeightGradTakesHalvesFromItsRowCount(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	din, dout := 128, 130
	if blk := deepRowBlock(din, dout); blk != 0 {
		t.Fatalf("a %d × %d output runs in blocks of %d rows; the case needs a whole product", din, dout, blk)
	}
	r := rand.New(rand.NewSource(9))
	for _, rows := range []int{weightGradHalfRows - 1, weightGradHalfRows} {
		x, dy := normalFloat32s(r, rows*din), normalFloat32s(r, rows*dout)
		want := make([]float32, din*dout)
		if rows >= weightGradHalfRows {
			weightGradHalves(want, x, din, dy, dout, rows)
		} else {
			gemm(true, false, din, dout, rows, 1, x, din, dy, dout, 0, want, dout)
		}
		got := make([]float32, din*dout)
		weightGrad(got, x, din, dy, dout, rows)
		for i := range got {
			if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
				t.Fatalf("%d rows: dw[%d] = %v, want %v", rows, i, got[i], want[i])
			}
		}
	}
}
