package eval_test

import (
	"fmt"
	"math/rand"
	"runtime"
	"strings"
	"testing"

	"gorgonia.org/tensor"

	"github.com/wonderful-matrices/wonderful-matrices-go/experiments/eval"
	"github.com/wonderful-matrices/wonderful-matrices-go/graph"
	"github.com/wonderful-matrices/wonderful-matrices-go/internal/rss"
)

// TestEvaluationMemoryFlat runs the sliding-window perplexity of a CoCA
// model at 2048 tokens (each forward holds about 130 MiB of scores and
// probabilities) six times and checks that the peak resident memory after
// the sixth call is within 25% (plus 64 MiB) of the peak after the first:
// the memory of one call is returned before the next, instead of the heap
// growing call after call as it did (about 1.1 GiB a call at 8192 tokens).
func TestEvaluationMemoryFlat(t *testing.T) {
	if testing.Short() {
		t.Skip("long forward passes")
	}
	m, err := graph.New(graph.Config{Pattern: "KM KM", Vocab: 64, DModel: 32, Heads: 4, MaxPosition: 256})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Init(tensor.Float32, 1); err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewSource(2))
	stream := make([]int, 2048+1)
	for i := range stream {
		stream[i] = r.Intn(64)
	}
	if !rss.ResetPeak() {
		t.Skip("the peak RSS cannot be reset on this system")
	}
	call := func() {
		if _, err := eval.SlidingWindowPPL(m, stream, 2048, 2048); err != nil {
			t.Fatal(err)
		}
	}
	// After each call: the peak so far, and what the Go heap holds and has
	// not returned to the system, so that a failure says which call grew.
	var trace []string
	after := func(i int) {
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		trace = append(trace, fmt.Sprintf("call %d: peak %.0f MiB, heap in use %d MiB, held %d MiB, %d collections",
			i, rss.PeakMB(), ms.HeapInuse>>20, (ms.HeapSys-ms.HeapReleased)>>20, ms.NumGC))
	}
	call()
	first := rss.PeakMB()
	after(1)
	for i := 2; i <= 6; i++ {
		call()
		after(i)
	}
	if last := rss.PeakMB(); last > 1.25*first+64 {
		t.Errorf("peak RSS %.0f MiB after 6 evaluations, %.0f MiB after the first: memory grows with each call\n%s",
			last, first, strings.Join(trace, "\n"))
	} else {
		t.Logf("peak RSS %.0f MiB after the first evaluation, %.0f MiB after 6\n%s", first, last, strings.Join(trace, "\n"))
	}
}
