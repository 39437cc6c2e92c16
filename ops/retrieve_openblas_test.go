//go:build openblas

package ops

import (
	"fmt"
	"math"
	"math/rand"
	"testing"
)

// The C search picks what retrieve picks, to the bit, at every kernel
// level: rows of normal similarities, rows of many ties (and -0 beside +0),
// rows with NaN or infinities among them, mixed within the vector blocks,
// blocks and rows left over, rows longer than k's limit. A k above the C
// search's limit is declined.
func TestRetrieveRowsMatchGo(t *testing.T) {
	defer setKernelLevel(levelAVX512)
	for _, level := range []int{levelAVX512, levelAVX2, levelSSE2} {
		if got := retrieveLevel(level); got != level {
			t.Logf("level %d: the CPU runs level %d at most", level, got)
			continue
		}
		r := rand.New(rand.NewSource(int64(17 + level)))
		for trial := 0; trial < 1500; trial++ {
			nk, rows := 1+r.Intn(80), 1+r.Intn(40)
			if trial%4 == 1 {
				// Rows of a multiple of 16 values, up to 256 and one
				// past it, and at least one block of 16: the vector
				// searches read these through their transpose.
				nk, rows = 8*(1+r.Intn(17)), 16+r.Intn(40)
			}
			k := cdmoeKernel{nk: nk, topk: 1 + r.Intn(min(nk, 32))}
			if trial%3 == 0 && nk >= 8 {
				k.topk = 8 // the default, which has a kernel of its own
			}
			sims := make([]float32, rows*2*nk)
			levels := 1 + r.Intn(12)
			for row := 0; row < rows; row++ {
				kind := r.Intn(6)
				for i := row * 2 * nk; i < (row+1)*2*nk; i++ {
					switch {
					case kind == 0:
						sims[i] = float32(r.Intn(levels)) / 4 // many ties
						if sims[i] == 0 && r.Intn(2) == 0 {
							sims[i] = float32(math.Copysign(0, -1))
						}
					case kind == 1 && r.Intn(8) == 0:
						sims[i] = []float32{float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1))}[r.Intn(3)]
					case kind == 2 && r.Intn(4) == 0:
						sims[i] = []float32{math.MaxFloat32, -math.MaxFloat32}[r.Intn(2)] // sums overflow to ±Inf
					default:
						sims[i] = float32(r.NormFloat64())
					}
				}
			}
			got, want := make([]expertChoice, (rows+1)*k.topk), make([]expertChoice, (rows+1)*k.topk)
			lo := r.Intn(2)
			if !retrieveRows32(k, sims, lo, rows, got) {
				t.Fatalf("level %d: nk=%d k=%d declined", level, nk, k.topk)
			}
			b := newRetrieveBufs[float32](k)
			for row := lo; row < rows; row++ {
				retrieve(k, sims[row*2*nk:], &b, want[row*k.topk:(row+1)*k.topk])
			}
			for i := range want {
				g, w := got[i], want[i]
				if g.e != w.e || g.ix != w.ix || g.iy != w.iy || math.Float64bits(g.s) != math.Float64bits(w.s) {
					row := i / k.topk
					t.Fatalf("level %d, nk=%d k=%d, rows [%d,%d): row %d choice %d = %+v, want %+v\nrow %v",
						level, nk, k.topk, lo, rows, row, i%k.topk, g, w, sims[row*2*nk:(row+1)*2*nk])
				}
			}
		}
	}
	if retrieveRows32(cdmoeKernel{nk: 40, topk: 33}, make([]float32, 80), 0, 1, make([]expertChoice, 33)) {
		t.Error("k = 33, above the C search's limit, was not declined")
	}
}

// BenchmarkRetrieveRows times the product-key search of one (token, head)
// on normal similarities, in Go (retrieve) and in C at each kernel level.
func BenchmarkRetrieveRows(b *testing.B) {
	defer setKernelLevel(levelAVX512)
	for _, c := range []struct{ nk, k int }{{32, 8}, {64, 8}, {64, 16}} {
		k := cdmoeKernel{nk: c.nk, topk: c.k}
		r := rand.New(rand.NewSource(1))
		const rows = 4096
		sims := make([]float32, rows*2*c.nk)
		for i := range sims {
			sims[i] = float32(r.NormFloat64())
		}
		out := make([]expertChoice, rows*c.k)
		b.Run(fmt.Sprintf("nk=%d/k=%d/go", c.nk, c.k), func(b *testing.B) {
			buf := newRetrieveBufs[float32](k)
			for i := 0; i < b.N; i++ {
				row := i % rows
				retrieve(k, sims[row*2*c.nk:], &buf, out[row*c.k:(row+1)*c.k])
			}
		})
		for _, level := range []int{levelSSE2, levelAVX2, levelAVX512} {
			if retrieveLevel(level) != level {
				continue
			}
			b.Run(fmt.Sprintf("nk=%d/k=%d/c-level%d", c.nk, c.k, level), func(b *testing.B) {
				for i := 0; i < b.N; i += rows {
					retrieveRows32(k, sims, 0, min(rows, b.N-i), out)
				}
			})
		}
	}
}
