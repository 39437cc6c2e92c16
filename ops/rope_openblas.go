//go:build openblas

package ops

// With the openblas build tag (cgo), RoPE's float32 rotation runs in C: the
// float64 arithmetic of rotate, in the same order and with no fused
// multiply-add, so C and Go agree to the bit (TestRopeRowsMatchGo, both
// variants). GCC vectorises the loop over a vector's pairs; the AVX2
// variant is the same code compiled for AVX2.

/*
// cgo joins the CFLAGS of all the package's files and the last -O wins:
// every file says -O3 (see activations_openblas.go).
#cgo CFLAGS: -O3
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("fp-contract=off")
#endif
#include <stddef.h>
#include "wm_avx2_switch.h"

#define WM_ROPE(SUFFIX, ATTR)                                                                             \
	ATTR static void wm_rope_rows##SUFFIX(float *dst, const float *x, const double *cos, const double *sin, \
	                                      ptrdiff_t lo, ptrdiff_t hi, ptrdiff_t t, ptrdiff_t h, ptrdiff_t d,  \
	                                      double sign) {                                                    \
		const ptrdiff_t half = d / 2;                                                                   \
		ptrdiff_t pos = lo % t;                                                                         \
		for (ptrdiff_t bt = lo; bt < hi; bt++, pos = pos + 1 == t ? 0 : pos + 1) {                      \
			const double *cs = cos + pos * half, *sn = sin + pos * half;                                \
			for (ptrdiff_t hh = 0; hh < h; hh++) {                                                      \
				const float *xv = x + (bt * h + hh) * d;                                                \
				float *dv = dst + (bt * h + hh) * d;                                                    \
				for (ptrdiff_t j = 0; j < half; j++) {                                                  \
					const double c = cs[j], s = sign * sn[j];                                           \
					const double a = (double)xv[j], b = (double)xv[j + half];                           \
					dv[j] = (float)(a * c - b * s);                                                     \
					dv[j + half] = (float)(b * c + a * s);                                              \
				}                                                                                       \
			}                                                                                           \
		}                                                                                               \
	}

WM_ROPE(_any, )

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
WM_ROPE(_avx2, __attribute__((target("avx2"))))
#else
#define wm_rope_rows_avx2 wm_rope_rows_any
#endif

WM_AVX2_SWITCH(wm_rope, 0)
static void wm_rope_rows(float *dst, const float *x, const double *cos, const double *sin, ptrdiff_t lo, ptrdiff_t hi,
                         ptrdiff_t t, ptrdiff_t h, ptrdiff_t d, double sign) {
	if (wm_rope_avx2) wm_rope_rows_avx2(dst, x, cos, sin, lo, hi, t, h, d, sign);
	else wm_rope_rows_any(dst, x, cos, sin, lo, hi, t, h, d, sign);
}
*/
import "C"

// ropeAVX2 selects the AVX2 variant of the RoPE kernel (where the CPU has it) or
// the portable one, and says which is in use; setKernelLevel calls it.
func ropeAVX2(on bool) bool {
	return C.wm_rope_set_avx2(cbool(on)) != 0
}

// ropeRows32 is ropeRowsGo on float32, in C.
func ropeRows32(dst, x []float32, cos, sin []float64, lo, hi, t, h, d int, sign float64) {
	if hi <= lo || h == 0 || d < 2 {
		return
	}
	half := d / 2
	_, _ = dst[hi*h*d-1], x[hi*h*d-1]
	_, _ = cos[t*half-1], sin[t*half-1]
	C.wm_rope_rows(f32p(dst), f32p(x), f64p(cos), f64p(sin), C.ptrdiff_t(lo), C.ptrdiff_t(hi), C.ptrdiff_t(t),
		C.ptrdiff_t(h), C.ptrdiff_t(d), C.double(sign))
}
