//go:build openblas

package train

// With the openblas build tag (cgo), a float32 gradient's ‖g‖² for the
// clipping norm (gradNorm) runs in C in sumSquares8's order: eight float64
// lanes, in one AVX-512 register or two AVX2 ones where the CPU has them
// (adamwLevel, the package's choice of loop), one value at a time
// otherwise. Each lane adds its squares in order of q, the last n mod 8
// squares go to lanes 0, 1, … and the lanes are folded in sumSquares8's
// order, so every loop agrees with the Go definition to the bit
// (TestSumSquaresKernelsMatchGo). The squares are a multiply and an add,
// not fused (the file turns contraction off); a float32 square is exact in
// float64, so a fused one would round the same. One vector of lanes makes
// one chain of additions, an addition's latency for eight values: Go's
// eight scalar chains took about 4 times as long (BenchmarkGradNorm).

/*
#cgo CFLAGS: -O2
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("fp-contract=off")
#endif
#include <stddef.h>

// wm_sumsq8_rest adds the squares of x[0..n), n below 8, to lanes 0, 1, …
// of l and folds the lanes as ((l0+l4)+(l2+l6)) + ((l1+l5)+(l3+l7)).
static double wm_sumsq8_rest(double *l, const float *x, ptrdiff_t n) {
	for (ptrdiff_t k = 0; k < n; k++) l[k] += (double)x[k] * (double)x[k];
	return ((l[0] + l[4]) + (l[2] + l[6])) + ((l[1] + l[5]) + (l[3] + l[7]));
}

// wm_sumsq8_any is sumSquares8 on float32, one value at a time.
static double wm_sumsq8_any(const float *x, ptrdiff_t n) {
	double l[8] = {0, 0, 0, 0, 0, 0, 0, 0};
	ptrdiff_t q = 0;
	for (; q + 8 <= n; q += 8)
		for (int k = 0; k < 8; k++) l[k] += (double)x[q + k] * (double)x[q + k];
	return wm_sumsq8_rest(l, x + q, n - q);
}

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#include <immintrin.h>

// wm_sumsq8_avx2: lanes 0–3 in lo, 4–7 in hi.
__attribute__((target("avx2"))) static double wm_sumsq8_avx2(const float *x, ptrdiff_t n) {
	__m256d lo = _mm256_setzero_pd(), hi = _mm256_setzero_pd();
	ptrdiff_t q = 0;
	for (; q + 8 <= n; q += 8) {
		const __m256 v = _mm256_loadu_ps(x + q);
		const __m256d a = _mm256_cvtps_pd(_mm256_castps256_ps128(v)), b = _mm256_cvtps_pd(_mm256_extractf128_ps(v, 1));
		lo = _mm256_add_pd(lo, _mm256_mul_pd(a, a));
		hi = _mm256_add_pd(hi, _mm256_mul_pd(b, b));
	}
	double l[8];
	_mm256_storeu_pd(l, lo);
	_mm256_storeu_pd(l + 4, hi);
	return wm_sumsq8_rest(l, x + q, n - q);
}

// wm_sumsq8_avx512: the eight lanes in one register.
__attribute__((target("avx512f,avx2"))) static double wm_sumsq8_avx512(const float *x, ptrdiff_t n) {
	__m512d acc = _mm512_setzero_pd();
	ptrdiff_t q = 0;
	for (; q + 8 <= n; q += 8) {
		const __m512d a = _mm512_cvtps_pd(_mm256_loadu_ps(x + q));
		acc = _mm512_add_pd(acc, _mm512_mul_pd(a, a));
	}
	double l[8];
	_mm512_storeu_pd(l, acc);
	return wm_sumsq8_rest(l, x + q, n - q);
}
#else
static double wm_sumsq8_avx2(const float *x, ptrdiff_t n) { return wm_sumsq8_any(x, n); }
static double wm_sumsq8_avx512(const float *x, ptrdiff_t n) { return wm_sumsq8_any(x, n); }
#endif

static double wm_sumsq8(const float *x, ptrdiff_t n, int level) {
	switch (level) {
	case 2:
		return wm_sumsq8_avx512(x, n);
	case 1:
		return wm_sumsq8_avx2(x, n);
	}
	return wm_sumsq8_any(x, n);
}
*/
import "C"

// sumSquares32 is sumSquares8 on float32 in C, on the loop adamwLevel
// picks (see the file comment).
func sumSquares32(x []float32) float64 {
	if len(x) == 0 {
		return 0
	}
	return float64(C.wm_sumsq8(f32ptr(x), C.ptrdiff_t(len(x)), C.int(adamwLevel)))
}
