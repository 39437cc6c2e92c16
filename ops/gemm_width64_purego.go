//go:build !openblas

package ops

// The pure-Go build has no 64-wide kernel: gemmHeadN runs gemm.

func width64Level(int) bool { return false }

func width64On() bool { return false }

// width64Enabled mirrors the openblas build's switch, which tests save and
// restore; nothing reads it in this build.
var width64Enabled bool

func gemmWidth64Kernel32(bool, int, int, int, float32, []float32, int, []float32, int, float32, []float32, int) {
	panic("ops: the 64-wide kernel is not in the pure-Go build")
}

func gemmWidth64Kernel32Rows([]int, int, int, float32, []float32, int, []float32, int, float32, []float32, int) {
	panic("ops: the 64-wide kernel is not in the pure-Go build")
}
