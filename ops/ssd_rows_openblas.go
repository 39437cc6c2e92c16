//go:build openblas

package ops

// With the openblas build tag (cgo), the SSD scan's float32 row passes
// (ssd_rows.go) run in C: the Go loops' float32 multiplies and adds in the
// same order, with no fused multiply-add, so C and Go agree to the bit
// (TestSSDRowsMatchGo; every variant in TestSSDRowsEveryLevel). GCC
// vectorises the loops over a head's p values; the AVX2 and AVX-512
// variants are the same code compiled for them. A head of 16 values (d_model
// 64) is one AVX-512 register, two AVX2 ones.

/*
// cgo joins the CFLAGS of all the package's files and the last -O wins:
// every file says -O3 (see activations_openblas.go).
#cgo CFLAGS: -O3
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("fp-contract=off")
#endif
#include <stddef.h>
#include "wm_avx2_switch.h"

#define WM_SSD_ROWS(SUFFIX, ATTR)                                                                       \
	ATTR static void wm_ssd_scale_inputs##SUFFIX(float *U, float *W, const float *x, ptrdiff_t ldx,      \
	                                              const float *dt, ptrdiff_t ldt, const double *w,       \
	                                              ptrdiff_t wst, ptrdiff_t L, ptrdiff_t hb, ptrdiff_t p, \
	                                              ptrdiff_t P) {                                         \
		for (ptrdiff_t i = 0; i < L; i++)                                                              \
			for (ptrdiff_t j = 0; j < hb; j++) {                                                       \
				const float d = dt[i * ldt + j], wv = (float)w[j * wst + i];                           \
				const float *restrict xh = x + i * ldx + j * p;                                        \
				float *restrict Wr = W + i * P + j * p;                                                \
				if (U == NULL) {                                                                       \
					for (ptrdiff_t q = 0; q < p; q++) Wr[q] = wv * (d * xh[q]);                        \
					continue;                                                                          \
				}                                                                                      \
				float *restrict Ur = U + i * P + j * p;                                                \
				for (ptrdiff_t q = 0; q < p; q++) {                                                    \
					float uv = d * xh[q];                                                              \
					Ur[q] = uv;                                                                        \
					Wr[q] = wv * uv;                                                                   \
				}                                                                                      \
			}                                                                                          \
	}                                                                                                  \
	ATTR static void wm_ssd_combine_output##SUFFIX(float *y, ptrdiff_t ld, const float *Yc,              \
	                                                const float *tmp, ptrdiff_t P, const double *e,      \
	                                                const double *s, ptrdiff_t est, const float *D,      \
	                                                const float *x, ptrdiff_t L, ptrdiff_t hb,           \
	                                                ptrdiff_t p) {                                       \
		for (ptrdiff_t i = 0; i < L; i++)                                                              \
			for (ptrdiff_t j = 0; j < hb; j++) {                                                       \
				const float ev = (float)e[j * est + i];                                                \
				float *restrict yr = y + i * ld + j * p;                                               \
				const float *restrict yc = Yc + i * P + j * p, *restrict tm = tmp + i * P + j * p;     \
				const float sv = s == NULL ? 1.0f : (float)s[j * est + i];                             \
				if (D == NULL) {                                                                       \
					for (ptrdiff_t q = 0; q < p; q++) yr[q] = sv * yc[q] + ev * tm[q];                 \
					continue;                                                                          \
				}                                                                                      \
				const float Dh = D[j], *restrict xr = x + i * ld + j * p;                              \
				for (ptrdiff_t q = 0; q < p; q++) yr[q] = sv * yc[q] + ev * tm[q] + Dh * xr[q];        \
			}                                                                                          \
	}

WM_SSD_ROWS(_any, )

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
WM_SSD_ROWS(_avx2, __attribute__((target("avx2"))))
WM_SSD_ROWS(_avx512, __attribute__((target("avx512f,avx512dq,avx2"))))
#else
#define wm_ssd_scale_inputs_avx2 wm_ssd_scale_inputs_any
#define wm_ssd_combine_output_avx2 wm_ssd_combine_output_any
#define wm_ssd_scale_inputs_avx512 wm_ssd_scale_inputs_any
#define wm_ssd_combine_output_avx512 wm_ssd_combine_output_any
#endif

WM_LEVEL_SWITCH(wm_ssdr, 0)

static void wm_ssd_scale_inputs(float *U, float *W, const float *x, ptrdiff_t ldx, const float *dt, ptrdiff_t ldt,
                                const double *w, ptrdiff_t wst, ptrdiff_t L, ptrdiff_t hb, ptrdiff_t p, ptrdiff_t P) {
	if (wm_ssdr_level >= 2) wm_ssd_scale_inputs_avx512(U, W, x, ldx, dt, ldt, w, wst, L, hb, p, P);
	else if (wm_ssdr_level == 1) wm_ssd_scale_inputs_avx2(U, W, x, ldx, dt, ldt, w, wst, L, hb, p, P);
	else wm_ssd_scale_inputs_any(U, W, x, ldx, dt, ldt, w, wst, L, hb, p, P);
}
static void wm_ssd_combine_output(float *y, ptrdiff_t ld, const float *Yc, const float *tmp, ptrdiff_t P,
                                  const double *e, const double *s, ptrdiff_t est, const float *D, const float *x,
                                  ptrdiff_t L, ptrdiff_t hb, ptrdiff_t p) {
	if (wm_ssdr_level >= 2) wm_ssd_combine_output_avx512(y, ld, Yc, tmp, P, e, s, est, D, x, L, hb, p);
	else if (wm_ssdr_level == 1) wm_ssd_combine_output_avx2(y, ld, Yc, tmp, P, e, s, est, D, x, L, hb, p);
	else wm_ssd_combine_output_any(y, ld, Yc, tmp, P, e, s, est, D, x, L, hb, p);
}
*/
import "C"

