//go:build openblas

package ops

// #cgo LDFLAGS: -lopenblas
import "C"

import (
	"gonum.org/v1/netlib/blas/netlib"
	G "gorgonia.org/gorgonia"
)

// BLASName names the BLAS this build uses.
const BLASName = "openblas"

// With the openblas build tag, Gorgonia's matmuls and the fused ops' gemm
// calls go to OpenBLAS through gonum's netlib (Debian: libopenblas-dev).
func init() { G.Use(netlib.Implementation{}) }
