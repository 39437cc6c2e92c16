//go:build !openblas

package ops

// dot8F32 is dot8 on float32; without cgo, in Go.
func dot8F32(a, b []float32) float64 { return dot8(a, b) }
