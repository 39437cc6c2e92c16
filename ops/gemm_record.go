package ops

import (
	"runtime"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pkg/errors"
)

// GemmShape is one kind of product a fused op asks gemm for: c (m×n) =
// op(a) (m×k) · op(b) (k×n), row-major with leading dimensions LDA, LDB
// and LDC (a head of a [b,t,h,d] tensor has leading dimension h·d), in
// float32 or float64, overwriting c (beta 0) or adding to it.
type GemmShape struct {
	Float64        bool
	TransA, TransB bool
	M, N, K        int
	LDA, LDB, LDC  int
	Accumulate     bool // beta ≠ 0
	// Width64 is set for a product run on the 64-wide kernel (gemmHeadN),
	// not the BLAS.
	Width64 bool
}

// FLOPs is 2·m·n·k, as GemmFLOPs counts a product.
func (s GemmShape) FLOPs() int64 { return 2 * int64(s.M) * int64(s.N) * int64(s.K) }

// GemmShapes counts the products of each shape a piece of work asked for.
type GemmShapes map[GemmShape]int

// FLOPs is the work of all the products counted.
func (g GemmShapes) FLOPs() int64 {
	var f int64
	for s, n := range g {
		f += s.FLOPs() * int64(n)
	}
	return f
}

// gemmRecording is the recording in progress, nil when none is: gemm reads
// it on every call, which costs an atomic load when nothing records.
var gemmRecording atomic.Pointer[gemmRecorder]

type gemmRecorder struct {
	mu     sync.Mutex
	shapes GemmShapes
	// The products' core time: while n calls are in the BLAS, min(n,
	// cores) cores are counted busy in it.
	inFlight int
	cores    int
	last     time.Time
	coreTime time.Duration
	// over is the time more calls than cores were in flight.
	over time.Duration
	// sites, when RecordGemmSites records, sums each call's wall time by
	// its stack (program counters, resolved to names at the end).
	sites map[siteKey]GemmSiteTime
}

// siteKey is a call's shape and the return addresses on its stack, from
// gemm's caller outwards.
type siteKey struct {
	shape GemmShape
	pcs   [siteDepth]uintptr
}

// siteDepth is how many frames of a product's stack RecordGemmSites keeps.
const siteDepth = 10

// gemmCall is one BLAS call in flight, from enterBLAS to leaveBLAS.
type gemmCall struct {
	key   siteKey
	start time.Time
}

// enterBLAS counts one product of shape s and its BLAS call as begun;
// leaveBLAS counts the call as ended. When sites are recorded, enterBLAS
// takes the stack of gemm's caller (skip: the frames between enterBLAS
// and that caller).
func (r *gemmRecorder) enterBLAS(s GemmShape, skip int) gemmCall {
	c := gemmCall{key: siteKey{shape: s}}
	if r.sites != nil {
		runtime.Callers(skip+2, c.key.pcs[:])
	}
	r.mu.Lock()
	r.shapes[s]++
	r.countCalls(1)
	r.mu.Unlock()
	c.start = time.Now()
	return c
}

func (r *gemmRecorder) leaveBLAS(c gemmCall) {
	wall := time.Since(c.start)
	r.mu.Lock()
	if r.sites != nil {
		t := r.sites[c.key]
		t.Calls++
		t.Wall += wall
		r.sites[c.key] = t
	}
	r.countCalls(-1)
	r.mu.Unlock()
}

// countFusedProducts counts n products of shape s that a fused kernel
// forms in its own loops rather than through gemm (CDMoE's key
// similarities inside its search, retrieveQueries32): in GemmFLOPs and in
// a recording's shapes, so that a step's matrix-product work, its ceiling
// and its replay hold them wherever they run. A recording's BLASTime and
// sites do not, as no BLAS call ran them.
func countFusedProducts(s GemmShape, n int) {
	gemmFLOPs.Add(s.FLOPs() * int64(n))
	if r := gemmRecording.Load(); r != nil {
		r.mu.Lock()
		r.shapes[s] += n
		r.mu.Unlock()
	}
}

