package ops

import (
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// SetLoopThreads moves only where a loop's parts run: parallelRanges gives
// the same ranges to the same worker numbers under every cap, never runs
// more parts at once than the cap, and under a cap of 1 runs them in order
// on the caller's goroutine.
func TestSetLoopThreadsKeepsTheSplit(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(4))
	defer SetLoopThreads(SetLoopThreads(0))
	const n = 103
	type part struct{ lo, hi int }
	run := func(limit int) (parts map[int]part, order []int, most int32) {
		SetLoopThreads(limit)
		parts = map[int]part{}
		var mu sync.Mutex
		var inFlight atomic.Int32
		parallelRanges(n, func(w, lo, hi int) {
			now := inFlight.Add(1)
			time.Sleep(2 * time.Millisecond) // long enough for the other goroutines to start
			mu.Lock()
			parts[w] = part{lo, hi}
			order = append(order, w)
			most = max(most, now)
			mu.Unlock()
			inFlight.Add(-1)
		})
		return parts, order, most
	}
	want, _, most := run(0)
	if len(want) != 4 || most < 2 {
		t.Fatalf("no cap, GOMAXPROCS 4: %d parts, at most %d at once; want 4 parts, more than one at once", len(want), most)
	}
	for _, limit := range []int{1, 2} {
		got, order, most := run(limit)
		if len(got) != len(want) {
			t.Fatalf("cap %d: %d parts, want %d", limit, len(got), len(want))
		}
		for w, p := range want {
			if got[w] != p {
				t.Errorf("cap %d: worker %d ran %v, without a cap %v", limit, w, got[w], p)
			}
		}
		if most > int32(limit) {
			t.Errorf("cap %d: %d parts ran at once", limit, most)
		}
		if limit == 1 {
			for i, w := range order {
				if w != i {
					t.Errorf("cap 1: the parts ran in the order %v, want 0, 1, 2, 3", order)
					break
				}
			}
		}
	}
	if prev := SetLoopThreads(-3); prev != 2 {
		t.Errorf("SetLoopThreads returned %d, the cap it replaced was 2", prev)
	}
	if got := SetLoopThreads(0); got != 0 {
		t.Errorf("a negative cap was kept as %d, want 0 (no cap)", got)
	}
}

// A loop of large products (parallelRangesWork from wideLoopFLOPs on) runs
// its parts on up to GOMAXPROCS goroutines under a cap of 1, with the same
// ranges; below that work it keeps to the cap.
func TestWideLoopsIgnoreTheCap(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(4))
	defer SetLoopThreads(SetLoopThreads(1))
	const n = 103
	run := func(flops float64) (ranges map[int][2]int, most int32) {
		ranges = map[int][2]int{}
		var mu sync.Mutex
		var inFlight atomic.Int32
		parallelRangesWork(n, flops, func(w, lo, hi int) {
			now := inFlight.Add(1)
			time.Sleep(2 * time.Millisecond)
			mu.Lock()
			ranges[w] = [2]int{lo, hi}
			most = max(most, now)
			mu.Unlock()
			inFlight.Add(-1)
		})
		return ranges, most
	}
	wide, most := run(wideLoopFLOPs)
	if most < 2 {
		t.Errorf("a loop of %d FLOPs under a cap of 1 ran at most %d part at once; want it to ignore the cap", wideLoopFLOPs, most)
	}
	narrow, most := run(wideLoopFLOPs - 1)
	if most != 1 {
		t.Errorf("a loop of %d FLOPs under a cap of 1 ran %d parts at once", wideLoopFLOPs-1, most)
	}
	if len(wide) != 4 || len(narrow) != 4 {
		t.Fatalf("%d and %d parts, want 4 at GOMAXPROCS 4", len(wide), len(narrow))
	}
	for w, r := range narrow {
		if wide[w] != r {
			t.Errorf("worker %d: range %v in the wide loop, %v in the capped one", w, wide[w], r)
		}
	}
}
