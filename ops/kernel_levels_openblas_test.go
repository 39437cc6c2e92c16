//go:build openblas

package ops

import (
	"fmt"
	"math"
	"math/rand"
	"testing"
)

// RMSNorm's C kernels give the Go definition's bits at every level the CPU
// runs: AVX-512 (eight rows at a time, forward and backward), AVX2 and the
// portable loops.
func TestRMSNormRowsEveryLevel(t *testing.T) {
	atEveryLevel(t, rmsnormLevel, TestRMSNormRowsMatchGo)
	atEveryLevel(t, rmsnormLevel, TestRMSNormSavedInvKeepsBits)
}

// Dot8's C loop gives dot8's bits at every level the CPU runs (AVX-512
// runs the AVX2 loop).
func TestDot8EveryLevel(t *testing.T) {
	atEveryLevel(t, dot8Level, TestDot8MatchesGo)
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

// The softmax gradient's AVX-512 variant gives the AVX2 variant's bits:
// the same eight lanes in the same order, folded the same way, four rows
// side by side or one at a time, with and without a tail after the
// eight-lane loop, and in place (d is g) as attention calls it.
func TestSoftmaxGradRowsAVX512MatchesAVX2(t *testing.T) {
	defer setKernelLevel(levelAVX512)
	if setKernelLevel(levelAVX512) != levelAVX512 {
		t.Skip("the CPU has no AVX-512")
	}
	r := rand.New(rand.NewSource(8))
	for _, n := range []int{1, 7, 8, 15, 16, 24, 40, 259, 1024} {
		for _, rows := range []int{1, 4, 5, 9} {
			p, g := make([]float32, rows*n), make([]float32, rows*n)
			for i := range p {
				p[i], g[i] = float32(r.Float64()), float32(r.NormFloat64()*math.Pow(10, float64(i%5-2)))
			}
			got, want := make([]float32, rows*n), make([]float32, rows*n)
			setKernelLevel(levelAVX512)
			softmaxGradRows32(got, p, g, rows, n)
			inPlace := append([]float32(nil), g...)
			softmaxGradRows32(inPlace, p, inPlace, rows, n)
			setKernelLevel(levelAVX2)
			softmaxGradRows32(want, p, g, rows, n)
			name := fmt.Sprintf("n=%d rows=%d", n, rows)
			assertSame32(t, name, got, want)
			assertSame32(t, name+" in place", inPlace, want)
		}
	}
}

// The routed MoE's backward from its save gives the bits of one without, at
// every level the CPU runs.
func TestMoEExpertsBackwardFromSaveEveryLevel(t *testing.T) {
	atEveryLevel(t, setKernelLevel, TestMoEExpertsBackwardFromSave32)
}
