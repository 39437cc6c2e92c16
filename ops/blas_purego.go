//go:build !openblas

package ops

// BLASName names the BLAS this build uses.
const BLASName = "gonum (pure Go)"

// BLASCore names the BLAS's kernels for this CPU: "" in the pure-Go build,
// whose gonum BLAS has one set.
func BLASCore() string { return "" }
