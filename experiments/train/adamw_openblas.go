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

// WM_ADAMW_LOOP defines NAME, wm_adamw_one on LANES lanes at a time: V is
// the double vector type, F its intrinsics' prefix and H the prefix of the
// float vector of LANES values (half as wide); the last n mod LANES values
// go to REST. Written once, so that every width does the same operations.
#define WM_ADAMW_LOOP(NAME, ATTR, LANES, V, F, H, REST)                                                  \
	ATTR static void NAME(float *w, const float *g, double *m, double *v, ptrdiff_t n, const double *s) { \
		const V scale = F##_set1_pd(s[0]), b1 = F##_set1_pd(s[1]), b2 = F##_set1_pd(s[2]);               \
		const V ob1 = F##_set1_pd(1 - s[1]), ob2 = F##_set1_pd(1 - s[2]);                                 \
		const V lr = F##_set1_pd(s[3]), lrd = F##_set1_pd(s[3] * s[4]);                                   \
		const V c1 = F##_set1_pd(s[5]), c2 = F##_set1_pd(s[6]), eps = F##_set1_pd(s[7]);                  \
		ptrdiff_t j = 0;                                                                                  \
		for (; j + LANES <= n; j += LANES) {                                                              \
			V gj = F##_mul_pd(F##_cvtps_pd(H##_loadu_ps(g + j)), scale);                                  \
			V mj = F##_add_pd(F##_mul_pd(b1, F##_loadu_pd(m + j)), F##_mul_pd(ob1, gj));                  \
			V vj = F##_add_pd(F##_mul_pd(b2, F##_loadu_pd(v + j)), F##_mul_pd(F##_mul_pd(ob2, gj), gj));  \
			F##_storeu_pd(m + j, mj);                                                                     \
			F##_storeu_pd(v + j, vj);                                                                     \
			V wj = F##_cvtps_pd(H##_loadu_ps(w + j));                                                     \
			wj = F##_sub_pd(wj, F##_mul_pd(lrd, wj));                                                     \
			V den = F##_add_pd(F##_sqrt_pd(F##_div_pd(vj, c2)), eps);                                     \
			V step = F##_div_pd(F##_mul_pd(lr, F##_div_pd(mj, c1)), den);                                 \
			H##_storeu_ps(w + j, F##_cvtpd_ps(F##_sub_pd(wj, step)));                                     \
		}                                                                                                 \
		REST(w + j, g + j, m + j, v + j, n - j, s);                                                       \
	}

WM_ADAMW_LOOP(wm_adamw_f32_avx2, __attribute__((target("avx2"))), 4, __m256d, _mm256, _mm, wm_adamw_f32_any)
WM_ADAMW_LOOP(wm_adamw_f32_avx512, __attribute__((target("avx512f,avx2"))), 8, __m512d, _mm512, _mm256,
              wm_adamw_f32_avx2)

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
