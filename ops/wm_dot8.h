// The float64 dot product of float32 rows in eight lanes, for the AVX2
// kernels of the package's cgo files (cgo compiles each file's preamble on
// its own, so a helper they share lives here). Included inside their
// x86-64 GCC sections.
#ifndef WM_DOT8_H
#define WM_DOT8_H
#include <immintrin.h>
#include <stddef.h>

// wm_dot8_avx2 adds a[q]·b[q], for q below n rounded down to a multiple of
// eight, into lane q mod 8 in order of q (lanes 0–3 in *lo, 4–7 in *hi) and
// returns how many values it took. A float32 product is exact in double, so
// the fused multiply-add rounds only the sum, as a multiply and an add would.
__attribute__((target("avx2,fma"))) static inline ptrdiff_t wm_dot8_avx2(const float *a, const float *b, ptrdiff_t n,
                                                                          __m256d *lo, __m256d *hi) {
	__m256d l = *lo, h = *hi;
	ptrdiff_t q = 0;
	for (; q + 8 <= n; q += 8) {
		__m256 av = _mm256_loadu_ps(a + q), bv = _mm256_loadu_ps(b + q);
		l = _mm256_fmadd_pd(_mm256_cvtps_pd(_mm256_castps256_ps128(av)), _mm256_cvtps_pd(_mm256_castps256_ps128(bv)), l);
		h = _mm256_fmadd_pd(_mm256_cvtps_pd(_mm256_extractf128_ps(av, 1)), _mm256_cvtps_pd(_mm256_extractf128_ps(bv, 1)), h);
	}
	*lo = l;
	*hi = h;
	return q;
}
#endif
