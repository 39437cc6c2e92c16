package ops

import (
	"runtime"
	"sync"
	"time"

	"github.com/pkg/errors"
)

// FMAPeak measures the float32 multiply-add peak of threads cores, in
// FLOP/s, at the widest vectors this CPU has (16 lanes with AVX-512, else
// 8 with AVX2 and FMA): each thread, an OS thread of its own, runs
// independent chains of multiply-adds (enough to keep two FMA units busy)
// for about d in five runs, and the best run's FLOPs over its wall time
// is the rate. It is what the cores can do at all, above any BLAS's rate
// on a real product (GemmRate): a step's products can run faster than
// GemmRate, up to this. It returns an error in the pure-Go build and on a
// CPU without such vectors.
func FMAPeak(threads int, d time.Duration) (float64, error) {
	if threads < 1 {
		return 0, errors.Errorf("fma peak: %d threads, want at least 1", threads)
	}
	lanes := 16
	if _, err := fmaPeak(lanes, 1); err != nil {
		lanes = 8
		if _, err8 := fmaPeak(lanes, 1); err8 != nil {
			return 0, errors.Wrap(err8, "fma peak: neither 16 nor 8 lanes")
		}
	}
	// Rounds for about d/5 a run, from a short first one.
	const probe = 1 << 16
	t0 := time.Now()
	if _, err := fmaPeak(lanes, probe); err != nil {
		return 0, err
	}
	rounds := int64(probe)
	if el := time.Since(t0); el > 0 {
		rounds = max(probe, int64(float64(probe)*float64(d/5)/float64(el)))
	}
	best := 0.0
	for range 5 {
		el, err := fmaPeakRun(threads, lanes, rounds)
		if err != nil {
			return 0, err
		}
		if el > 0 {
			best = max(best, float64(threads)*fmaPeakFLOPs(lanes, rounds)/el.Seconds())
		}
	}
	return best, nil
}

// fmaPeakRun runs rounds of the lanes-wide loop on threads OS threads at
// once, released together, and returns the wall time until the last is
// done.
func fmaPeakRun(threads, lanes int, rounds int64) (time.Duration, error) {
	var ready, done sync.WaitGroup
	start := make(chan struct{})
	errs := make([]error, threads)
	ready.Add(threads)
	done.Add(threads)
	for i := range threads {
		go func() {
			defer done.Done()
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			ready.Done()
			<-start
			_, errs[i] = fmaPeak(lanes, rounds)
		}()
	}
	ready.Wait()
	t0 := time.Now()
	close(start)
	done.Wait()
	el := time.Since(t0)
	for _, err := range errs {
		if err != nil {
			return 0, err
		}
	}
	return el, nil
}
