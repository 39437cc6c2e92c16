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
// values took 6.9 ms against 7.3 of a 290 ms step. Two of the three
// divisions are by the step's bias corrections, the same for every value,
// and the vector loops now make those from a reciprocal and two fused
// corrections (below), which give the same quotient: on an Intel Xeon
// (AVX-512) BenchmarkAdamW took 14–17% less time and the update's share
// of a (SR)3 AR d_model 256 training step fell from 3.6% to 2.9%.
//
// Bits. Every loop is adamwGo's float64 arithmetic in the same order on
// each lane, with no fused multiply-add in it (the file turns contraction
// off and the vector loops spell out each multiply and add; the fused
// operations of the bias corrections compute an exact remainder, below);
// division, square root and the conversions are correctly rounded, so
// every loop agrees with the Go definition to the bit
// (TestAdamWKernelMatchesGo checks each loop this CPU has). The loops are
// written with intrinsics because GCC vectorises sqrt only under
// -fno-math-errno, which cgo does not accept. They need FMA as well as
// AVX2 or AVX-512F; a CPU without it runs one value at a time.

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

// The two bias corrections, m/c1 and v/c2, divide by the same c for every
// value of a step. A division is the costliest operation here (vdivpd
// takes 16 cycles for eight doubles on Intel's cores, the sqrt about as
// much), so the vector loops compute those two quotients from y = RN(1/c),
// made once per call by a correctly rounded division, with one product
// and two fused corrections:
//
//	q0 = RN(a·y);  q1 = RN(q0 + RN(a − c·q0)·y);  q = RN(q1 + (a − c·q1)·y)
//
// q1 is within half an ulp of a/c plus a few parts in 2^-100 of it, so
// within one ulp; then a − c·q1 is exact in a fused multiply-add, and by
// Markstein's theorem (Markstein 1990; Muller et al., Handbook of
// Floating-Point Arithmetic, §4.7) q is RN(a/c), the quotient the
// division gives. The theorem needs no overflow and no subnormal on the
// way, so a lane takes the division instead unless 2^-800 ≤ |a| ≤ 2^800
// (and the call takes it for every lane unless 2^-30 ≤ c ≤ 2^30); a zero
// a gives a itself, the sign kept, as ±0/c does for c > 0. A NaN or an
// infinity fails the range test and is divided. TestAdamWKernelMatchesGo
// and TestAdamWQuotientsExact hold every loop to the division.

// wm_quot512 is a/c for eight lanes, given y = RN(1/c): the corrections
// above in the lanes where lo ≤ |a| ≤ hi (lo > hi turns them all off), a
// itself where a = ±0 and zero is all ones, and a division in the rest.
__attribute__((target("avx512f"))) static inline __m512d wm_quot512(__m512d a, __m512d c, __m512d y, __m512d lo,
                                                                      __m512d hi, __mmask8 zero) {
	__m512d q = _mm512_mul_pd(a, y);
	q = _mm512_fmadd_pd(_mm512_fnmadd_pd(q, c, a), y, q);
	q = _mm512_fmadd_pd(_mm512_fnmadd_pd(q, c, a), y, q);
	__m512d mag = _mm512_abs_pd(a);
	__mmask8 ok = _mm512_cmp_pd_mask(mag, lo, _CMP_GE_OQ) & _mm512_cmp_pd_mask(mag, hi, _CMP_LE_OQ);
	__mmask8 z = _mm512_cmp_pd_mask(a, _mm512_setzero_pd(), _CMP_EQ_OQ) & zero;
	q = _mm512_mask_mov_pd(q, z, a);
	ok |= z;
	if (ok != 0xff) q = _mm512_mask_div_pd(q, (__mmask8)~ok, a, c);
	return q;
}