// countCalls adds the time since the last call began or ended, at the
// cores busy in calls since, and changes the number of calls in flight.
// The caller holds r.mu.
func (r *gemmRecorder) countCalls(delta int) {
	now := time.Now()
	if r.inFlight > 0 {
		r.coreTime += time.Duration(min(r.inFlight, r.cores)) * now.Sub(r.last)
	}
	if r.inFlight > r.cores {
		r.over += now.Sub(r.last)
	}
	r.last = now
	r.inFlight += delta
}

// GemmRecording is what RecordGemm saw of a piece of work's products.
type GemmRecording struct {
	// Shapes counts the products of each shape.
	Shapes GemmShapes
	// BLASTime is the core time the products took where they ran, among
	// the work's other passes: while n BLAS calls are in flight, min(n,
	// cores) cores count as busy in them (cores: runtime.NumCPU, those
	// the process may run on; goroutines can have more calls in flight
	// than that, and a call's own wall time then counts time it waited).
	// Each call counts as one core, as OpenBLAS runs here (one thread,
	// blas_openblas.go); gonum's pure-Go BLAS splits a large product over
	// goroutines of its own, so in that build it is a lower bound.
	// A call counts from just before the BLAS to just after it, so
	// OpenBLAS's packing copies and its clearing of c are the product's;
	// a call also pays for a lock and two clock reads of tens of
	// nanoseconds. Set against ReplayGemmShapes' time for the same shapes,
	// it tells how much slower the products ran inside the work than
	// alone; set against the work's core time, how much of the work lies
	// outside the products.
	BLASTime time.Duration
	// Wall is the time the work took, recording included.
	Wall time.Duration
	// Oversubscribed is the wall time during which more BLAS calls were
	// in flight than the process has cores: the calls then share cores,
	// and each one's own wall time (Sites) counts the time it waited.
	Oversubscribed time.Duration
	// Sites is filled by RecordGemmSites only: each call's wall time,
	// summed by shape and by where in the ops it was asked for.
	Sites map[GemmSite]GemmSiteTime
}

// GemmSite is one kind of product and where it was asked for. Caller names
// the functions of this package on the call's stack, innermost first and
// without gemm itself, as "gemmTallSerial < gemmTall < parallelRanges"
// (type parameters and closure suffixes dropped, repeats folded). The
// stack of a product run on a worker goroutine ends where that goroutine
// began, so a layer's products split over workers name the helper that
// split them (gemmTall: a linear layer's rows; weightGradHalves: a weight
// gradient), and the rest name their op (attnBackward, ssdChunkOutput).
type GemmSite struct {
	Caller string
	Shape  GemmShape
}

// GemmSiteTime is what a recording saw of one site: how many calls, and
// their wall times summed, each from just before its BLAS call to just
// after it (so packing copies and OpenBLAS's clearing of c count).
type GemmSiteTime struct {
	Calls int
	Wall  time.Duration
}

// RecordGemm runs work and returns the products the fused ops asked gemm
// for while it ran, from every goroutine (so run nothing else at the same
// time), the time their BLAS calls took, and the work's own time. One
// recording runs at a time; a second one started during the first is an
// error.
func RecordGemm(work func() error) (GemmRecording, error) {
	return recordGemm(work, false)
}

// RecordGemmSites is RecordGemm that also sums each call's wall time by
// its site (GemmRecording.Sites): which op asked for which products, and
// how long they took where they ran. Taking every call's stack costs 1.5–3
// µs a call outside its timed span (a d_model 64 training step of some
// 4,100 products took 7–14% longer than under RecordGemm), so the work's
// own Wall grows by that much; BLASTime and the calls' times do not.
func RecordGemmSites(work func() error) (GemmRecording, error) {
	return recordGemm(work, true)
}

func recordGemm(work func() error, sites bool) (GemmRecording, error) {
	r := &gemmRecorder{shapes: GemmShapes{}, cores: runtime.NumCPU()}
	if sites {
		r.sites = map[siteKey]GemmSiteTime{}
	}
	if !gemmRecording.CompareAndSwap(nil, r) {
		return GemmRecording{}, errors.New("record gemm shapes: another recording is running")
	}
	t0 := time.Now()
	err := work()
	wall := time.Since(t0)
	gemmRecording.Store(nil)
	r.mu.Lock()
	defer r.mu.Unlock()
	rec := GemmRecording{Shapes: r.shapes, BLASTime: r.coreTime, Wall: wall, Oversubscribed: r.over}
	if sites {
		rec.Sites = map[GemmSite]GemmSiteTime{}
		for k, t := range r.sites {
			site := GemmSite{Caller: siteCaller(k.pcs[:]), Shape: k.shape}
			sum := rec.Sites[site]
			sum.Calls += t.Calls
			sum.Wall += t.Wall
			rec.Sites[site] = sum
		}
	}
	return rec, err
}

