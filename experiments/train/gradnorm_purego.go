//go:build !openblas

package train

// sumSquares32 is a float32 gradient's ‖g‖² for the clipping norm; without
// cgo it is sumSquares8 in Go.
func sumSquares32(x []float32) float64 { return sumSquares8(x) }
