//go:build openblas

package ops

// With the openblas build tag (cgo), the paper mask's two float32 row passes
// (attention_mask.go) run in C, vectorised along a row's keys: the forward
// M = P ∘ l and the backward's dl += dM ∘ P (in float64) and dM ∘= l. Each
// value is the same operations as the Go loops: a float32 product, and a
// float64 add of a float32 product that is exact in float64, in the same
// order of rows, so C and Go agree to the bit (TestPaperMaskRowsMatchGo).
// In Go, these scalar loops were about 3% of a (SE)3 IE training step at
// d_model 64.

/*
// cgo joins the CFLAGS of all the package's files and the last -O wins:
// every file says -O3 (see activations_openblas.go).
#cgo CFLAGS: -O3
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("fp-contract=off")
#endif
#include <stddef.h>
#include "wm_avx2_switch.h"

#define WM_PAPER_MASK_KERNELS(SUFFIX, ATTR)                                                               \
	ATTR static void wm_paper_mask_fwd##SUFFIX(float *restrict M, const float *restrict P,                \
	                                           const float *restrict l, ptrdiff_t rows, ptrdiff_t n) {    \
		for (ptrdiff_t i = 0; i < rows; i++) {                                                            \
			float *restrict m = M + i * n;                                                                \
			const float *restrict p = P + i * n;                                                          \
			for (ptrdiff_t j = 0; j < n; j++) m[j] = p[j] * l[j];                                         \
		}                                                                                                 \
	}                                                                                                     \
	ATTR static void wm_paper_mask_bwd##SUFFIX(const float *restrict P, float *restrict dM,               \
	                                           const float *restrict l, double *restrict dl,              \
	                                           ptrdiff_t rows, ptrdiff_t n) {                             \
		for (ptrdiff_t i = 0; i < rows; i++) {                                                            \
			const float *restrict p = P + i * n;                                                          \
			float *restrict dm = dM + i * n;                                                              \
			for (ptrdiff_t j = 0; j < n; j++) {                                                           \
				dl[j] += (double)dm[j] * (double)p[j];                                                    \
				dm[j] *= l[j];                                                                            \
			}                                                                                             \
		}                                                                                                 \
	}

WM_PAPER_MASK_KERNELS(_any, )
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
WM_PAPER_MASK_KERNELS(_avx2, __attribute__((target("avx2,fma"))))
#else
#define wm_paper_mask_fwd_avx2 wm_paper_mask_fwd_any
#define wm_paper_mask_bwd_avx2 wm_paper_mask_bwd_any
#endif

WM_AVX2_SWITCH(wm_pm, 1)
static void wm_paper_mask_fwd(float *M, const float *P, const float *l, ptrdiff_t rows, ptrdiff_t n) {
	if (wm_pm_avx2) wm_paper_mask_fwd_avx2(M, P, l, rows, n);
	else wm_paper_mask_fwd_any(M, P, l, rows, n);
}
static void wm_paper_mask_bwd(const float *P, float *dM, const float *l, double *dl, ptrdiff_t rows, ptrdiff_t n) {
	if (wm_pm_avx2) wm_paper_mask_bwd_avx2(P, dM, l, dl, rows, n);
	else wm_paper_mask_bwd_any(P, dM, l, dl, rows, n);
}
*/
import "C"

// paperMaskAVX2 selects the AVX2 variant of the paper mask's row kernels
// (where the CPU has it) or the portable one, and says which is in use;
// setKernelLevel calls it.
func paperMaskAVX2(on bool) bool {
	return C.wm_pm_set_avx2(cbool(on)) != 0
}

// paperMaskRows32 is paperMaskRowsGo on float32, in C.
func paperMaskRows32(M, P, l []float32, rows, n int) {
	if rows == 0 || n == 0 {
		return
	}
	// The last value each operand is read or written at, so that a short
	// slice panics here rather than C going past it.
	_, _, _ = M[rows*n-1], P[rows*n-1], l[n-1]
	C.wm_paper_mask_fwd(f32p(M), f32p(P), f32p(l), C.ptrdiff_t(rows), C.ptrdiff_t(n))
}

// paperMaskBackwardRows32 is paperMaskBackwardRowsGo on float32, in C.
func paperMaskBackwardRows32(P, dM, l []float32, dl []float64, rows, n int) {
	if rows == 0 || n == 0 {
		return
	}
	_, _, _, _ = P[rows*n-1], dM[rows*n-1], l[n-1], dl[n-1]
	C.wm_paper_mask_bwd(f32p(P), f32p(dM), f32p(l), f64p(dl), C.ptrdiff_t(rows), C.ptrdiff_t(n))
}
