//go:build !openblas

package ops

// BLASName names the BLAS this build uses.
const BLASName = "gonum (pure Go)"

// BLASCore names the BLAS's kernels for this CPU: "" in the pure-Go build,
// whose gonum BLAS has one set.
func BLASCore() string { return "" }

// BLASCoreReplaced is "" in the pure-Go build: there are no OpenBLAS
// kernels to choose again.
func BLASCoreReplaced() string { return "" }

// blasSmallKernels is false: gonum's BLAS has no small-matrix kernels that
// gemmTall could block its products for.
// (A variable, so that the tests can run the blocked path in any build.)
var blasSmallKernels = false

// blasPackedBlocks is false: SwiGLU was not measured by blocks on gonum's
// BLAS, so it builds its three nodes there (swigluRowBlock). A variable, so
// that the tests can run the blocked path in any build.
var blasPackedBlocks = false
