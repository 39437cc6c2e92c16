//go:build openblas

package ops

// #cgo LDFLAGS: -lopenblas
// void openblas_set_num_threads(int);
import "C"

import (
	"os"

	"gonum.org/v1/netlib/blas/netlib"
	G "gorgonia.org/gorgonia"
)

// BLASName names the BLAS this build uses.
const BLASName = "openblas"

// With the openblas build tag, Gorgonia's matmuls and the fused ops' gemm
// calls go to OpenBLAS through gonum's netlib (Debian: libopenblas-dev).
//
// The fused ops already run one goroutine per (batch, head) and call gemm
// from each; OpenBLAS's own threads on top of that oversubscribe the cores
// (measured here: attention forward 4× slower than with one OpenBLAS
// thread). So OpenBLAS runs single-threaded unless OPENBLAS_NUM_THREADS is
// set explicitly.
func init() {
	if os.Getenv("OPENBLAS_NUM_THREADS") == "" {
		C.openblas_set_num_threads(1)
	}
	G.Use(netlib.Implementation{})
}
