//go:build openblas

package ops

// With the openblas build tag (cgo), the SSD backward's float32 row passes
// (ssd_backrows.go) run in C: each row's dot product in dot8's eight
// float64 lanes, folded in dot8's order, and the scaled copy or update as
// one float32 multiply (and add) per value with no fused multiply-add, so C
// and Go agree to the bit (TestSSDBackRowsMatchGo; every variant in
// TestSSDBackRowsEveryLevel). The AVX2 variant holds the eight lanes in two
// four-lane registers (wm_dot8.h, which the softmax gradient uses too). The
// AVX-512 one holds them in one register and scales sixteen values at a
// time, for rows of a multiple of eight (others take the AVX2 loops). Their
// fused multiply-adds give the same sums because a float32 product is exact
// in float64. The rows are 16 to 64 values long (a head at d_model 64 or
// 256): one to eight steps of the dot product's loop, so the conversions to
// float64 and the products are most of a row's work, and AVX-512 halves
// their instructions.

/*
// cgo joins the CFLAGS of all the package's files and the last -O wins:
// every file says -O3 (see activations_openblas.go).
#cgo CFLAGS: -O3
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("fp-contract=off")
#endif
#include <stddef.h>
#include "wm_avx2_switch.h"
#include "wm_dot8.h"

static void wm_rows_dot_scale_any(double *dots, const float *a, ptrdiff_t lda, const float *b, ptrdiff_t ldb,
                                  float *c, ptrdiff_t ldc, const float *s, ptrdiff_t ssi, ptrdiff_t ssj,
                                  ptrdiff_t L, ptrdiff_t hb, ptrdiff_t p, int add) {
	for (ptrdiff_t j = 0; j < hb; j++)
		for (ptrdiff_t i = 0; i < L; i++) {
			const float *ar = a + i * lda + j * p, *br = b + i * ldb + j * p;
			float *cr = c + i * ldc + j * p; // may be ar: the dot reads the row first
			dots[j * L + i] = wm_dot8_any(ar, br, p);
			const float sv = s[i * ssi + j * ssj];
			if (add)
				for (ptrdiff_t q = 0; q < p; q++) cr[q] += sv * ar[q];
			else
				for (ptrdiff_t q = 0; q < p; q++) cr[q] = sv * ar[q];
		}
}

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#include <immintrin.h>
__attribute__((target("avx2,fma"))) static void wm_rows_dot_scale_avx2(
	double *dots, const float *a, ptrdiff_t lda, const float *b, ptrdiff_t ldb, float *c, ptrdiff_t ldc,
	const float *s, ptrdiff_t ssi, ptrdiff_t ssj, ptrdiff_t L, ptrdiff_t hb, ptrdiff_t p, int add) {
	for (ptrdiff_t j = 0; j < hb; j++)
		for (ptrdiff_t i = 0; i < L; i++) {
			const float *ar = a + i * lda + j * p, *br = b + i * ldb + j * p;
			float *cr = c + i * ldc + j * p;
			dots[j * L + i] = wm_dot8_whole_avx2(ar, br, p);
			const float sv = s[i * ssi + j * ssj];
			const __m256 sv8 = _mm256_set1_ps(sv);
			ptrdiff_t q = 0;
			for (; q + 8 <= p; q += 8) {
				__m256 v = _mm256_mul_ps(sv8, _mm256_loadu_ps(ar + q));
				if (add) v = _mm256_add_ps(_mm256_loadu_ps(cr + q), v);
				_mm256_storeu_ps(cr + q, v);
			}
			if (add)
				for (; q < p; q++) cr[q] += sv * ar[q];
			else
				for (; q < p; q++) cr[q] = sv * ar[q];
		}
}

// wm_rows8_avx512 is wm_rows_dot_scale_any for rows of a multiple of
// eight values: a row's eight lanes in one register, added in wm_fold8's
// order (wm_fold8_avx512) after the row's scaled copy or update, sixteen
// values at a time and then eight: each value one float32 product (and one
// sum), as in the portable loops. The dot product reads the row before the
// copy may overwrite it (c may be a). Inlined with p a constant, the loops
// unroll: a row of 16 ran at 1.9 ns against the AVX2 variant's 4.0, and
// 2.7 ns with p a variable.
__attribute__((target("avx512f,avx512dq,avx2,fma"))) static inline __attribute__((always_inline)) void
wm_rows8_avx512(double *dots, const float *a, ptrdiff_t lda, const float *b, ptrdiff_t ldb, float *c, ptrdiff_t ldc,
                const float *s, ptrdiff_t ssi, ptrdiff_t ssj, ptrdiff_t L, ptrdiff_t hb, const ptrdiff_t p, int add) {
	for (ptrdiff_t j = 0; j < hb; j++)
		for (ptrdiff_t i = 0; i < L; i++) {
			const float *ar = a + i * lda + j * p, *br = b + i * ldb + j * p;
			float *cr = c + i * ldc + j * p;
			__m512d l = _mm512_setzero_pd();
			for (ptrdiff_t q = 0; q < p; q += 8)
				l = _mm512_fmadd_pd(_mm512_cvtps_pd(_mm256_loadu_ps(ar + q)), _mm512_cvtps_pd(_mm256_loadu_ps(br + q)), l);
			const __m512 sv16 = _mm512_set1_ps(s[i * ssi + j * ssj]);
			ptrdiff_t q = 0;
			for (; q + 16 <= p; q += 16) {
				__m512 v = _mm512_mul_ps(sv16, _mm512_loadu_ps(ar + q));
				if (add) v = _mm512_add_ps(_mm512_loadu_ps(cr + q), v);
				_mm512_storeu_ps(cr + q, v);
			}
			for (; q < p; q += 8) {
				__m256 v = _mm256_mul_ps(_mm512_castps512_ps256(sv16), _mm256_loadu_ps(ar + q));
				if (add) v = _mm256_add_ps(_mm256_loadu_ps(cr + q), v);
				_mm256_storeu_ps(cr + q, v);
			}
			dots[j * L + i] = wm_fold8_avx512(l);
		}
}

// wm_rows_dot_scale_avx512 runs rows of 16, 32 and 64 values (the SSD's
// heads) and other multiples of eight on wm_rows8_avx512, and other widths
// on the AVX2 variant.
__attribute__((target("avx512f,avx512dq,avx2,fma"))) static void wm_rows_dot_scale_avx512(
	double *dots, const float *a, ptrdiff_t lda, const float *b, ptrdiff_t ldb, float *c, ptrdiff_t ldc,
	const float *s, ptrdiff_t ssi, ptrdiff_t ssj, ptrdiff_t L, ptrdiff_t hb, ptrdiff_t p, int add) {
	switch (p) {
	case 16: wm_rows8_avx512(dots, a, lda, b, ldb, c, ldc, s, ssi, ssj, L, hb, 16, add); return;
	case 32: wm_rows8_avx512(dots, a, lda, b, ldb, c, ldc, s, ssi, ssj, L, hb, 32, add); return;
	case 64: wm_rows8_avx512(dots, a, lda, b, ldb, c, ldc, s, ssi, ssj, L, hb, 64, add); return;
	}
	if (p % 8 == 0) wm_rows8_avx512(dots, a, lda, b, ldb, c, ldc, s, ssi, ssj, L, hb, p, add);
	else wm_rows_dot_scale_avx2(dots, a, lda, b, ldb, c, ldc, s, ssi, ssj, L, hb, p, add);
}
#else
#define wm_rows_dot_scale_avx2 wm_rows_dot_scale_any
#define wm_rows_dot_scale_avx512 wm_rows_dot_scale_any
#endif

WM_LEVEL_SWITCH(wm_sbr, 1)

static void wm_rows_dot_scale(double *dots, const float *a, ptrdiff_t lda, const float *b, ptrdiff_t ldb, float *c,
                              ptrdiff_t ldc, const float *s, ptrdiff_t ssi, ptrdiff_t ssj, ptrdiff_t L, ptrdiff_t hb,
                              ptrdiff_t p, int add) {
	if (wm_sbr_level >= 2) wm_rows_dot_scale_avx512(dots, a, lda, b, ldb, c, ldc, s, ssi, ssj, L, hb, p, add);
	else if (wm_sbr_level == 1) wm_rows_dot_scale_avx2(dots, a, lda, b, ldb, c, ldc, s, ssi, ssj, L, hb, p, add);
	else wm_rows_dot_scale_any(dots, a, lda, b, ldb, c, ldc, s, ssi, ssj, L, hb, p, add);
}
*/
import "C"

