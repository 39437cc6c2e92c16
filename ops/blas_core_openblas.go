//go:build openblas

package ops

// #cgo LDFLAGS: -lopenblas
// char *openblas_get_corename(void);
import "C"

// BLASCore names the kernels OpenBLAS runs on this CPU ("Haswell",
// "SkylakeX", "Cooperlake", ...), as openblas_get_corename reports them.
// OpenBLAS chooses them from the CPU when it loads, unless the environment
// names them in OPENBLAS_CORETYPE; its sgemm on a Zen 5 EPYC ran at about
// 117 GFLOP/s on one core with the AVX2 (Haswell) kernels and 226 with the
// AVX-512 ones. wm info and wm bench report it, for wm and for the peer.
func BLASCore() string { return C.GoString(C.openblas_get_corename()) }

// blasSmallKernels says whether OpenBLAS's kernels for this CPU include
// the small-matrix ones gemmTall blocks its products for (tallRowBlock).
var blasSmallKernels = hasSmallKernels(BLASCore())

// hasSmallKernels says whether OpenBLAS's core (openblas_get_corename) has
// sgemm's small-matrix kernels: in 0.3.21, the SkylakeX family.
func hasSmallKernels(core string) bool {
	switch core {
	case "SkylakeX", "Cooperlake", "SapphireRapids":
		return true
	}
	return false
}

// blasPackedBlocks says whether ops that run a chain of products by blocks
// of rows (SwiGLU) should also do so where OpenBLAS takes the products on
// its packed kernels: true in this build. (A variable, so that the tests
// can turn the path off and on.)
var blasPackedBlocks = true
