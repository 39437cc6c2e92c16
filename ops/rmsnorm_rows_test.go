package ops

import (
	"fmt"
	"math"
	"math/rand"
	"testing"
)

// RMSNorm's float32 rows in this build (C under the openblas tag) equal the
// Go definition (rmsnormForwardRows, rmsnormBackwardRows) to the bit: widths
// that leave a tail after the four- and eight-wide loops, with dx and
// without, over rows of very different scales, and dw accumulated over
// several calls. With the openblas tag, TestRMSNormRowsEveryLevel runs this
// on each kernel variant the CPU has.
func TestRMSNormRowsMatchGo(t *testing.T) {
	r := rand.New(rand.NewSource(4))
	for _, d := range []int{1, 3, 4, 7, 8, 12, 64, 257} { // 12: four-wide rows, not a power of two
		const rows = 67 // blocks of eight and four rows, and a tail of three
		x, g, w := rmsnormRowsInput(r, rows, d)
		name := fmt.Sprintf("d=%d", d)
		y, want := make([]float32, rows*d), make([]float32, rows*d)
		rmsnormForwardRows32(y, x, w, 1e-6, nil)
		rmsnormForwardRows(want, x, w, 1e-6, nil)
		assertSame32(t, name+" y", y, want)
		for _, withDx := range []bool{true, false} {
			var dx, wantDx []float32
			if withDx {
				dx, wantDx = make([]float32, rows*d), make([]float32, rows*d)
			}
			dw, wantDw := make([]float64, d), make([]float64, d)
			for range 2 { // dw adds up over calls
				rmsnormBackwardRows32(dx, nil, g, x, w, dw, 1e-6, nil)
				rmsnormBackwardRows(wantDx, nil, g, x, w, wantDw, 1e-6, nil)
			}
			assertSame32(t, name+" dx", dx, wantDx)
			assertSame64(t, name+" dw", dw, wantDw)
		}
		// With a residual gradient to add (PreNorm): dx is the norm's dx
		// plus res, one float32 add per value, as a separate sum gives it,
		// and dw is unchanged.
		res := make([]float32, rows*d)
		for i := range res {
			res[i] = float32(r.NormFloat64())
		}
		plain, dx, wantDx := make([]float32, rows*d), make([]float32, rows*d), make([]float32, rows*d)
		dw, wantDw, plainDw := make([]float64, d), make([]float64, d), make([]float64, d)
		rmsnormBackwardRows32(dx, res, g, x, w, dw, 1e-6, nil)
		rmsnormBackwardRows(wantDx, res, g, x, w, wantDw, 1e-6, nil)
		rmsnormBackwardRows32(plain, nil, g, x, w, plainDw, 1e-6, nil)
		assertSame32(t, name+" dx+res", dx, wantDx)
		assertSame64(t, name+" dw with res", dw, plainDw)
		assertSame64(t, name+" Go dw with res", wantDw, plainDw)
		for i := range plain {
			plain[i] += res[i]
		}
		assertSame32(t, name+" dx+res against a separate sum", dx, plain)
	}
}

// rmsnormRowsInput is x, g [rows, d] and w [d] for the row kernels' tests:
// rows of x five scales apart (1e-2 to 1e2), w near 1.
func rmsnormRowsInput(r *rand.Rand, rows, d int) (x, g, w []float32) {
	x, g, w = make([]float32, rows*d), make([]float32, rows*d), make([]float32, d)
	for i := range x {
		x[i] = float32(r.NormFloat64() * math.Pow(10, float64(i/d%5-2)))
		g[i] = float32(r.NormFloat64())
	}
	for i := range w {
		w[i] = float32(1 + 0.3*r.NormFloat64())
	}
	return x, g, w
}

