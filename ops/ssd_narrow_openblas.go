//go:build openblas

package ops

// With the openblas build tag (cgo), SSDNarrow's row passes run in C, as
// loops: Go's copy of a row's 16 values is a call of its own (so is C's
// memcpy of a length it does not know), and those calls were most of the
// op's row passes at d_model 64. The copies are copies and the bias is one
// float add, so the values are Go's to the bit.

/*
// cgo joins the CFLAGS of all the package's files and the last -O wins:
// every file says -O3 (see activations_openblas.go).
#cgo CFLAGS: -O3
#include <stddef.h>

static void wm_narrow_split(float *B, float *C, float *dt, const float *all, const float *bias, ptrdiff_t rows,
                            ptrdiff_t gn, ptrdiff_t h) {
	const ptrdiff_t w = 2 * gn + h;
	for (ptrdiff_t r = 0; r < rows; r++, all += w, dt += h) {
		if (B != NULL)
			for (ptrdiff_t j = 0; j < gn; j++) {
				B[r * gn + j] = all[j];
				C[r * gn + j] = all[gn + j];
			}
		for (ptrdiff_t j = 0; j < h; j++) dt[j] = all[2 * gn + j] + bias[j];
	}
}

static void wm_narrow_join(float *dst, const float *B, const float *C, const float *dt, ptrdiff_t rows, ptrdiff_t gn,
                           ptrdiff_t h) {
	const ptrdiff_t w = 2 * gn + h;
	for (ptrdiff_t r = 0; r < rows; r++, dst += w) {
		for (ptrdiff_t j = 0; j < gn; j++) {
			dst[j] = B[r * gn + j];
			dst[gn + j] = C[r * gn + j];
		}
		for (ptrdiff_t j = 0; j < h; j++) dst[2 * gn + j] = dt[r * h + j];
	}
}
*/
import "C"

// narrowSplit32 is narrowSplitGo on float32, in C.
func narrowSplit32(b, c, dt, all, bias []float32, gn int) {
	h := len(bias)
	rows := len(all) / (2*gn + h)
	if rows == 0 {
		return
	}
	_, _ = dt[rows*h-1], all[rows*(2*gn+h)-1]
	var pb, pc *C.float
	if b != nil {
		_, _ = b[rows*gn-1], c[rows*gn-1]
		pb, pc = f32p(b), f32p(c)
	}
	C.wm_narrow_split(pb, pc, f32p(dt), f32p(all), f32p(bias), C.ptrdiff_t(rows), C.ptrdiff_t(gn), C.ptrdiff_t(h))
}

// narrowJoin32 is narrowJoinGo on float32, in C.
func narrowJoin32(dst, b, c, dt []float32, gn int) {
	rows := len(b) / gn
	if rows == 0 {
		return
	}
	h := len(dt) / rows
	_, _ = dst[rows*(2*gn+h)-1], c[rows*gn-1]
	C.wm_narrow_join(f32p(dst), f32p(b), f32p(c), f32p(dt), C.ptrdiff_t(rows), C.ptrdiff_t(gn), C.ptrdiff_t(h))
}
