package ops

import (
	"runtime"
	"sync"
	"sync/atomic"
)

// parallelFor calls fn(i) for i in [0, n) on up to GOMAXPROCS goroutines.
// Each index runs exactly once; fn must not write memory another index writes.
func parallelFor(n int, fn func(i int)) {
	workers := runtime.GOMAXPROCS(0)
	if workers > n {
		workers = n
	}
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

// workerCount is the number of workers parallelRanges uses for n items.
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

// parallelRanges splits [0, n) into workerCount(n) contiguous ranges and calls
// fn(worker, lo, hi) for each on its own goroutine, so that callers can keep
// one accumulator per worker and sum them after.
func parallelRanges(n int, fn func(worker, lo, hi int)) {
	workers := workerCount(n)
	var wg sync.WaitGroup
	wg.Add(workers)
	for w := 0; w < workers; w++ {
		lo, hi := w*n/workers, (w+1)*n/workers
		go func(w, lo, hi int) {
			defer wg.Done()
			fn(w, lo, hi)
		}(w, lo, hi)
	}
	wg.Wait()
}
