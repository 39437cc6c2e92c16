//go:build openblas

package ops

import (
	"fmt"
	"testing"
)

// RMSNorm's C kernels give the Go definition's bits at every level the CPU
// runs: AVX-512 (eight rows at a time, forward and backward), AVX2 and the
// portable loops.
func TestRMSNormRowsEveryLevel(t *testing.T) {
	atEveryLevel(t, rmsnormLevel, TestRMSNormRowsMatchGo)
}

// The SSD backward's row kernel gives the Go definition's bits at every
// level the CPU runs: AVX-512 (a row's eight lanes in one register), AVX2
// and the portable loops.
func TestSSDBackRowsEveryLevel(t *testing.T) {
	atEveryLevel(t, ssdBackRowsLevel, TestSSDBackRowsMatchGo)
}

// The SSD scan's row kernels give the Go definition's bits at every level
// the CPU runs: AVX-512, AVX2 and the portable loops (one code, compiled
// for each).
func TestSSDRowsEveryLevel(t *testing.T) {
	atEveryLevel(t, ssdRowsLevel, TestSSDRowsMatchGo)
}

// RoPE's C kernel gives the Go definition's bits at every level the CPU
// runs: AVX-512 (eight pairs in float64 registers), AVX2 and the portable
// loop.
func TestRopeRowsEveryLevel(t *testing.T) {
	atEveryLevel(t, ropeLevel, TestRopeRowsMatchGo)
}

// The routed MoE's row kernels give the Go definition's bits at every level
// the CPU runs: AVX-512 (the gate gradient's lanes in one register), AVX2
// and the portable loops.
func TestMoERowsEveryLevel(t *testing.T) {
	atEveryLevel(t, moeRowsLevel, TestMoERowsMatchGo)
}

// atEveryLevel runs test with one file's kernels set by set to each level
// the CPU runs, from AVX-512 down, and puts every kernel back to the best
// level afterwards.
func atEveryLevel(t *testing.T, set func(most int) int, test func(*testing.T)) {
	defer setKernelLevel(levelAVX512)
	for _, level := range []int{levelAVX512, levelAVX2, levelSSE2} {
		if got := set(level); got != level {
			t.Logf("level %d: the CPU runs level %d at most", level, got)
			continue
		}
		t.Run(fmt.Sprintf("level=%d", level), test)
	}
}
