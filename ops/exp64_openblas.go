//go:build openblas

package ops

// With the openblas build tag (cgo), the float64 exponentials of the SSD
// scan's decays run in C, four lanes at a time under AVX2 (Go's math.Exp
// took 7 ns a value inside a (SM)4 step, 1–1.5% of it). The argument is
// split as x = n·ln2 + r with |r| ≤ ln2/2 (n rounded to nearest, ln2 in
// fdlibm's two parts, so n·ln2_hi is exact), e^r is its Taylor polynomial
// of degree 13 (the first term left out is below 6·10⁻¹⁸ of e^r, under a
// twentieth of an ulp), and 2^n goes into the exponent field. Within the
// rounding of the polynomial's fused multiply-adds, so within an ulp or two
// of math.Exp (TestExpInPlaceMatchesMathExp), not to its bits. Values
// outside [−708, 708], where 2^n would leave the normal range, and NaN go
// to the C library's exp one at a time, as do the portable variant's.

/*
#cgo CFLAGS: -O3
#cgo LDFLAGS: -lm
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include "wm_avx2_switch.h"

static void wm_exp_f64_any(double *x, ptrdiff_t n) {
	for (ptrdiff_t i = 0; i < n; i++) x[i] = exp(x[i]);
}

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#include <immintrin.h>

__attribute__((target("avx2,fma"))) static inline __m256d wm_exp4d(__m256d x) {
	const __m256d n = _mm256_round_pd(_mm256_mul_pd(x, _mm256_set1_pd(1.4426950408889634074)),
	                                  _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
	__m256d r = _mm256_fnmadd_pd(n, _mm256_set1_pd(6.93147180369123816490e-01), x);
	r = _mm256_fnmadd_pd(n, _mm256_set1_pd(1.90821492927058770002e-10), r);
	__m256d p = _mm256_set1_pd(1.0 / 6227020800.0); // 1/13!
	p = _mm256_fmadd_pd(p, r, _mm256_set1_pd(1.0 / 479001600.0));
	p = _mm256_fmadd_pd(p, r, _mm256_set1_pd(1.0 / 39916800.0));
	p = _mm256_fmadd_pd(p, r, _mm256_set1_pd(1.0 / 3628800.0));
	p = _mm256_fmadd_pd(p, r, _mm256_set1_pd(1.0 / 362880.0));
	p = _mm256_fmadd_pd(p, r, _mm256_set1_pd(1.0 / 40320.0));
	p = _mm256_fmadd_pd(p, r, _mm256_set1_pd(1.0 / 5040.0));
	p = _mm256_fmadd_pd(p, r, _mm256_set1_pd(1.0 / 720.0));
	p = _mm256_fmadd_pd(p, r, _mm256_set1_pd(1.0 / 120.0));
	p = _mm256_fmadd_pd(p, r, _mm256_set1_pd(1.0 / 24.0));
	p = _mm256_fmadd_pd(p, r, _mm256_set1_pd(1.0 / 6.0));
	p = _mm256_fmadd_pd(p, r, _mm256_set1_pd(0.5));
	p = _mm256_fmadd_pd(p, r, _mm256_set1_pd(1.0));
	p = _mm256_fmadd_pd(p, r, _mm256_set1_pd(1.0));
	__m256i e = _mm256_cvtepi32_epi64(_mm256_cvtpd_epi32(n));
	e = _mm256_slli_epi64(_mm256_add_epi64(e, _mm256_set1_epi64x(1023)), 52);
	return _mm256_mul_pd(p, _mm256_castsi256_pd(e));
}

// wm_exp_f64_avx2 takes four values at a time where all four are in
// [−708, 708] (a NaN fails the test), else those four one at a time
// through exp; the last n mod 4 one at a time.
__attribute__((target("avx2,fma"))) static void wm_exp_f64_avx2(double *x, ptrdiff_t n) {
	const __m256d lo = _mm256_set1_pd(-708.0), hi = _mm256_set1_pd(708.0);
	ptrdiff_t i = 0;
	for (; i + 4 <= n; i += 4) {
		__m256d v = _mm256_loadu_pd(x + i);
		__m256d in = _mm256_and_pd(_mm256_cmp_pd(v, lo, _CMP_GE_OQ), _mm256_cmp_pd(v, hi, _CMP_LE_OQ));
		if (_mm256_movemask_pd(in) == 0xf) {
			_mm256_storeu_pd(x + i, wm_exp4d(v));
		} else {
			for (int l = 0; l < 4; l++) x[i + l] = exp(x[i + l]);
		}
	}
	for (; i < n; i++) x[i] = exp(x[i]);
}
#else
#define wm_exp_f64_avx2 wm_exp_f64_any
#endif

WM_AVX2_SWITCH(wm_e64, 1)
static void wm_exp_f64(double *x, ptrdiff_t n) {
	if (wm_e64_avx2) wm_exp_f64_avx2(x, n);
	else wm_exp_f64_any(x, n);
}
*/
import "C"

// exp64AVX2 selects the AVX2 variant of the float64 exponential (where the
// CPU has AVX2 and FMA) or the portable one, and says which is in use;
// setKernelLevel calls it.
func exp64AVX2(on bool) bool {
	return C.wm_e64_set_avx2(cbool(on)) != 0
}

// expInPlace sets x[i] = e^x[i] in float64, in C (see above). The SSD
// scan's decays take it (decayChains); the pure-Go build calls math.Exp.
func expInPlace(x []float64) {
	if len(x) > 0 {
		C.wm_exp_f64(f64p(x), C.ptrdiff_t(len(x)))
	}
}
