package ops

import (
	"runtime"
	"slices"
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

// parallelBlocksWork calls fn once for each block of the grid from 0 (the
// last one shorter), and a block that waits does not hold up the blocks
// after it: with two goroutines, block 0 waits until every other block has
// run, which parallelRanges's fixed halves (blocks 0 to 4 on one worker)
// could never let happen. Under a cap of 1 the blocks run in order on the
// caller's goroutine, unless the loop is a wide one.
func TestParallelBlocksWork(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(2))
	defer SetLoopThreads(SetLoopThreads(0))
	const n, blk = 1000, 100 // ten blocks
	var mu sync.Mutex
	var got [][2]int
	others := make(chan struct{}, n/blk)
	stuck := false
	parallelBlocksWork(n, blk, 0, func(lo, hi int) {
		if lo == 0 {
			for range n/blk - 1 {
				select {
				case <-others:
				case <-time.After(10 * time.Second):
					stuck = true
					return
				}
			}
		} else {
			others <- struct{}{}
		}
		mu.Lock()
		got = append(got, [2]int{lo, hi})
		mu.Unlock()
	})
	if stuck {
		t.Fatal("block 0 waited 10 s for the other blocks: they were held behind it")
	}
	slices.SortFunc(got, func(a, b [2]int) int { return a[0] - b[0] })
	for i, b := range got {
		if want := [2]int{i * blk, (i + 1) * blk}; b != want {
			t.Fatalf("blocks %v; want each of [%d, %d) once in blocks of %d", got, 0, n, blk)
		}
	}
	if len(got) != n/blk {
		t.Fatalf("%d blocks ran, want %d", len(got), n/blk)
	}

	SetLoopThreads(1)
	var order [][2]int
	parallelBlocksWork(250, 100, 0, func(lo, hi int) { order = append(order, [2]int{lo, hi}) })
	if want := [][2]int{{0, 100}, {100, 200}, {200, 250}}; !slices.Equal(order, want) {
		t.Errorf("under a cap of 1: blocks %v, want %v in order", order, want)
	}
}

// tallTileBlock cuts a tall product into blocks of at most tallTileRows
// rows and at least width64PanelRows, two or more a worker where the rows
// allow it.
func TestTallTileBlock(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(2))
	for _, c := range []struct{ m, want int }{{4096, 256}, {1024, 256}, {600, 150}, {300, 75}, {200, 64}, {10, 64}} {
		if got := tallTileBlock(c.m); got != c.want {
			t.Errorf("tallTileBlock(%d) at 2 workers = %d, want %d", c.m, got, c.want)
		}
	}
}