// wm_quot256 is wm_quot512 on four lanes with AVX2 and FMA: zero is all
// ones or all zeros in every lane.
__attribute__((target("avx2,fma"))) static inline __m256d wm_quot256(__m256d a, __m256d c, __m256d y, __m256d lo,
                                                                       __m256d hi, __m256d zero) {
	__m256d q = _mm256_mul_pd(a, y);
	q = _mm256_fmadd_pd(_mm256_fnmadd_pd(q, c, a), y, q);
	q = _mm256_fmadd_pd(_mm256_fnmadd_pd(q, c, a), y, q);
	__m256d mag = _mm256_andnot_pd(_mm256_set1_pd(-0.0), a);
	__m256d ok = _mm256_and_pd(_mm256_cmp_pd(mag, lo, _CMP_GE_OQ), _mm256_cmp_pd(mag, hi, _CMP_LE_OQ));
	__m256d z = _mm256_and_pd(_mm256_cmp_pd(a, _mm256_setzero_pd(), _CMP_EQ_OQ), zero);
	q = _mm256_blendv_pd(q, a, z);
	ok = _mm256_or_pd(ok, z);
	if (_mm256_movemask_pd(ok) != 0xf) q = _mm256_blendv_pd(_mm256_div_pd(a, c), q, ok);
	return q;
}

// wm_quot_safe reports whether the divisor c lets the corrections stand in
// for a division (see above).
static inline int wm_quot_safe(double c) { return c >= 0x1p-30 && c <= 0x1p30; }

// WM_QUOT_LO(safe) and WM_QUOT_HI bound the |a| that take the corrections.
#define WM_QUOT_LO(safe) ((safe) ? 0x1p-800 : INFINITY)
#define WM_QUOT_HI 0x1p800

// WM_ADAMW_LOOP defines NAME, wm_adamw_one on LANES lanes at a time: V is
// the double vector type, F its intrinsics' prefix and H the prefix of the
// float vector of LANES values (half as wide), QUOT the quotient by a
// constant above and ZERO(on) its zero argument; the last n mod LANES
// values go to REST. Written once, so that every width does the same
// operations.
#define WM_ADAMW_LOOP(NAME, ATTR, LANES, V, F, H, QUOT, ZERO, REST)                                      \
	ATTR static void NAME(float *w, const float *g, double *m, double *v, ptrdiff_t n, const double *s) { \
		const V scale = F##_set1_pd(s[0]), b1 = F##_set1_pd(s[1]), b2 = F##_set1_pd(s[2]);               \
		const V ob1 = F##_set1_pd(1 - s[1]), ob2 = F##_set1_pd(1 - s[2]);                                 \
		const V lr = F##_set1_pd(s[3]), lrd = F##_set1_pd(s[3] * s[4]);                                   \
		const V c1 = F##_set1_pd(s[5]), c2 = F##_set1_pd(s[6]), eps = F##_set1_pd(s[7]);                  \
		const V y1 = F##_set1_pd(1 / s[5]), y2 = F##_set1_pd(1 / s[6]);                                   \
		const int safe = wm_quot_safe(s[5]) && wm_quot_safe(s[6]);                                        \
		const V lo = F##_set1_pd(WM_QUOT_LO(safe)), hi = F##_set1_pd(WM_QUOT_HI);                         \
		ptrdiff_t j = 0;                                                                                  \
		for (; j + LANES <= n; j += LANES) {                                                              \
			V gj = F##_mul_pd(F##_cvtps_pd(H##_loadu_ps(g + j)), scale);                                  \
			V mj = F##_add_pd(F##_mul_pd(b1, F##_loadu_pd(m + j)), F##_mul_pd(ob1, gj));                  \
			V vj = F##_add_pd(F##_mul_pd(b2, F##_loadu_pd(v + j)), F##_mul_pd(F##_mul_pd(ob2, gj), gj));  \
			F##_storeu_pd(m + j, mj);                                                                     \
			F##_storeu_pd(v + j, vj);                                                                     \
			V wj = F##_cvtps_pd(H##_loadu_ps(w + j));                                                     \
			wj = F##_sub_pd(wj, F##_mul_pd(lrd, wj));                                                     \
			V den = F##_add_pd(F##_sqrt_pd(QUOT(vj, c2, y2, lo, hi, ZERO(safe))), eps);                   \
			V step = F##_div_pd(F##_mul_pd(lr, QUOT(mj, c1, y1, lo, hi, ZERO(safe))), den);               \
			H##_storeu_ps(w + j, F##_cvtpd_ps(F##_sub_pd(wj, step)));                                     \
		}                                                                                                 \
		REST(w + j, g + j, m + j, v + j, n - j, s);                                                       \
	}

