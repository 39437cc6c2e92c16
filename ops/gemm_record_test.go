package ops

import (
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// A linear layer's forward and backward on one worker ask for exactly its
// three products (y = x w, dx = dy wᵀ, dw = xᵀ dy) with their leading
// dimensions (dx's as it runs: on a copy of wᵀ where BLAS has small
// kernels); the recording's work equals what GemmFLOPs counted; nothing
// is recorded once the recording has returned, and a recording started
// inside another is refused.
func TestRecordGemmShapes(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	const rows, din, dout = 6, 4, 3
	k := linearKernel{x: []int{2, 3, din}, din: din, dout: dout}
	x, w := make([]float64, rows*din), make([]float64, din*dout)
	y, dy := make([]float64, rows*dout), make([]float64, rows*dout)
	dx, dw := make([]float64, rows*din), make([]float64, din*dout)
	before := GemmFLOPs()
	shapes, err := RecordGemmShapes(func() error {
		linearForward(y, [][]float64{x, w}, k)
		linearBackward([][]float64{dx, dw}, dy, [][]float64{x, w}, k)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	dxShape := GemmShape{Float64: true, TransB: true, M: rows, N: din, K: dout, LDA: dout, LDB: dout, LDC: din}
	if untransposeB(false, true, rows, din, dout) { // it runs on a copy of wᵀ (gemm_nt.go)
		dxShape.TransB, dxShape.LDB = false, din
	}
	want := GemmShapes{
		{Float64: true, M: rows, N: dout, K: din, LDA: din, LDB: dout, LDC: dout}: 1,
		dxShape: 1,
		{Float64: true, TransA: true, M: din, N: dout, K: rows, LDA: din, LDB: dout, LDC: dout}: 1,
	}
	if len(shapes) != len(want) {
		t.Fatalf("recorded %v, want %v", shapes, want)
	}
	for s, n := range want {
		if shapes[s] != n {
			t.Errorf("shape %+v: recorded %d times, want %d (all: %v)", s, shapes[s], n, shapes)
		}
	}
	if got, counted := shapes.FLOPs(), GemmFLOPs()-before; got != counted {
		t.Errorf("recorded work %d FLOPs, GemmFLOPs counted %d", got, counted)
	}
	linearForward(y, [][]float64{x, w}, k)
	if len(shapes) != len(want) || shapes[GemmShape{Float64: true, M: rows, N: dout, K: din, LDA: din, LDB: dout, LDC: dout}] != 1 {
		t.Errorf("a product after the recording returned was recorded: %v", shapes)
	}
	_, err = RecordGemmShapes(func() error {
		_, inner := RecordGemmShapes(func() error { return nil })
		return inner
	})
	if err == nil || !strings.Contains(err.Error(), "another recording") {
		t.Errorf("a nested recording gave %v, want a refusal", err)
	}
	if gemmRecording.Load() != nil {
		t.Error("a recording is still active after RecordGemmShapes returned")
	}
}

// The replay splits each shape's count between the goroutines so that
// their work differs by less than one product of each shape, keeps every
// product, and refuses an operand too narrow for its leading dimension.
func TestReplayGemmShapes(t *testing.T) {
	big := GemmShape{M: 64, N: 32, K: 16, LDA: 16, LDB: 32, LDC: 32}
	small := GemmShape{Float64: true, TransA: true, M: 8, N: 8, K: 8, LDA: 8, LDB: 8, LDC: 8, Accumulate: true}
	shapes := GemmShapes{big: 5, small: 3}
	shares := splitShapes(shapes, 2)
	got := GemmShapes{}
	var load [2]int64
	for i, sh := range shares {
		for _, c := range sh {
			got[c.s] += c.n
			load[i] += c.s.FLOPs() * int64(c.n)
		}
	}
	if got[big] != 5 || got[small] != 3 || len(got) != 2 {
		t.Errorf("the shares hold %v, want %v", got, shapes)
	}
	if diff := load[0] - load[1]; diff > big.FLOPs()+small.FLOPs() || -diff > big.FLOPs()+small.FLOPs() {
		t.Errorf("the goroutines' work is %v FLOPs, unbalanced by more than one product of each shape", load)
	}
	for _, g := range []int{1, 2, 3} {
		if d, err := ReplayGemmShapes(shapes, g, 2); err != nil || d <= 0 {
			t.Errorf("replay on %d goroutines: %v, %v", g, d, err)
		}
	}
	bad := big
	bad.LDA = 8 // a is 64×16 row-major: its leading dimension must be >= 16
	if _, err := ReplayGemmShapes(GemmShapes{bad: 1}, 1, 1); err == nil || !strings.Contains(err.Error(), "not a valid product") {
		t.Errorf("a too-narrow leading dimension gave %v", err)
	}
	if _, err := ReplayGemmShapes(shapes, 0, 1); err == nil {
		t.Error("zero goroutines were accepted")
	}
}

// RecordGemm's BLAS time is the time of the products' calls alone: a
// recording of products and a pause between them counts the products and
// not the pause, and a recording without products counts nothing.
func TestRecordGemmTimesTheCalls(t *testing.T) {
	const n = 96
	a, b, c := make([]float32, n*n), make([]float32, n*n), make([]float32, n*n)
	const pause = 40 * time.Millisecond
	t0 := time.Now()
	rec, err := RecordGemm(func() error {
		gemm(false, false, n, n, n, 1, a, n, b, n, 0, c, n)
		time.Sleep(pause)
		gemm(false, false, n, n, n, 1, a, n, b, n, 0, c, n)
		return nil
	})
	wall := time.Since(t0)
	if err != nil {
		t.Fatal(err)
	}
	if got := rec.Shapes[GemmShape{M: n, N: n, K: n, LDA: n, LDB: n, LDC: n}]; got != 2 {
		t.Errorf("recorded %v, want the %d×%d×%d product twice", rec.Shapes, n, n, n)
	}
	if rec.BLASTime <= 0 || rec.BLASTime > wall-pause {
		t.Errorf("BLAS time %v: want above 0 and at most the recording's %v less its %v pause", rec.BLASTime, wall, pause)
	}
	if rec.Wall < pause+rec.BLASTime || rec.Wall > wall {
		t.Errorf("the work's time %v: want at least its %v pause and %v of products, and at most the %v around the recording", rec.Wall, pause, rec.BLASTime, wall)
	}
	rec, err = RecordGemm(func() error { time.Sleep(time.Millisecond); return nil })
	if err != nil || rec.BLASTime != 0 || len(rec.Shapes) != 0 {
		t.Errorf("a recording without products gave %v, %v, %v; want no shapes and no time", rec.Shapes, rec.BLASTime, err)
	}
}

// With more products in flight than the process has cores, BLASTime counts
// each core once: it stays within the cores times the recording's wall
// time, where the calls' own wall times, summed, come to about four times
// that.
func TestRecordGemmCountsEachCoreOnce(t *testing.T) {
	const n = 192
	cores := runtime.NumCPU()
	goroutines := 4 * cores
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(goroutines))
	ops := make([][3][]float32, goroutines)
	for i := range ops {
		ops[i] = [3][]float32{make([]float32, n*n), make([]float32, n*n), make([]float32, n*n)}
	}
	t0 := time.Now()
	rec, err := RecordGemm(func() error {
		var wg sync.WaitGroup
		for _, o := range ops {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range 20 {
					gemm(false, false, n, n, n, 1, o[0], n, o[1], n, 0, o[2], n)
				}
			}()
		}
		wg.Wait()
		return nil
	})
	wall := time.Since(t0)
	if err != nil {
		t.Fatal(err)
	}
	if rec.BLASTime <= 0 || rec.BLASTime > time.Duration(cores)*wall {
		t.Errorf("%d goroutines' products on %d cores: BLAS time %v, want above 0 and at most %d × the recording's %v", goroutines, cores, rec.BLASTime, cores, wall)
	}
}
