package ops

import (
	"runtime"
	"sync"
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
	var wg sync.WaitGroup
	next := make(chan int, n)
	for i := 0; i < n; i++ {
		next <- i
	}
	close(next)
	wg.Add(workers)
	for w := 0; w < workers; w++ {
		go func() {
			defer wg.Done()
			for i := range next {
				fn(i)
			}
		}()
	}
	wg.Wait()
}

// parallelRanges splits [0, n) into contiguous ranges, one per worker, and
// calls fn(worker, lo, hi) for each; it returns the number of workers used,
// so that callers can keep one accumulator per worker and sum them after.
func parallelRanges(n int, fn func(worker, lo, hi int)) int {
	workers := runtime.GOMAXPROCS(0)
	if workers > n {
		workers = n
	}
	if workers < 1 {
		workers = 1
	}
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
	return workers
}