// RecordGemmShapes is RecordGemm's shapes alone.
func RecordGemmShapes(work func() error) (GemmShapes, error) {
	rec, err := RecordGemm(work)
	return rec.Shapes, err
}

// ReplayGemmShapes times the products of shapes run by this build's BLAS
// on operands of their own, spread over the given number of goroutines at
// once (each shape's count split between them as evenly as it divides),
// and returns the wall time of the fastest of rounds replays. Each
// goroutine runs each of its shapes once untimed first, and then its share
// of the products one shape after another, so their operands are as warm
// as the cache allows: the time is a lower bound on what the same products
// take inside a step, where they run among other work. `wm bench` sets a
// step's time against it.
func ReplayGemmShapes(shapes GemmShapes, goroutines, rounds int) (time.Duration, error) {
	return replayShapes("replay gemm shapes", shapes, goroutines, rounds, shapeShare.prepare)
}

// replayShapes checks shapes, splits them over goroutines and returns the
// wall time of the fastest of rounds replays. Each goroutine's products are
// made ready once, by prepare (operands allocated, each shape run once),
// before the first round's clock starts, and run again in every round.
// what names the caller in errors.
func replayShapes(what string, shapes GemmShapes, goroutines, rounds int, prepare func(shapeShare) []replayRun) (time.Duration, error) {
	if goroutines < 1 || rounds < 1 {
		return 0, errors.Errorf("%s: goroutines %d and rounds %d must be >= 1", what, goroutines, rounds)
	}
	for s, n := range shapes {
		if s.M < 0 || s.N < 0 || s.K < 0 || n < 0 || s.LDC < s.N || s.LDA < s.cols(s.TransA, s.M, s.K) || s.LDB < s.cols(s.TransB, s.K, s.N) {
			return 0, errors.Errorf("%s: %+v ×%d is not a valid product", what, s, n)
		}
	}
	shares := splitShapes(shapes, goroutines)
	prepared := make([][]replayRun, len(shares))
	best := time.Duration(-1)
	for range rounds {
		var ready, done sync.WaitGroup
		start := make(chan struct{})
		for i, share := range shares {
			ready.Add(1)
			done.Add(1)
			go func() {
				defer done.Done()
				if prepared[i] == nil {
					prepared[i] = prepare(share)
				}
				runs := prepared[i]
				ready.Done()
				<-start
				for _, r := range runs {
					for range r.n {
						r.run()
					}
				}
			}()
		}
		ready.Wait()
		t0 := time.Now()
		close(start)
		done.Wait()
		if d := time.Since(t0); best < 0 || d < best {
			best = d
		}
	}
	return best, nil
}

// cols is the row length a row-major operand needs: op(x) is rows×cols of
// x, or its transpose.
func (GemmShape) cols(trans bool, rows, cols int) int {
	if trans {
		return rows
	}
	return cols
}

// elems is the length of a row-major operand with op(x) rows×cols and
// leading dimension ld.
func elems(trans bool, rows, cols, ld int) int {
	if trans {
		rows, cols = cols, rows
	}
	if rows == 0 || cols == 0 {
		return 0
	}
	return (rows-1)*ld + cols
}

// operandElems is the length of each of a, b and c for one product of s.
func (s GemmShape) operandElems() [3]int {
	return [3]int{elems(s.TransA, s.M, s.K, s.LDA), elems(s.TransB, s.K, s.N, s.LDB), elems(false, s.M, s.N, s.LDC)}
}

// shapeShare is one goroutine's part of a replay: how many products of
// each shape, largest first.
type shapeShare []shapeCount

type shapeCount struct {
	s GemmShape
	n int
}

