// The float64 dot product of float32 rows in eight lanes, dot8's order
// (ssd_backrows.go), for the package's cgo files (cgo compiles each file's
// preamble on its own, so helpers they share live here). Include it after
// the file's fp-contract pragma: the portable form must not fuse.
#ifndef WM_DOT8_H
#define WM_DOT8_H
#include <stddef.h>

// wm_fold8 adds eight lanes as ((l0+l4)+(l2+l6)) + ((l1+l5)+(l3+l7)), the
// order in which an eight-lane vector is folded in half twice.
static inline double wm_fold8(const double *l) {
	return ((l[0] + l[4]) + (l[2] + l[6])) + ((l[1] + l[5]) + (l[3] + l[7]));
}

// wm_dot8_any is dot8: lane q mod 8 takes a[q]·b[q] in order of q, the last
// n mod 8 products go to lanes 0, 1, …, and the lanes are folded.
static inline double wm_dot8_any(const float *a, const float *b, ptrdiff_t n) {
	double l[8] = {0, 0, 0, 0, 0, 0, 0, 0};
	ptrdiff_t q = 0;
	for (; q + 8 <= n; q += 8)
		for (int k = 0; k < 8; k++) l[k] += (double)a[q + k] * (double)b[q + k];
	for (int k = 0; q + k < n; k++) l[k] += (double)a[q + k] * (double)b[q + k];
	return wm_fold8(l);
}

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#include <immintrin.h>

// wm_dot8_step_avx2 adds a[q]·b[q] for q < 8 into lane q (lanes 0–3 in
// *lo, 4–7 in *hi): one step of wm_dot8_avx2's loop, for kernels that run
// several rows' steps side by side. A float32 product is exact in double,
// so the fused multiply-add rounds only the sum, as a multiply and an add
// would.
__attribute__((target("avx2,fma"))) static inline __attribute__((always_inline)) void
wm_dot8_step_avx2(const float *a, const float *b, __m256d *lo, __m256d *hi) {
	__m256 av = _mm256_loadu_ps(a), bv = _mm256_loadu_ps(b);
	*lo = _mm256_fmadd_pd(_mm256_cvtps_pd(_mm256_castps256_ps128(av)), _mm256_cvtps_pd(_mm256_castps256_ps128(bv)), *lo);
	*hi = _mm256_fmadd_pd(_mm256_cvtps_pd(_mm256_extractf128_ps(av, 1)), _mm256_cvtps_pd(_mm256_extractf128_ps(bv, 1)), *hi);
}

// wm_dot8_avx2 adds a[q]·b[q], for q below n rounded down to a multiple of
// eight, into lane q mod 8 in order of q (lanes 0–3 in *lo, 4–7 in *hi) and
// returns how many values it took.
__attribute__((target("avx2,fma"))) static inline ptrdiff_t wm_dot8_avx2(const float *a, const float *b, ptrdiff_t n,
                                                                          __m256d *lo, __m256d *hi) {
	__m256d l = *lo, h = *hi;
	ptrdiff_t q = 0;
	for (; q + 8 <= n; q += 8) wm_dot8_step_avx2(a + q, b + q, &l, &h);
	*lo = l;
	*hi = h;
	return q;
}

// wm_dot8_whole_avx2 is wm_dot8_any with its eight-lane loop in AVX2: the
// same sums in the same order. When n is a multiple of eight (the SSD's
// head widths, the MoE's d_model) the lanes are folded in registers, in
// wm_fold8's order: lo + hi gives (l0+l4, l1+l5, l2+l6, l3+l7), adding its
// halves gives ((l0+l4)+(l2+l6), (l1+l5)+(l3+l7)), and the two are added.
// That skips a store of the lanes and eight loads of them back.
__attribute__((target("avx2,fma"))) static inline double wm_dot8_whole_avx2(const float *a, const float *b,
                                                                             ptrdiff_t n) {
	__m256d lo = _mm256_setzero_pd(), hi = _mm256_setzero_pd();
	ptrdiff_t q = wm_dot8_avx2(a, b, n, &lo, &hi);
	if (q == n) {
		const __m256d s = _mm256_add_pd(lo, hi);
		const __m128d t = _mm_add_pd(_mm256_castpd256_pd128(s), _mm256_extractf128_pd(s, 1));
		return _mm_cvtsd_f64(t) + _mm_cvtsd_f64(_mm_unpackhi_pd(t, t));
	}
	double l[8];
	_mm256_storeu_pd(l, lo);
	_mm256_storeu_pd(l + 4, hi);
	for (int k = 0; q + k < n; k++) l[k] += (double)a[q + k] * (double)b[q + k];
	return wm_fold8(l);
}

// wm_fold8_avx512 adds the eight lanes of l in wm_fold8's order: its
// halves added give (l0+l4, l1+l5, l2+l6, l3+l7), as lo + hi does in
// wm_dot8_whole_avx2, and those are folded as there.
__attribute__((target("avx512f,avx512dq,avx2"))) static inline double wm_fold8_avx512(__m512d l) {
	const __m256d h = _mm256_add_pd(_mm512_castpd512_pd256(l), _mm512_extractf64x4_pd(l, 1));
	const __m128d t = _mm_add_pd(_mm256_castpd256_pd128(h), _mm256_extractf128_pd(h, 1));
	return _mm_cvtsd_f64(t) + _mm_cvtsd_f64(_mm_unpackhi_pd(t, t));
}
#endif
#endif
