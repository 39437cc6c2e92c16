package train

import (
	"runtime"
	"sort"
	"sync"
	"sync/atomic"
)

// The optimiser step's passes over the parameters (AdamW's update, the
// shards' gradient sums, the clipping norm's sums) share the parameters out
// to the cores with largestFirst.

// largestFirst calls fn(i) for every i below n on GOMAXPROCS goroutines,
// taking the items in decreasing size (stable in i for equal sizes), each
// on one goroutine, and returns when all are done. Work split this way
// gives each item the same result whatever the number of goroutines, so
// long as fn writes only its own item's output.
func largestFirst(n int, size func(i int) int, fn func(i int)) {
	order := make([]int, n)
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return size(order[a]) > size(order[b]) })
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), n) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := int(next.Add(1) - 1); k < n; k = int(next.Add(1) - 1) {
				fn(order[k])
			}
		}()
	}
	wg.Wait()
}

// gradLen is the number of values of a gradient ([]float32 or []float64).
func gradLen(g any) int {
	switch d := g.(type) {
	case []float32:
		return len(d)
	case []float64:
		return len(d)
	}
	return 0
}