// splitShapes gives each of g goroutines its products: each shape's count
// divided evenly, the remainders going to the goroutine with the least work
// so far, so that a shape asked for once is not always on the first.
func splitShapes(shapes GemmShapes, g int) []shapeShare {
	keys := make([]GemmShape, 0, len(shapes))
	for s := range shapes {
		keys = append(keys, s)
	}
	// Largest products first; a fixed order for the rest, so a replay does
	// not depend on map order.
	sort.Slice(keys, func(i, j int) bool {
		a, b := keys[i], keys[j]
		if fa, fb := a.FLOPs(), b.FLOPs(); fa != fb {
			return fa > fb
		}
		return lessShape(a, b)
	})
	shares := make([]shapeShare, g)
	load := make([]int64, g)
	for _, s := range keys {
		n := shapes[s]
		counts := make([]int, g)
		for i := range counts {
			counts[i] = n / g
		}
		for range n % g {
			least := 0
			for i := range load {
				if load[i]+int64(counts[i])*s.FLOPs() < load[least]+int64(counts[least])*s.FLOPs() {
					least = i
				}
			}
			counts[least]++
		}
		for i, c := range counts {
			if c > 0 {
				shares[i] = append(shares[i], shapeCount{s, c})
				load[i] += int64(c) * s.FLOPs()
			}
		}
	}
	return shares
}

// lessShape orders shapes of equal work by their fields.
func lessShape(a, b GemmShape) bool {
	ka := [...]int{b2i(a.Float64), b2i(a.TransA), b2i(a.TransB), a.M, a.N, a.K, a.LDA, a.LDB, a.LDC, b2i(a.Accumulate)}
	kb := [...]int{b2i(b.Float64), b2i(b.TransA), b2i(b.TransB), b.M, b.N, b.K, b.LDA, b.LDB, b.LDC, b2i(b.Accumulate)}
	for i := range ka {
		if ka[i] != kb[i] {
			return ka[i] < kb[i]
		}
	}
	return false
}

// replayRun is one shape of a share, ready to run n times.
type replayRun struct {
	run func()
	n   int
}

// prepare allocates the share's operands (one buffer of each role, as
// large as its largest shape needs, per element type) and runs each shape
// once.
func (sh shapeShare) prepare() []replayRun {
	need32, need64 := sh.operandNeeds()
	a32, b32, c32 := replayOperands[float32](need32)
	a64, b64, c64 := replayOperands[float64](need64)
	return sh.ready(
		func(s GemmShape) func() { return replayProduct(s, a32, b32, c32) },
		func(s GemmShape) func() { return replayProduct(s, a64, b64, c64) })
}

// operandNeeds is, per element type, the length of a, b and c the share's
// largest shapes need.
func (sh shapeShare) operandNeeds() (need32, need64 [3]int) {
	for _, c := range sh {
		need := &need32
		if c.s.Float64 {
			need = &need64
		}
		n := c.s.operandElems()
		for r := range need {
			need[r] = max(need[r], n[r])
		}
	}
	return need32, need64
}

// ready makes each of the share's shapes a product through product32 or
// product64, by its element type, and runs each once.
func (sh shapeShare) ready(product32, product64 func(GemmShape) func()) []replayRun {
	runs := make([]replayRun, 0, len(sh))
	for _, c := range sh {
		product := product32
		if c.s.Float64 {
			product = product64
		}
		run := product(c.s)
		run()
		runs = append(runs, replayRun{run, c.n})
	}
	return runs
}

// replayOperands makes a, b and c of the lengths given, a and b filled with
// small values (no zeros or denormals a BLAS could shortcut, no growth to
// overflow when c accumulates).
func replayOperands[T floats](n [3]int) (a, b, c []T) {
	a, b, c = make([]T, n[0]), make([]T, n[1]), make([]T, n[2])
	for i := range a {
		a[i] = T(1+i%13) / 512
	}
	for i := range b {
		b[i] = T(1+i%7) / 512
	}
	return a, b, c
}

// replayProduct is one product of shape s on the operands given, through
// the code the fused ops ran it on (shapeProduct) but not counted in
// GemmFLOPs.
func replayProduct[T floats](s GemmShape, a, b, c []T) func() {
	beta := T(0)
	if s.Accumulate {
		beta = 1
	}
	return func() { shapeProduct(s, 1, a, b, beta, c) }
}
