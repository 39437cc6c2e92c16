//go:build !openblas

package ops

// transposeRows32 is transposeTiles in the pure-Go build (no C kernels).
func transposeRows32(dst, src []float32, ld, rows, cols int) {
	transposeTiles(dst, src, ld, rows, cols)
}
