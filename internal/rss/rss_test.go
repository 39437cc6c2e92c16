package rss

import (
	"runtime"
	"runtime/debug"
	"testing"
)

// TestPeakFollowsAllocationAndReset touches 200 MiB, frees it, and checks
// that the peak saw it and, where the reset works, that a reset forgets it.
func TestPeakFollowsAllocationAndReset(t *testing.T) {
	before := PeakMB()
	b := make([]byte, 200<<20)
	for i := 0; i < len(b); i += 4096 {
		b[i] = 1
	}
	peak := PeakMB()
	if peak < 200 || peak < before {
		t.Fatalf("peak %.0f MiB after touching 200 MiB (before %.0f)", peak, before)
	}
	runtime.KeepAlive(b)
	b = nil
	runtime.GC()
	debug.FreeOSMemory()
	if !ResetPeak() {
		t.Skip("no /proc/self/clear_refs here: the peak cannot be reset")
	}
	if after := PeakMB(); after > peak-150 {
		t.Errorf("peak %.0f MiB after the reset, %.0f before: the 200 MiB were not forgotten", after, peak)
	}
}
