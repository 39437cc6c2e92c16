//go:build openblas

package ops

import (
	"fmt"
	"math"
	"strings"
	"testing"
	"time"
)

// BenchmarkFMAPeak times one core's float32 multiply-add peak at 16 lanes
// (AVX-512) and 8 (AVX2 with FMA), in GFLOP/s, to set the products' rates
// (BenchmarkGemm, wm products) against: pin it with taskset, -cpu 1.
func BenchmarkFMAPeak(b *testing.B) {
	const rounds = 1 << 20
	for _, lanes := range []int{16, 8} {
		b.Run(fmt.Sprintf("lanes=%d", lanes), func(b *testing.B) {
			if _, err := fmaPeak(lanes, 1); err != nil {
				b.Skip(err)
			}
			b.ResetTimer()
			for range b.N {
				if _, err := fmaPeak(lanes, rounds); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(fmaPeakFLOPs(lanes, rounds)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
		})
	}
}

// TestFMAPeakValues checks that the loops run what they count: each chain
// i starts at i and takes v ← 0.999999·v + 1e-7 per round, so after r
// rounds the chains sum to Σ_i (i − 0.1)·0.999999^r + 0.1 (a geometric
// series), and that a width the CPU has no vectors for is an error naming
// it.
func TestFMAPeakValues(t *testing.T) {
	const rounds = 1000
	decay := 1.0
	for range rounds {
		decay *= 0.999999
	}
	want := 0.0
	for i := range 24 {
		want += (float64(i)-0.1)*decay + 0.1
	}
	for _, lanes := range []int{16, 8} {
		got, err := fmaPeak(lanes, rounds)
		if err != nil {
			t.Logf("%d lanes: %v", lanes, err)
			continue
		}
		if d := float64(got)/float64(lanes) - want; d > 1e-3*want || d < -1e-3*want {
			t.Errorf("%d lanes: %d rounds sum to %g a lane, want %g", lanes, rounds, float64(got)/float64(lanes), want)
		}
	}
	if _, err := fmaPeak(4, 1); err == nil || !strings.Contains(err.Error(), "4-lane") {
		t.Errorf("4 lanes: err %v, want one naming the 4-lane width", err)
	}
	if got, want := fmaPeakFLOPs(16, 10), 2.0*16*24*10; got != want {
		t.Errorf("fmaPeakFLOPs(16, 10) = %g, want %g", got, want)
	}
}

// TestFMAPeakRate checks that FMAPeak measures a rate on one and on two
// threads (its value is the host's and not asserted) and refuses zero
// threads.
func TestFMAPeakRate(t *testing.T) {
	for _, threads := range []int{1, 2} {
		r, err := FMAPeak(threads, 20*time.Millisecond)
		if err != nil {
			t.Skipf("%d threads: %v", threads, err)
		}
		if !(r > 0) || math.IsInf(r, 0) {
			t.Errorf("%d threads: rate %g FLOP/s, want a positive finite rate", threads, r)
		}
	}
	if _, err := FMAPeak(0, time.Millisecond); err == nil || !strings.Contains(err.Error(), "0 threads") {
		t.Errorf("0 threads: err %v, want one naming the count", err)
	}
}
