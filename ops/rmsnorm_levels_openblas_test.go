//go:build openblas

package ops

import (
	"fmt"
	"testing"
)

// RMSNorm's C kernels give the Go definition's bits at every level the CPU
// runs: AVX-512 (the forward eight rows at a time), AVX2 and the portable
// loops.
func TestRMSNormRowsEveryLevel(t *testing.T) {
	defer setKernelLevel(levelAVX512)
	for _, level := range []int{levelAVX512, levelAVX2, levelSSE2} {
		if got := rmsnormLevel(level); got != level {
			t.Logf("level %d: the CPU runs level %d at most", level, got)
			continue
		}
		t.Run(fmt.Sprintf("level=%d", level), TestRMSNormRowsMatchGo)
	}
}