// ssdBackRowsLevel selects the best variant of the SSD backward's row
// kernel the CPU has up to the kernel level most (levelAVX512: a row's
// eight lanes in one register) and returns the level chosen;
// setKernelLevel calls it.
func ssdBackRowsLevel(most int) int {
	return int(C.wm_sbr_set_level(C.int(most)))
}

// ssdRowsDotScale32 is ssdRowsDotScaleGo on float32, in C.
func ssdRowsDotScale32(dots []float64, a []float32, lda int, b []float32, ldb int, c []float32, ldc int, scale []float32, ssi, ssj, L, hb, p int, add bool) {
	if L == 0 || hb == 0 || p == 0 {
		return
	}
	// The last row's last value of each operand, so that a short slice
	// panics here rather than C reading past it.
	_, _, _ = a[(L-1)*lda+hb*p-1], b[(L-1)*ldb+hb*p-1], c[(L-1)*ldc+hb*p-1]
	_, _ = scale[(L-1)*ssi+(hb-1)*ssj], dots[hb*L-1]
	ad := 0
	if add {
		ad = 1
	}
	C.wm_rows_dot_scale(f64p(dots), f32p(a), C.ptrdiff_t(lda), f32p(b), C.ptrdiff_t(ldb), f32p(c), C.ptrdiff_t(ldc),
		f32p(scale), C.ptrdiff_t(ssi), C.ptrdiff_t(ssj), C.ptrdiff_t(L), C.ptrdiff_t(hb), C.ptrdiff_t(p), C.int(ad))
}
