package ops

import (
	"fmt"
	"testing"
)

// transposeTiles writes every value of src [rows, cols] to dst [cols, rows],
// for sizes with and without whole 8 × 8 tiles, with src's rows packed and
// with a leading dimension wider than them.
func TestTransposeTiles(t *testing.T) {
	for _, rows := range []int{1, 7, 8, 9, 16, 23, 256} {
		for _, cols := range []int{1, 5, 8, 13, 64} {
			for _, ld := range []int{cols, cols + 3} {
				src := make([]float32, (rows-1)*ld+cols)
				for i := range src {
					src[i] = float32(i + 1)
				}
				dst := make([]float32, rows*cols)
				transposeTiles(dst, src, ld, rows, cols)
				for i := 0; i < rows; i++ {
					for j := 0; j < cols; j++ {
						if got, want := dst[j*rows+i], src[i*ld+j]; got != want {
							t.Fatalf("%d×%d, ld %d: dst[%d][%d] = %v, want src[%d][%d] = %v", rows, cols, ld, j, i, got, i, j, want)
						}
					}
				}
			}
		}
	}
}

// transposeRows (in the openblas build, the C kernel at the level
// setKernelLevel chose) writes the same matrix as transposeTiles, for
// sizes with and without whole 8 × 8 tiles and leading dimensions wider
// than a row. The AVX2 kernel takes some of these eight rows at a time and
// the others in column strips over blocks of 128 rows (wm_tr_strips: more
// than 128 columns, or rows a multiple of 256): 256 and 512 rows, and 136
// and 200 columns, go to strips, 300 rows with a last block of 40.
func TestTransposeRowsMatchesTiles(t *testing.T) {
	for _, rows := range []int{1, 7, 8, 9, 16, 23, 64, 256, 300, 512} {
		for _, cols := range []int{1, 5, 8, 13, 16, 64, 136, 200} {
			for _, ld := range []int{cols, cols + 3} {
				src := make([]float32, (rows-1)*ld+cols)
				for i := range src {
					src[i] = float32(i + 1)
				}
				got, want := make([]float32, rows*cols), make([]float32, rows*cols)
				transposeRows(got, src, ld, rows, cols)
				transposeTiles(want, src, ld, rows, cols)
				for i := range want {
					if got[i] != want[i] {
						t.Fatalf("%d×%d, ld %d: transposeRows gives %v at %d, transposeTiles %v", rows, cols, ld, got[i], i, want[i])
					}
				}
			}
		}
	}
}

// BenchmarkTransposeRows times the copy of one SSD chunk's B (64 × 16),
// one unit's U (64 × 64), a batch of attention's keys at d_model 64 (256 ×
// 64) and at d_model 256 (1024 × 256), and 64 rows of a weight into a
// panel (64 × 688), in the build's kernel and in Go's tiles.
func BenchmarkTransposeRows(b *testing.B) {
	for _, s := range [][2]int{{64, 16}, {64, 64}, {256, 64}, {1024, 256}, {64, 688}} {
		rows, cols := s[0], s[1]
		src, dst := make([]float32, rows*cols), make([]float32, rows*cols)
		b.Run(fmt.Sprintf("%dx%d/build", rows, cols), func(b *testing.B) {
			b.SetBytes(int64(4 * rows * cols))
			for i := 0; i < b.N; i++ {
				transposeRows(dst, src, cols, rows, cols)
			}
		})
		b.Run(fmt.Sprintf("%dx%d/go", rows, cols), func(b *testing.B) {
			b.SetBytes(int64(4 * rows * cols))
			for i := 0; i < b.N; i++ {
				transposeTiles(dst, src, cols, rows, cols)
			}
		})
	}
}
