//go:build openblas

package ops

// With the openblas build tag (cgo), RoPE's float32 rotation runs in C: the
// float64 arithmetic of rotate, in the same order and with no fused
// multiply-add, so C and Go agree to the bit (TestRopeRowsMatchGo; every
// variant in TestRopeRowsEveryLevel). GCC vectorises the loop over a
// vector's pairs; the AVX2 variant is the same code compiled for AVX2, the
// AVX-512 one the same arithmetic written with intrinsics, eight pairs at a
// time: a head of 16 values (d_model 64) has 8 pairs, one AVX-512 register
// of float64, two AVX2 ones.

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

#include <immintrin.h>

// wm_rope_rows_avx512 is wm_rope_rows_any with eight pairs at a time in
// float64 registers: the same products, sums and conversions, written out
// because GCC's AVX-512 loop for the macro takes sixteen pairs at a time
// and left a d_model-64 head's eight pairs to its scalar remainder (2.5
// times slower than AVX2).
__attribute__((target("avx512f,avx512dq,avx2"))) static void wm_rope_rows_avx512(
	float *dst, const float *x, const double *cos, const double *sin, ptrdiff_t lo, ptrdiff_t hi, ptrdiff_t t,
	ptrdiff_t h, ptrdiff_t d, double sign) {
	const ptrdiff_t half = d / 2;
	const __m512d sg = _mm512_set1_pd(sign);
	ptrdiff_t pos = lo % t;
	for (ptrdiff_t bt = lo; bt < hi; bt++, pos = pos + 1 == t ? 0 : pos + 1) {
		const double *cs = cos + pos * half, *sn = sin + pos * half;
		for (ptrdiff_t hh = 0; hh < h; hh++) {
			const float *xv = x + (bt * h + hh) * d;
			float *dv = dst + (bt * h + hh) * d;
			ptrdiff_t j = 0;
			for (; j + 8 <= half; j += 8) {
				const __m512d c = _mm512_loadu_pd(cs + j), s = _mm512_mul_pd(sg, _mm512_loadu_pd(sn + j));
				const __m512d a = _mm512_cvtps_pd(_mm256_loadu_ps(xv + j));
				const __m512d b = _mm512_cvtps_pd(_mm256_loadu_ps(xv + j + half));
				_mm256_storeu_ps(dv + j, _mm512_cvtpd_ps(_mm512_sub_pd(_mm512_mul_pd(a, c), _mm512_mul_pd(b, s))));
				_mm256_storeu_ps(dv + j + half, _mm512_cvtpd_ps(_mm512_add_pd(_mm512_mul_pd(b, c), _mm512_mul_pd(a, s))));
			}
			for (; j < half; j++) {
				const double c = cs[j], s = sign * sn[j];
				const double a = (double)xv[j], b = (double)xv[j + half];
				dv[j] = (float)(a * c - b * s);
				dv[j + half] = (float)(b * c + a * s);
			}
		}
	}
}
#else
#define wm_rope_rows_avx2 wm_rope_rows_any
#define wm_rope_rows_avx512 wm_rope_rows_any
#endif

WM_LEVEL_SWITCH(wm_rope, 0)
static void wm_rope_rows(float *dst, const float *x, const double *cos, const double *sin, ptrdiff_t lo, ptrdiff_t hi,
                         ptrdiff_t t, ptrdiff_t h, ptrdiff_t d, double sign) {
	if (wm_rope_level >= 2) wm_rope_rows_avx512(dst, x, cos, sin, lo, hi, t, h, d, sign);
	else if (wm_rope_level == 1) wm_rope_rows_avx2(dst, x, cos, sin, lo, hi, t, h, d, sign);
	else wm_rope_rows_any(dst, x, cos, sin, lo, hi, t, h, d, sign);
}
*/
import "C"

// ropeLevel selects the best variant of the RoPE kernel the CPU has up to
// the kernel level most (levelAVX512: the loop compiled for AVX-512) and
// returns the level chosen; setKernelLevel calls it.
func ropeLevel(most int) int {
	return int(C.wm_rope_set_level(C.int(most)))
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
