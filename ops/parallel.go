package ops

import (
	"runtime"
	"sync"
	"sync/atomic"
)

// loopThreads caps the goroutines of every parallelFor and parallelRanges
// (0: no cap). See SetLoopThreads.
var loopThreads atomic.Int32

// SetLoopThreads caps at n the goroutines that each op runs its loops on,
// for the whole process, and returns the cap it replaces (0: none, every
// loop on up to GOMAXPROCS goroutines, the default). The work is still split
// into as many parts as GOMAXPROCS gives, and the parts' partial sums are
// added in the same order, so results are the same bits whatever the cap:
// it moves only where the parts run. A cap of 1 runs them one after the
// other on the calling goroutine. Loops of large matrix products (at least
// wideLoopFLOPs) are not capped.
//
// Data-parallel shards use it (train.Config.ShardThreads): with as many
// shards as cores, each shard's graph on one core without helpers saves
// the goroutines' start and wait in every loop of a small model's step. A
// negative n is taken as 0.
func SetLoopThreads(n int) (previous int) {
	return int(loopThreads.Swap(int32(max(n, 0))))
}

// loopGoroutines is the number of goroutines a loop of parts independent
// parts runs on: GOMAXPROCS, the cap of SetLoopThreads and parts, whichever
// is least, and at least 1.
func loopGoroutines(parts int) int {
	g := min(runtime.GOMAXPROCS(0), parts)
	if c := int(loopThreads.Load()); c > 0 {
		g = min(g, c)
	}
	return max(g, 1)
}

// wideLoopFLOPs is the matrix-product work (FLOPs, all parts together) from
// which a loop takes GOMAXPROCS goroutines whatever SetLoopThreads's cap
// (parallelForWork). Measured on two cores with two shards of one thread
// each (docs/performance.md, "Shards of one thread each"): the loops that
// split a d_model-256 step's products (2·2048·256·256 = 268 MFLOP and
// more) ran faster uncapped, those of a d_model-64 step (138 MFLOP and
// less: SwiGLU's backward, six products over 1,024 rows) capped.
const wideLoopFLOPs = 192 << 20

// gemmWork is the FLOPs of an m × n × k matrix product, 2·m·n·k, the work
// parallelForWork and parallelRangesWork weigh a loop by (as GemmFLOPs
// counts a gemm call's).
func gemmWork(m, n, k int) float64 { return 2 * float64(m) * float64(n) * float64(k) }

// parallelForWork is parallelFor for a loop whose parts hold flops of
// matrix-product work in all: from wideLoopFLOPs on it runs on up to
// GOMAXPROCS goroutines under any cap of SetLoopThreads. The parts are the
// same either way, so the results are too.
func parallelForWork(n int, flops float64, fn func(i int)) {
	if flops >= wideLoopFLOPs {
		parallelForOn(workerCount(n), n, fn)
		return
	}
	parallelFor(n, fn)
}

// parallelRangesWork is parallelRanges for a loop whose ranges hold flops
// of matrix-product work in all (see parallelForWork).
func parallelRangesWork(n int, flops float64, fn func(worker, lo, hi int)) {
	parts := workerCount(n)
	parallelForWork(parts, flops, func(w int) {
		fn(w, w*n/parts, (w+1)*n/parts)
	})
}

// parallelFor calls fn(i) for i in [0, n) on up to GOMAXPROCS goroutines
// (fewer under SetLoopThreads; on the caller's when that is one).
// Each index runs exactly once; fn must not write memory another index writes.
func parallelFor(n int, fn func(i int)) {
	parallelForOn(loopGoroutines(n), n, fn)
}

// parallelForOn calls fn(i) for i in [0, n) on the given number of
// goroutines, the caller's alone when it is one.
func parallelForOn(workers, n int, fn func(i int)) {
	if workers <= 1 {
		for i := 0; i < n; i++ {
			fn(i)
		}
		return
	}
	// Workers take the next index from a shared counter (a channel's lock
	// was a tenth of a small model's evaluation step).
	var wg sync.WaitGroup
	var next atomic.Int64
	wg.Add(workers)
	for w := 0; w < workers; w++ {
		go func() {
			defer wg.Done()
			for i := int(next.Add(1) - 1); i < n; i = int(next.Add(1) - 1) {
				fn(i)
			}
		}()
	}
	wg.Wait()
}

// workerCount is the number of parts parallelRanges splits n items into:
// GOMAXPROCS, or n when fewer, and at least 1. It does not depend on
// SetLoopThreads, so that per-part sums round the same whatever the cap.
func workerCount(n int) int {
	w := runtime.GOMAXPROCS(0)
	if w > n {
		w = n
	}
	if w < 1 {
		w = 1
	}
	return w
}

// parallelRanges splits [0, n) into workerCount(n) contiguous ranges and
// calls fn(worker, lo, hi) for each, so that callers can keep one
// accumulator per worker and sum them after. The ranges run on their own
// goroutines up to the cap of SetLoopThreads, and one after the other on the
// caller's goroutine when there is one range or the cap is 1.
func parallelRanges(n int, fn func(worker, lo, hi int)) {
	parallelRangesWork(n, 0, fn)
}

// parallelBlocksWork calls fn(lo, hi) once for each block [lo, hi) of blk
// items that tile [0, n) from 0, the last one shorter, the blocks taken in
// turn by up to GOMAXPROCS goroutines (weighed by flops of matrix-product
// work as parallelForWork weighs a loop). It is for loops whose results
// do not depend on which goroutine runs a block: where parallelRanges
// hands each worker one fixed range, a worker that falls behind (its core
// taken by the host for a moment, or slower) leaves the other idle at the
// end; here the other takes the blocks still waiting.
func parallelBlocksWork(n, blk int, flops float64, fn func(lo, hi int)) {
	parallelForWork((n+blk-1)/blk, flops, func(b int) { fn(b*blk, min((b+1)*blk, n)) })
}
