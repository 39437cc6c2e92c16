//go:build !openblas

package train

// combineWeighted32 is the float32 sum of the shards' gradients; without
// cgo it is combineWeightedGo.
func combineWeighted32(dst []float32, srcs [][]float32, ws []float32) {
	combineWeightedGo(dst, srcs, ws)
}