#define WM_ZERO512(on) ((__mmask8)((on) ? 0xff : 0))
#define WM_ZERO256(on) _mm256_castsi256_pd(_mm256_set1_epi64x((on) ? -1 : 0))
WM_ADAMW_LOOP(wm_adamw_f32_avx2, __attribute__((target("avx2,fma"))), 4, __m256d, _mm256, _mm, wm_quot256, WM_ZERO256,
              wm_adamw_f32_any)
WM_ADAMW_LOOP(wm_adamw_f32_avx512, __attribute__((target("avx512f,avx2,fma"))), 8, __m512d, _mm512, _mm256,
              wm_quot512, WM_ZERO512, wm_adamw_f32_avx2)

// wm_quot_loop sets q[j] = a[j]/c as the AdamW loop of level (2 AVX-512,
// 1 AVX2) computes its bias corrections, and by division in the last n mod
// its lanes and at level 0; for the tests.
__attribute__((target("avx512f,avx2,fma"))) static void wm_quot_loop(int level, const double *a, double *q, ptrdiff_t n,
                                                                       double c) {
	const int safe = wm_quot_safe(c);
	ptrdiff_t j = 0;
	if (level == 2) {
		const __m512d cv = _mm512_set1_pd(c), y = _mm512_set1_pd(1 / c);
		const __m512d lo = _mm512_set1_pd(WM_QUOT_LO(safe)), hi = _mm512_set1_pd(WM_QUOT_HI);
		for (; j + 8 <= n; j += 8)
			_mm512_storeu_pd(q + j, wm_quot512(_mm512_loadu_pd(a + j), cv, y, lo, hi, WM_ZERO512(safe)));
	} else if (level == 1) {
		const __m256d cv = _mm256_set1_pd(c), y = _mm256_set1_pd(1 / c);
		const __m256d lo = _mm256_set1_pd(WM_QUOT_LO(safe)), hi = _mm256_set1_pd(WM_QUOT_HI);
		for (; j + 4 <= n; j += 4)
			_mm256_storeu_pd(q + j, wm_quot256(_mm256_loadu_pd(a + j), cv, y, lo, hi, WM_ZERO256(safe)));
	}
	for (; j < n; j++) q[j] = a[j] / c;
}

// wm_adamw_level is the widest loop this CPU runs: 2 AVX-512, 1 AVX2, 0
// none.
static int wm_adamw_level(void) {
	__builtin_cpu_init();
	if (!__builtin_cpu_supports("fma")) return 0;
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
static void wm_quot_loop(int level, const double *a, double *q, ptrdiff_t n, double c) {
	for (ptrdiff_t j = 0; j < n; j++) q[j] = a[j] / c;
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

// adamwQuotients sets q to a/c as the loop of adamwLevel computes the bias
// corrections m/c1 and v/c2 (see the file comment); for the tests.
func adamwQuotients(a, q []float64, c float64) {
	if len(a) == 0 {
		return
	}
	C.wm_quot_loop(C.int(adamwLevel), (*C.double)(unsafe.Pointer(&a[0])), (*C.double)(unsafe.Pointer(&q[0])),
		C.ptrdiff_t(len(a)), C.double(c))
}
