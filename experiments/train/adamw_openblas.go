//go:build openblas

package train

// With the openblas build tag (cgo), the float32 AdamW update runs in C:
// eight values at a time with AVX-512 where the CPU has it, four with
// AVX2, one at a time otherwise (adamwLevel picks the loop at start-up).
//
// Cost. Each value takes three divisions and a square root in float64. In
// Go that is about 20 cycles a value; the AVX2 loop took about 6
// (BenchmarkAdamW). On the Zen 5 those operations, not memory, still
// bounded the AVX2 loop, and the AVX-512 loop, which halves the
// instructions they take, ran BenchmarkAdamW (2.8M values) 36% faster on
// one core and 30% on two. In a step, the models whose parameters stay in
// cache gain: d_model 64 (0.2–0.8M values) trained 1.4–2.7% faster. At
// d_model 256 the 44 bytes a value come from memory: (SH)3 AH's 10.3M
// values took 6.9 ms against 7.3 of a 290 ms step.
//
// Bits. Every loop is adamwGo's float64 arithmetic in the same order on
// each lane, with no fused multiply-add (the file turns contraction off
// and the vector loops spell out each multiply and add); division, square
// root and the conversions are correctly rounded, so every loop agrees
// with the Go definition to the bit (TestAdamWKernelMatchesGo checks each
// loop this CPU has). The loops are written with intrinsics because GCC
// vectorises sqrt only under -fno-math-errno, which cgo does not accept.

/*
#cgo CFLAGS: -O2
#cgo LDFLAGS: -lm
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("fp-contract=off")
#endif
#include <math.h>
#include <stddef.h>

// wm_adamw_one is one value of adamwGo; s holds scale, β1, β2, lr, decay,
// c1, c2, ε.
static inline __attribute__((always_inline)) void wm_adamw_one(float *w, const float *g, double *m, double *v,
                                                               const double *s) {
	double gj = (double)*g * s[0];
	double mj = s[1] * *m + (1 - s[1]) * gj;
	double vj = s[2] * *v + (1 - s[2]) * gj * gj;
	*m = mj;
	*v = vj;
	double wj = (double)*w;
	wj -= s[3] * s[4] * wj;
	*w = (float)(wj - s[3] * (mj / s[5]) / (sqrt(vj / s[6]) + s[7]));
}

static void wm_adamw_f32_any(float *w, const float *g, double *m, double *v, ptrdiff_t n, const double *s) {
	for (ptrdiff_t j = 0; j < n; j++) wm_adamw_one(w + j, g + j, m + j, v + j, s);
}

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#include <immintrin.h>

__attribute__((target("avx2"))) static void wm_adamw_f32_avx2(float *w, const float *g, double *m, double *v,
                                                              ptrdiff_t n, const double *s) {
	const __m256d scale = _mm256_set1_pd(s[0]), b1 = _mm256_set1_pd(s[1]), b2 = _mm256_set1_pd(s[2]);
	const __m256d ob1 = _mm256_set1_pd(1 - s[1]), ob2 = _mm256_set1_pd(1 - s[2]);
	const __m256d lr = _mm256_set1_pd(s[3]), lrd = _mm256_set1_pd(s[3] * s[4]);
	const __m256d c1 = _mm256_set1_pd(s[5]), c2 = _mm256_set1_pd(s[6]), eps = _mm256_set1_pd(s[7]);
	ptrdiff_t j = 0;
	for (; j + 4 <= n; j += 4) {
		__m256d gj = _mm256_mul_pd(_mm256_cvtps_pd(_mm_loadu_ps(g + j)), scale);
		__m256d mj = _mm256_add_pd(_mm256_mul_pd(b1, _mm256_loadu_pd(m + j)), _mm256_mul_pd(ob1, gj));
		__m256d vj = _mm256_add_pd(_mm256_mul_pd(b2, _mm256_loadu_pd(v + j)),
		                           _mm256_mul_pd(_mm256_mul_pd(ob2, gj), gj));
		_mm256_storeu_pd(m + j, mj);
		_mm256_storeu_pd(v + j, vj);
		__m256d wj = _mm256_cvtps_pd(_mm_loadu_ps(w + j));
		wj = _mm256_sub_pd(wj, _mm256_mul_pd(lrd, wj));
		__m256d den = _mm256_add_pd(_mm256_sqrt_pd(_mm256_div_pd(vj, c2)), eps);
		__m256d step = _mm256_div_pd(_mm256_mul_pd(lr, _mm256_div_pd(mj, c1)), den);
		_mm_storeu_ps(w + j, _mm256_cvtpd_ps(_mm256_sub_pd(wj, step)));
	}
	wm_adamw_f32_any(w + j, g + j, m + j, v + j, n - j, s);
}

// wm_adamw_f32_avx512 is wm_adamw_f32_avx2 on eight lanes; the last
// n mod 8 values go to the AVX2 loop.
__attribute__((target("avx512f,avx2"))) static void wm_adamw_f32_avx512(float *w, const float *g, double *m,
                                                                       double *v, ptrdiff_t n, const double *s) {
	const __m512d scale = _mm512_set1_pd(s[0]), b1 = _mm512_set1_pd(s[1]), b2 = _mm512_set1_pd(s[2]);
	const __m512d ob1 = _mm512_set1_pd(1 - s[1]), ob2 = _mm512_set1_pd(1 - s[2]);
	const __m512d lr = _mm512_set1_pd(s[3]), lrd = _mm512_set1_pd(s[3] * s[4]);
	const __m512d c1 = _mm512_set1_pd(s[5]), c2 = _mm512_set1_pd(s[6]), eps = _mm512_set1_pd(s[7]);
	ptrdiff_t j = 0;
	for (; j + 8 <= n; j += 8) {
		__m512d gj = _mm512_mul_pd(_mm512_cvtps_pd(_mm256_loadu_ps(g + j)), scale);
		__m512d mj = _mm512_add_pd(_mm512_mul_pd(b1, _mm512_loadu_pd(m + j)), _mm512_mul_pd(ob1, gj));
		__m512d vj = _mm512_add_pd(_mm512_mul_pd(b2, _mm512_loadu_pd(v + j)),
		                           _mm512_mul_pd(_mm512_mul_pd(ob2, gj), gj));
		_mm512_storeu_pd(m + j, mj);
		_mm512_storeu_pd(v + j, vj);
		__m512d wj = _mm512_cvtps_pd(_mm256_loadu_ps(w + j));
		wj = _mm512_sub_pd(wj, _mm512_mul_pd(lrd, wj));
		__m512d den = _mm512_add_pd(_mm512_sqrt_pd(_mm512_div_pd(vj, c2)), eps);
		__m512d step = _mm512_div_pd(_mm512_mul_pd(lr, _mm512_div_pd(mj, c1)), den);
		_mm256_storeu_ps(w + j, _mm512_cvtpd_ps(_mm512_sub_pd(wj, step)));
	}
	wm_adamw_f32_avx2(w + j, g + j, m + j, v + j, n - j, s);
}

// wm_adamw_level is the widest loop this CPU runs: 2 AVX-512, 1 AVX2, 0
// none.
static int wm_adamw_level(void) {
	__builtin_cpu_init();
	if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx2")) return 2;
	return __builtin_cpu_supports("avx2") ? 1 : 0;
}
#else
static void wm_adamw_f32_avx2(float *w, const float *g, double *m, double *v, ptrdiff_t n, const double *s) {
	wm_adamw_f32_any(w, g, m, v, n, s);
}
static void wm_adamw_f32_avx512(float *w, const float *g, double *m, double *v, ptrdiff_t n, const double *s) {
	wm_adamw_f32_any(w, g, m, v, n, s);
}
static int wm_adamw_level(void) { return 0; }
#endif
*/
import "C"

