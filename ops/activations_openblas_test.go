//go:build openblas

package ops

import "testing"

// The openblas build has two C variants of its float32 kernels (activations,
// softmax rows, SSD masks, RMSNorm); the other tests run on the one the CPU selects,
// these on the SSE2 one: the activation checks and the golden cases, whose
// float32 runs go through every C kernel.
func TestFloat32KernelsSSE2(t *testing.T) {
	defer useAVX2(true)
	defer rmsnormAVX2(true)
	if useAVX2(false) || rmsnormAVX2(false) {
		t.Fatal("useAVX2(false) or rmsnormAVX2(false) left AVX2 kernels selected")
	}
	t.Run("match float64", TestFloat32ActivationsMatchFloat64)
	t.Run("edges", TestFloat32ActivationsEdges)
	t.Run("softmax rows", TestFloat32SoftmaxRowsMatchFloat64)
	t.Run("softmax NaN", TestFloat32SoftmaxRowsNaN)
	t.Run("log-sum-exp", TestFloat32LogSumExpPartsMatchFloat64)
	t.Run("rmsnorm rows", TestRMSNormRowsMatchGo)
	t.Run("golden", TestGolden)
}
