package ops

// transposeRows writes src [rows, cols] (leading dimension ld) into dst
// [cols, rows]: dst[j·rows+i] = src[i·ld+j]. float32 goes through
// transposeRows32 (C by 8 × 8 tiles in the openblas build), float64 through
// transposeTiles. The copies that let OpenBLAS's small-matrix kernels take
// a product untransposed (gemm, gemmTall, attention's heads) use it.
func transposeRows[T floats](dst, src []T, ld, rows, cols int) {
	if d, ok := any(dst).([]float32); ok {
		transposeRows32(d, any(src).([]float32), ld, rows, cols)
		return
	}
	transposeTiles(dst, src, ld, rows, cols)
}

// transposeTiles writes src [rows, cols] (leading dimension ld) into dst
// [cols, rows] by tiles of 8 × 8, each tile's 64 values read and written in
// one unrolled pass. Copied row by row instead, each row's 64 values of a
// d_model 64 batch go to 64 places 1 KiB apart, onto a few of the L1
// cache's sets: 1.0 ns a value against 0.37 by tiles (16,384 values in
// cache, Zen 4).
func transposeTiles[T floats](dst, src []T, ld, rows, cols int) {
	const tile = 8
	r8, c8 := rows-rows%tile, cols-cols%tile
	for i0 := 0; i0 < r8; i0 += tile {
		for j0 := 0; j0 < c8; j0 += tile {
			s := src[i0*ld+j0:]
			_ = s[7*ld+7]
			for j := 0; j < tile; j++ {
				d := dst[(j0+j)*rows+i0:][:tile]
				d[0], d[1], d[2], d[3] = s[j], s[ld+j], s[2*ld+j], s[3*ld+j]
				d[4], d[5], d[6], d[7] = s[4*ld+j], s[5*ld+j], s[6*ld+j], s[7*ld+j]
			}
		}
		for i := i0; i < i0+tile; i++ { // the columns past the last full tile
			for j := c8; j < cols; j++ {
				dst[j*rows+i] = src[i*ld+j]
			}
		}
	}
	for i := r8; i < rows; i++ { // the rows past the last full tile
		for j, v := range src[i*ld : i*ld+cols] {
			dst[j*rows+i] = v
		}
	}
}