import "unsafe"

// adamwLevel is the widest loop of the kernel this CPU runs: 2 for
// AVX-512 (eight values at a time), 1 for AVX2 (four), 0 for one at a
// time. Tests lower it to hold each loop to the definition.
var adamwLevel = int(C.wm_adamw_level())

// adamwAVX2 says whether this CPU has AVX2 (the combine loops' switch).
var adamwAVX2 = adamwLevel >= 1

// adamw32 is adamwGo on float32 in C (see the file comment).
func adamw32(w, g []float32, m, v []float64, s adamwStep) {
	if len(w) == 0 {
		return
	}
	g, m, v = g[:len(w)], m[:len(w)], v[:len(w)]
	hyper := [8]float64{s.scale, s.beta1, s.beta2, s.lr, s.decay, s.c1, s.c2, s.eps}
	wp, gp := (*C.float)(unsafe.Pointer(&w[0])), (*C.float)(unsafe.Pointer(&g[0]))
	mp, vp := (*C.double)(unsafe.Pointer(&m[0])), (*C.double)(unsafe.Pointer(&v[0]))
	hp := (*C.double)(unsafe.Pointer(&hyper[0]))
	switch adamwLevel {
	case 2:
		C.wm_adamw_f32_avx512(wp, gp, mp, vp, C.ptrdiff_t(len(w)), hp)
	case 1:
		C.wm_adamw_f32_avx2(wp, gp, mp, vp, C.ptrdiff_t(len(w)), hp)
	default:
		C.wm_adamw_f32_any(wp, gp, mp, vp, C.ptrdiff_t(len(w)), hp)
	}
}
