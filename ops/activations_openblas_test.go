//go:build openblas

package ops

import "testing"

// The openblas build has two C variants of the float32 activations; the
// tests of binary_test.go run on the one the CPU selects, these on the other.
func TestFloat32ActivationsSSE2(t *testing.T) {
	defer useAVX2(true)
	if useAVX2(false) {
		t.Fatal("useAVX2(false) left the AVX2 kernels selected")
	}
	t.Run("match float64", TestFloat32ActivationsMatchFloat64)
	t.Run("edges", TestFloat32ActivationsEdges)
}