// The forward's 1/rms of each row, kept for the backward, are the values
// the backward computes without them (invRMS, to the bit), and a backward
// given them writes the same dx and dw bits as one without: float32 in this
// build's kernels and float64 in Go, over rows in blocks of eight and four
// and their tails. With the openblas tag, TestRMSNormRowsEveryLevel runs
// this on each kernel variant the CPU has.
func TestRMSNormSavedInvKeepsBits(t *testing.T) {
	r := rand.New(rand.NewSource(5))
	for _, d := range []int{3, 8, 64, 257} {
		for _, rows := range []int{1, 5, 13, 67} {
			x, g, w := rmsnormRowsInput(r, rows, d)
			name := fmt.Sprintf("d=%d rows=%d", d, rows)
			inv := make([]float64, rows)
			rmsnormForwardRows32(make([]float32, rows*d), x, w, 1e-6, inv)
			for i := range inv {
				if want := invRMS(x[i*d:(i+1)*d], 1e-6); inv[i] != want {
					t.Fatalf("%s: the forward kept 1/rms %v for row %d, invRMS gives %v", name, inv[i], i, want)
				}
			}
			dx, wantDx := make([]float32, rows*d), make([]float32, rows*d)
			dw, wantDw := make([]float64, d), make([]float64, d)
			rmsnormBackwardRows32(dx, nil, g, x, w, dw, 1e-6, inv)
			rmsnormBackwardRows32(wantDx, nil, g, x, w, wantDw, 1e-6, nil)
			assertSame32(t, name+" dx", dx, wantDx)
			assertSame64(t, name+" dw", dw, wantDw)
			x64, g64, w64 := make([]float64, rows*d), make([]float64, rows*d), make([]float64, d)
			for i := range x64 {
				x64[i], g64[i] = float64(x[i]), float64(g[i])
			}
			for i := range w64 {
				w64[i] = float64(w[i])
			}
			rmsnormForwardRows(make([]float64, rows*d), x64, w64, 1e-6, inv)
			dx64, wantDx64 := make([]float64, rows*d), make([]float64, rows*d)
			dw, wantDw = make([]float64, d), make([]float64, d)
			rmsnormBackwardRows(dx64, nil, g64, x64, w64, dw, 1e-6, inv)
			rmsnormBackwardRows(wantDx64, nil, g64, x64, w64, wantDw, 1e-6, nil)
			assertSame64(t, name+" float64 dx", dx64, wantDx64)
			assertSame64(t, name+" float64 dw", dw, wantDw)
		}
	}
}

func assertSame32(t *testing.T, what string, got, want []float32) {
	t.Helper()
	for i := range want {
		if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
			t.Fatalf("%s[%d] = %v, want %v (bit-identical)", what, i, got[i], want[i])
		}
	}
}

func assertSame64(t *testing.T, what string, got, want []float64) {
	t.Helper()
	for i := range want {
		if math.Float64bits(got[i]) != math.Float64bits(want[i]) {
			t.Fatalf("%s[%d] = %v, want %v (bit-identical)", what, i, got[i], want[i])
		}
	}
}

// BenchmarkRMSNormRows32 times the float32 row kernels alone on the rows of
// a d_model-64 step (2048 rows) and a d_model-256 one (4096 rows), in
// rows per second; the rows are warm in cache as they are in a step. The
// backward runs without the forward's 1/rms (bwd) and with them (bwd-kept,
// as a training step runs it).
func BenchmarkRMSNormRows32(b *testing.B) {
	for _, c := range []struct{ d, rows int }{{64, 2048}, {256, 4096}} {
		r := rand.New(rand.NewSource(1))
		x, g, y := make([]float32, c.rows*c.d), make([]float32, c.rows*c.d), make([]float32, c.rows*c.d)
		w, dw := make([]float32, c.d), make([]float64, c.d)
		for i := range x {
			x[i], g[i] = float32(r.NormFloat64()), float32(r.NormFloat64())
		}
		for i := range w {
			w[i] = 1
		}
		b.Run(fmt.Sprintf("fwd/d=%d", c.d), func(b *testing.B) {
			for b.Loop() {
				rmsnormForwardRows32(y, x, w, 1e-6, nil)
			}
			b.ReportMetric(float64(c.rows)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
		})
		b.Run(fmt.Sprintf("bwd/d=%d", c.d), func(b *testing.B) {
			for b.Loop() {
				rmsnormBackwardRows32(y, nil, g, x, w, dw, 1e-6, nil)
			}
			b.ReportMetric(float64(c.rows)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
		})
		inv := make([]float64, c.rows)
		rmsnormForwardRows32(y, x, w, 1e-6, inv)
		b.Run(fmt.Sprintf("bwd-kept/d=%d", c.d), func(b *testing.B) { // with the forward's 1/rms, as in training
			for b.Loop() {
				rmsnormBackwardRows32(y, nil, g, x, w, dw, 1e-6, inv)
			}
			b.ReportMetric(float64(c.rows)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
		})
	}
}
