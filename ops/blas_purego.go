//go:build !openblas

package ops

// BLASName names the BLAS this build uses.
const BLASName = "gonum (pure Go)"