// ssdRowsLevel selects the best variant of the SSD row kernels the CPU has
// up to the kernel level most (levelAVX512: the loops compiled for
// AVX-512) and returns the level chosen; setKernelLevel calls it.
func ssdRowsLevel(most int) int {
	return int(C.wm_ssdr_set_level(C.int(most)))
}

// ssdScaleInputs32 is ssdScaleInputsGo on float32, in C.
func ssdScaleInputs32(U, W, x []float32, ldx int, dt []float32, ldt int, w []float64, wst, L, hb, p, P int) {
	if L == 0 || hb == 0 || p == 0 {
		return
	}
	last := (L-1)*P + hb*p - 1
	_, _, _ = W[last], x[(L-1)*ldx+hb*p-1], dt[(L-1)*ldt+hb-1]
	if U != nil {
		_ = U[last]
	}
	_ = w[(hb-1)*wst+L-1]
	C.wm_ssd_scale_inputs(f32p(U), f32p(W), f32p(x), C.ptrdiff_t(ldx), f32p(dt), C.ptrdiff_t(ldt), f64p(w),
		C.ptrdiff_t(wst), C.ptrdiff_t(L), C.ptrdiff_t(hb), C.ptrdiff_t(p), C.ptrdiff_t(P))
}

// ssdCombineOutput32 is ssdCombineOutputGo on float32, in C.
func ssdCombineOutput32(y []float32, ld int, Yc, tmp []float32, P int, e, s []float64, est int, D, x []float32, L, hb, p int) {
	if L == 0 || hb == 0 || p == 0 {
		return
	}
	last, lastY := (L-1)*P+hb*p-1, (L-1)*ld+hb*p-1
	_, _, _, _ = Yc[last], tmp[last], y[lastY], e[(hb-1)*est+L-1]
	if s != nil {
		_ = s[(hb-1)*est+L-1]
	}
	if D != nil {
		_, _ = D[hb-1], x[lastY]
	}
	C.wm_ssd_combine_output(f32p(y), C.ptrdiff_t(ld), f32p(Yc), f32p(tmp), C.ptrdiff_t(P), f64p(e), f64p(s),
		C.ptrdiff_t(est), f32p(D), f32p(x), C.ptrdiff_t(L), C.ptrdiff_t(hb), C.ptrdiff_t(p))
}
