//go:build openblas

package ops

// With the openblas build tag (cgo), RMSNorm's float32 rows run in C: the
// arithmetic of rmsnormForwardRows and rmsnormBackwardRows in float64, in
// the same order (dot's four interleaved partial sums are the four lanes of
// one AVX2 register; each lane's multiplies and adds are done one by one,
// with no fused multiply-add), so C and Go agree to the bit
// (TestRMSNormRowsMatchGo). In Go the backward cost about 9 cycles per
// element, the conversions and the float64 dw updates one value at a time;
// it was the largest Go item of a d_model-256 step (3%).

/*
// cgo joins the CFLAGS of all the package's files, the last -O winning:
// this must stay -O3 like activations_openblas.go's, or GCC stops
// vectorising the activation loops (a -O2 here made the gated SiLU scalar,
// a sixth of a d_model-64 step).
#cgo CFLAGS: -O3
#cgo LDFLAGS: -lm
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("fp-contract=off")
#endif
#include <math.h>
#include <stddef.h>
#include "wm_avx2_switch.h"

// wm_rms_inv is invRMS: 1/sqrt(Σx²/d + eps) with Σ in four partial sums
// (lane l takes x[j+l]; the tail goes to lane 0), added (s0+s1)+(s2+s3).
static double wm_rms_inv_any(const float *x, ptrdiff_t d, double eps) {
	double s[4] = {0, 0, 0, 0};
	ptrdiff_t j = 0;
	for (; j + 4 <= d; j += 4)
		for (int l = 0; l < 4; l++) s[l] += (double)x[j + l] * (double)x[j + l];
	for (; j < d; j++) s[0] += (double)x[j] * (double)x[j];
	return 1 / sqrt(((s[0] + s[1]) + (s[2] + s[3])) / (double)d + eps);
}

static void wm_rmsnorm_fwd_any(float *y, const float *x, const float *w, ptrdiff_t rows, ptrdiff_t d, double eps,
                               double *invs) {
	for (ptrdiff_t r = 0; r < rows; r++, x += d, y += d) {
		double inv = wm_rms_inv_any(x, d, eps);
		if (invs != NULL) invs[r] = inv;
		for (ptrdiff_t j = 0; j < d; j++) y[j] = (float)((double)x[j] * inv) * w[j];
	}
}

static void wm_rmsnorm_bwd_any(float *dx, const float *res, const float *g, const float *x, const float *w, double *dw,
                               ptrdiff_t rows, ptrdiff_t d, double eps, const double *invs) {
	for (ptrdiff_t r = 0; r < rows; r++, x += d, g += d) {
		double inv = invs != NULL ? invs[r] : wm_rms_inv_any(x, d, eps);
		double s[4] = {0, 0, 0, 0};
		ptrdiff_t j = 0;
		for (; j + 4 <= d; j += 4)
			for (int l = 0; l < 4; l++) {
				double gj = (double)g[j + l], xj = (double)x[j + l];
				s[l] += gj * (double)w[j + l] * xj;
				dw[j + l] += gj * xj * inv;
			}
		for (; j < d; j++) {
			double gj = (double)g[j], xj = (double)x[j];
			s[0] += gj * (double)w[j] * xj;
			dw[j] += gj * xj * inv;
		}
		double c = inv * inv * inv * ((s[0] + s[1]) + (s[2] + s[3])) / (double)d;
		if (dx != NULL) {
			for (j = 0; j < d; j++) dx[j] = (float)(inv * (double)g[j] * (double)w[j] - (double)x[j] * c);
			if (res != NULL) {
				for (j = 0; j < d; j++) dx[j] = res[j] + dx[j];
				res += d;
			}
			dx += d;
		}
	}
}

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#include <immintrin.h>

__attribute__((target("avx2"))) static double wm_rms_inv_avx2(const float *x, ptrdiff_t d, double eps) {
	__m256d acc = _mm256_setzero_pd();
	ptrdiff_t j = 0;
	for (; j + 4 <= d; j += 4) {
		__m256d v = _mm256_cvtps_pd(_mm_loadu_ps(x + j));
		acc = _mm256_add_pd(acc, _mm256_mul_pd(v, v));
	}
	double s[4];
	_mm256_storeu_pd(s, acc);
	for (; j < d; j++) s[0] += (double)x[j] * (double)x[j];
	return 1 / sqrt(((s[0] + s[1]) + (s[2] + s[3])) / (double)d + eps);
}

// wm_rms_inv4_avx2 is wm_rms_inv_avx2 of the four rows x, x+d, x+2d and
// x+3d, computed side by side: each row's four partial sums are a chain of
// dependent adds (four cycles each), so one row at a time waits on that
// chain; four rows keep four chains in flight. Each row's arithmetic and
// its order are those of wm_rms_inv_avx2.
__attribute__((target("avx2"))) static void wm_rms_inv4_avx2(double inv[4], const float *x, ptrdiff_t d, double eps) {
	__m256d acc[4] = {_mm256_setzero_pd(), _mm256_setzero_pd(), _mm256_setzero_pd(), _mm256_setzero_pd()};
	ptrdiff_t j = 0;
	for (; j + 4 <= d; j += 4)
		for (int r = 0; r < 4; r++) {
			__m256d v = _mm256_cvtps_pd(_mm_loadu_ps(x + r * d + j));
			acc[r] = _mm256_add_pd(acc[r], _mm256_mul_pd(v, v));
		}
	if (j == d) {
		// No tail: the four rows' (s0+s1)+(s2+s3), the division by d, the
		// eps, the square root and the reciprocal as four-wide vectors. These
		// are the scalar epilogue's operations, each correctly rounded, so
		// the bits are the same; one row at a time, the epilogue's chain of
		// divisions and a square root was half of this function's time at
		// d_model 64.
		__m256d h01 = _mm256_hadd_pd(acc[0], acc[1]); // r0: s0+s1, r1: s0+s1, r0: s2+s3, r1: s2+s3
		__m256d h23 = _mm256_hadd_pd(acc[2], acc[3]);
		__m256d lo = _mm256_permute2f128_pd(h01, h23, 0x20); // s0+s1 of rows 0..3
		__m256d hi = _mm256_permute2f128_pd(h01, h23, 0x31); // s2+s3 of rows 0..3
		__m256d ms = _mm256_add_pd(_mm256_div_pd(_mm256_add_pd(lo, hi), _mm256_set1_pd((double)d)), _mm256_set1_pd(eps));
		_mm256_storeu_pd(inv, _mm256_div_pd(_mm256_set1_pd(1), _mm256_sqrt_pd(ms)));
		return;
	}
	for (int r = 0; r < 4; r++) {
		const float *xr = x + r * d;
		double s[4];
		_mm256_storeu_pd(s, acc[r]);
		for (ptrdiff_t k = j; k < d; k++) s[0] += (double)xr[k] * (double)xr[k];
		inv[r] = 1 / sqrt(((s[0] + s[1]) + (s[2] + s[3])) / (double)d + eps);
	}
}

// wm_rmsnorm_fwd_row_avx2 scales one row by its inv and w.
__attribute__((target("avx2"))) static void wm_rmsnorm_fwd_row_avx2(float *y, const float *x, const float *w,
                                                                    ptrdiff_t d, double inv) {
	__m256d vi = _mm256_set1_pd(inv);
	ptrdiff_t j = 0;
	for (; j + 4 <= d; j += 4) {
		__m128 xn = _mm256_cvtpd_ps(_mm256_mul_pd(_mm256_cvtps_pd(_mm_loadu_ps(x + j)), vi));
		_mm_storeu_ps(y + j, _mm_mul_ps(xn, _mm_loadu_ps(w + j)));
	}
	for (; j < d; j++) y[j] = (float)((double)x[j] * inv) * w[j];
}

// wm_rmsnorm_fwd_avx2 runs the rows four at a time (wm_rms_inv4_avx2), the
// last rows% 4 one at a time.
__attribute__((target("avx2"))) static void wm_rmsnorm_fwd_avx2(float *y, const float *x, const float *w,
                                                                ptrdiff_t rows, ptrdiff_t d, double eps,
                                                                double *invs) {
	ptrdiff_t r = 0;
	for (; r + 4 <= rows; r += 4, x += 4 * d, y += 4 * d) {
		double inv[4];
		wm_rms_inv4_avx2(inv, x, d, eps);
		for (int k = 0; k < 4; k++) {
			if (invs != NULL) invs[r + k] = inv[k];
			wm_rmsnorm_fwd_row_avx2(y + k * d, x + k * d, w, d, inv[k]);
		}
	}
	for (; r < rows; r++, x += d, y += d) {
		double inv = wm_rms_inv_avx2(x, d, eps);
		if (invs != NULL) invs[r] = inv;
		wm_rmsnorm_fwd_row_avx2(y, x, w, d, inv);
	}
}

// wm_rmsnorm_dx_row_avx2 is one row of dx = inv·g·w − x·c, rounded to
// float, plus res (a float add) when res is not NULL.
__attribute__((target("avx2"))) static void wm_rmsnorm_dx_row_avx2(float *dx, const float *res, const float *g,
                                                                   const float *x, const float *w, ptrdiff_t d,
                                                                   double inv, double c) {
	__m256d vi = _mm256_set1_pd(inv), vc = _mm256_set1_pd(c);
	ptrdiff_t j = 0;
	for (; j + 4 <= d; j += 4) {
		__m256d gw = _mm256_mul_pd(_mm256_mul_pd(vi, _mm256_cvtps_pd(_mm_loadu_ps(g + j))),
		                           _mm256_cvtps_pd(_mm_loadu_ps(w + j)));
		__m256d xc = _mm256_mul_pd(_mm256_cvtps_pd(_mm_loadu_ps(x + j)), vc);
		__m128 v = _mm256_cvtpd_ps(_mm256_sub_pd(gw, xc));
		if (res != NULL) v = _mm_add_ps(_mm_loadu_ps(res + j), v);
		_mm_storeu_ps(dx + j, v);
	}
	for (; j < d; j++) {
		float v = (float)(inv * (double)g[j] * (double)w[j] - (double)x[j] * c);
		dx[j] = res != NULL ? res[j] + v : v;
	}
}

// wm_rmsnorm_bwd1_avx2 is the backward of one row: dw += g·x·inv, and dx
// (when not NULL) from c = inv³·Σ g·w·x / d.
__attribute__((target("avx2"))) static void wm_rmsnorm_bwd1_avx2(float *dx, const float *res, const float *g,
                                                                 const float *x, const float *w, double *dw,
                                                                 ptrdiff_t d, double eps, const double *inv1) {
	double inv = inv1 != NULL ? *inv1 : wm_rms_inv_avx2(x, d, eps);
	__m256d vi = _mm256_set1_pd(inv), acc = _mm256_setzero_pd();
	ptrdiff_t j = 0;
	for (; j + 4 <= d; j += 4) {
		__m256d gj = _mm256_cvtps_pd(_mm_loadu_ps(g + j)), xj = _mm256_cvtps_pd(_mm_loadu_ps(x + j));
		__m256d wj = _mm256_cvtps_pd(_mm_loadu_ps(w + j));
		acc = _mm256_add_pd(acc, _mm256_mul_pd(_mm256_mul_pd(gj, wj), xj));
		_mm256_storeu_pd(dw + j, _mm256_add_pd(_mm256_loadu_pd(dw + j), _mm256_mul_pd(_mm256_mul_pd(gj, xj), vi)));
	}
	double s[4];
	_mm256_storeu_pd(s, acc);
	for (; j < d; j++) {
		double gj = (double)g[j], xj = (double)x[j];
		s[0] += gj * (double)w[j] * xj;
		dw[j] += gj * xj * inv;
	}
	double c = inv * inv * inv * ((s[0] + s[1]) + (s[2] + s[3])) / (double)d;
	if (dx != NULL) wm_rmsnorm_dx_row_avx2(dx, res, g, x, w, d, inv, c);
}

// wm_rmsnorm_bwd4_avx2 is wm_rmsnorm_bwd_avx2 of four rows side by side, as
// wm_rms_inv4_avx2 is of wm_rms_inv_avx2: four chains of partial sums in
// flight, and each four-wide block of dw loaded once for the four rows and
// updated by them in row order, so every value is what the row-by-row
// kernel gives.
__attribute__((target("avx2"))) static void wm_rmsnorm_bwd4_avx2(float *dx, const float *res, const float *g,
                                                                 const float *x, const float *w, double *dw,
                                                                 ptrdiff_t d, double eps, const double *inv4) {
	double inv[4], c[4];
	if (inv4 != NULL)
		for (int r = 0; r < 4; r++) inv[r] = inv4[r];
	else
		wm_rms_inv4_avx2(inv, x, d, eps);
	__m256d vi[4], acc[4];
	for (int r = 0; r < 4; r++) vi[r] = _mm256_set1_pd(inv[r]), acc[r] = _mm256_setzero_pd();
	ptrdiff_t j = 0;
	for (; j + 4 <= d; j += 4) {
		__m256d wj = _mm256_cvtps_pd(_mm_loadu_ps(w + j)), dwj = _mm256_loadu_pd(dw + j);
		for (int r = 0; r < 4; r++) {
			__m256d gj = _mm256_cvtps_pd(_mm_loadu_ps(g + r * d + j));
			__m256d xj = _mm256_cvtps_pd(_mm_loadu_ps(x + r * d + j));
			acc[r] = _mm256_add_pd(acc[r], _mm256_mul_pd(_mm256_mul_pd(gj, wj), xj));
			dwj = _mm256_add_pd(dwj, _mm256_mul_pd(_mm256_mul_pd(gj, xj), vi[r]));
		}
		_mm256_storeu_pd(dw + j, dwj);
	}
	for (int r = 0; r < 4; r++) {
		const float *gr = g + r * d, *xr = x + r * d;
		double s[4];
		_mm256_storeu_pd(s, acc[r]);
		for (ptrdiff_t k = j; k < d; k++) {
			double gk = (double)gr[k], xk = (double)xr[k];
			s[0] += gk * (double)w[k] * xk;
			dw[k] += gk * xk * inv[r];
		}
		c[r] = inv[r] * inv[r] * inv[r] * ((s[0] + s[1]) + (s[2] + s[3])) / (double)d;
	}
	if (dx != NULL)
		for (int r = 0; r < 4; r++)
			wm_rmsnorm_dx_row_avx2(dx + r * d, res != NULL ? res + r * d : NULL, g + r * d, x + r * d, w, d, inv[r],
			                       c[r]);
}

// wm_rmsnorm_bwd_avx2 runs the rows four at a time (wm_rmsnorm_bwd4_avx2),
// the last rows % 4 one at a time.
__attribute__((target("avx2"))) static void wm_rmsnorm_bwd_avx2(float *dx, const float *res, const float *g,
                                                                const float *x, const float *w, double *dw,
                                                                ptrdiff_t rows, ptrdiff_t d, double eps,
                                                                const double *invs) {
	ptrdiff_t r = 0;
	for (; r + 4 <= rows; r += 4, x += 4 * d, g += 4 * d) {
		wm_rmsnorm_bwd4_avx2(dx, res, g, x, w, dw, d, eps, invs != NULL ? invs + r : NULL);
		if (dx != NULL) dx += 4 * d;
		if (res != NULL) res += 4 * d;
	}
	for (; r < rows; r++, x += d, g += d) {
		wm_rmsnorm_bwd1_avx2(dx, res, g, x, w, dw, d, eps, invs != NULL ? invs + r : NULL);
		if (dx != NULL) dx += d;
		if (res != NULL) res += d;
	}
}

#define WM_RMS512_ATTR __attribute__((target("avx512f,avx512dq,avx2")))

// wm_rms_inv8_avx512 is wm_rms_inv_avx2 of the eight rows x, x+d, …, x+7d:
// each register holds two rows' four partial sums (lanes 0–3 the first
// row's, 4–7 the second's), so every lane adds the values and in the order
// wm_rms_inv_avx2's lane does; the rows' tails, their (s0+s1)+(s2+s3) and
// the eight 1/sqrt(Σ/d + eps) follow as there, the last as one vector of
// correctly rounded operations, so the bits are the same.
WM_RMS512_ATTR static void wm_rms_inv8_avx512(double inv[8], const float *x, ptrdiff_t d, double eps) {
	__m512d acc[4] = {_mm512_setzero_pd(), _mm512_setzero_pd(), _mm512_setzero_pd(), _mm512_setzero_pd()};
	ptrdiff_t j = 0;
	for (; j + 4 <= d; j += 4)
		for (int q = 0; q < 4; q++) {
			const float *xa = x + 2 * q * d + j;
			__m256 pair = _mm256_insertf128_ps(_mm256_castps128_ps256(_mm_loadu_ps(xa)), _mm_loadu_ps(xa + d), 1);
			__m512d v = _mm512_cvtps_pd(pair);
			acc[q] = _mm512_add_pd(acc[q], _mm512_mul_pd(v, v));
		}
	double s[8][4], t[8];
	for (int q = 0; q < 4; q++) _mm512_storeu_pd(s[2 * q], acc[q]);
	for (int r = 0; r < 8; r++) {
		const float *xr = x + r * d;
		for (ptrdiff_t k = j; k < d; k++) s[r][0] += (double)xr[k] * (double)xr[k];
		t[r] = (s[r][0] + s[r][1]) + (s[r][2] + s[r][3]);
	}
	__m512d ms = _mm512_add_pd(_mm512_div_pd(_mm512_loadu_pd(t), _mm512_set1_pd((double)d)), _mm512_set1_pd(eps));
	_mm512_storeu_pd(inv, _mm512_div_pd(_mm512_set1_pd(1), _mm512_sqrt_pd(ms)));
}

// wm_rmsnorm_fwd_row_avx512 is wm_rmsnorm_fwd_row_avx2 eight values at a
// time (the same operations on each value).
WM_RMS512_ATTR static void wm_rmsnorm_fwd_row_avx512(float *y, const float *x, const float *w, ptrdiff_t d,
                                                     double inv) {
	__m512d vi = _mm512_set1_pd(inv);
	ptrdiff_t j = 0;
	for (; j + 8 <= d; j += 8) {
		__m256 xn = _mm512_cvtpd_ps(_mm512_mul_pd(_mm512_cvtps_pd(_mm256_loadu_ps(x + j)), vi));
		_mm256_storeu_ps(y + j, _mm256_mul_ps(xn, _mm256_loadu_ps(w + j)));
	}
	for (; j < d; j++) y[j] = (float)((double)x[j] * inv) * w[j];
}

// wm_rmsnorm_fwd_avx512 runs the rows eight at a time (wm_rms_inv8_avx512),
// the rest as wm_rmsnorm_fwd_avx2 does.
WM_RMS512_ATTR static void wm_rmsnorm_fwd_avx512(float *y, const float *x, const float *w, ptrdiff_t rows,
                                                 ptrdiff_t d, double eps, double *invs) {
	ptrdiff_t r = 0;
	for (; r + 8 <= rows; r += 8, x += 8 * d, y += 8 * d) {
		double inv[8];
		wm_rms_inv8_avx512(inv, x, d, eps);
		for (int k = 0; k < 8; k++) {
			if (invs != NULL) invs[r + k] = inv[k];
			wm_rmsnorm_fwd_row_avx512(y + k * d, x + k * d, w, d, inv[k]);
		}
	}
	wm_rmsnorm_fwd_avx2(y, x, w, rows - r, d, eps, invs != NULL ? invs + r : NULL);
}

// wm_rmsnorm_dx_row_avx512 is wm_rmsnorm_dx_row_avx2 eight values at a
// time (the same operations on each value).
WM_RMS512_ATTR static void wm_rmsnorm_dx_row_avx512(float *dx, const float *res, const float *g, const float *x,
                                                    const float *w, ptrdiff_t d, double inv, double c) {
	__m512d vi = _mm512_set1_pd(inv), vc = _mm512_set1_pd(c);
	ptrdiff_t j = 0;
	for (; j + 8 <= d; j += 8) {
		__m512d gw = _mm512_mul_pd(_mm512_mul_pd(vi, _mm512_cvtps_pd(_mm256_loadu_ps(g + j))),
		                           _mm512_cvtps_pd(_mm256_loadu_ps(w + j)));
		__m512d xc = _mm512_mul_pd(_mm512_cvtps_pd(_mm256_loadu_ps(x + j)), vc);
		__m256 v = _mm512_cvtpd_ps(_mm512_sub_pd(gw, xc));
		if (res != NULL) v = _mm256_add_ps(_mm256_loadu_ps(res + j), v);
		_mm256_storeu_ps(dx + j, v);
	}
	for (; j < d; j++) {
		float v = (float)(inv * (double)g[j] * (double)w[j] - (double)x[j] * c);
		dx[j] = res != NULL ? res[j] + v : v;
	}
}

// wm_rms_pair512 loads four floats of row a and four of row b (at a + d)
// as one register of eight doubles, row a's in lanes 0–3.
WM_RMS512_ATTR static inline __m512d wm_rms_pair512(const float *a, ptrdiff_t d) {
	return _mm512_cvtps_pd(_mm256_insertf128_ps(_mm256_castps128_ps256(_mm_loadu_ps(a)), _mm_loadu_ps(a + d), 1));
}

// wm_rmsnorm_bwd8_avx512 is wm_rmsnorm_bwd4_avx2 of eight rows: each
// register holds two rows' four lanes (as in wm_rms_inv8_avx512), so each
// row's partial sums of g·w·x take its values in the lanes and order of
// wm_rmsnorm_bwd1_avx2; each four-wide block of dw is loaded once and
// updated by the eight rows in row order, so every value is what the
// row-by-row kernel gives.
WM_RMS512_ATTR static void wm_rmsnorm_bwd8_avx512(float *dx, const float *res, const float *g, const float *x,
                                                  const float *w, double *dw, ptrdiff_t d, double eps,
                                                  const double *inv8) {
	double inv[8], c[8];
	if (inv8 != NULL)
		for (int r = 0; r < 8; r++) inv[r] = inv8[r];
	else
		wm_rms_inv8_avx512(inv, x, d, eps);
	__m512d vi[4], acc[4];
	for (int q = 0; q < 4; q++) {
		vi[q] = _mm512_insertf64x4(_mm512_set1_pd(inv[2 * q]), _mm256_set1_pd(inv[2 * q + 1]), 1);
		acc[q] = _mm512_setzero_pd();
	}
	ptrdiff_t j = 0;
	for (; j + 4 <= d; j += 4) {
		__m128 w4 = _mm_loadu_ps(w + j);
		__m512d wj = _mm512_cvtps_pd(_mm256_insertf128_ps(_mm256_castps128_ps256(w4), w4, 1));
		__m256d dwj = _mm256_loadu_pd(dw + j);
		for (int q = 0; q < 4; q++) {
			__m512d gj = wm_rms_pair512(g + 2 * q * d + j, d), xj = wm_rms_pair512(x + 2 * q * d + j, d);
			acc[q] = _mm512_add_pd(acc[q], _mm512_mul_pd(_mm512_mul_pd(gj, wj), xj));
			__m512d t = _mm512_mul_pd(_mm512_mul_pd(gj, xj), vi[q]);
			dwj = _mm256_add_pd(dwj, _mm512_castpd512_pd256(t));    // row 2q
			dwj = _mm256_add_pd(dwj, _mm512_extractf64x4_pd(t, 1)); // row 2q+1
		}
		_mm256_storeu_pd(dw + j, dwj);
	}
	double s[8][4];
	for (int q = 0; q < 4; q++) _mm512_storeu_pd(s[2 * q], acc[q]);
	for (int r = 0; r < 8; r++) {
		const float *gr = g + r * d, *xr = x + r * d;
		for (ptrdiff_t k = j; k < d; k++) {
			double gk = (double)gr[k], xk = (double)xr[k];
			s[r][0] += gk * (double)w[k] * xk;
			dw[k] += gk * xk * inv[r];
		}
		c[r] = inv[r] * inv[r] * inv[r] * ((s[r][0] + s[r][1]) + (s[r][2] + s[r][3])) / (double)d;
	}
	if (dx != NULL)
		for (int r = 0; r < 8; r++)
			wm_rmsnorm_dx_row_avx512(dx + r * d, res != NULL ? res + r * d : NULL, g + r * d, x + r * d, w, d,
			                         inv[r], c[r]);
}

// wm_rmsnorm_bwd_avx512 runs the rows eight at a time
// (wm_rmsnorm_bwd8_avx512), the rest as wm_rmsnorm_bwd_avx2 does.
WM_RMS512_ATTR static void wm_rmsnorm_bwd_avx512(float *dx, const float *res, const float *g, const float *x,
                                                 const float *w, double *dw, ptrdiff_t rows, ptrdiff_t d, double eps,
                                                 const double *invs) {
	ptrdiff_t r = 0;
	for (; r + 8 <= rows; r += 8, x += 8 * d, g += 8 * d) {
		wm_rmsnorm_bwd8_avx512(dx, res, g, x, w, dw, d, eps, invs != NULL ? invs + r : NULL);
		if (dx != NULL) dx += 8 * d;
		if (res != NULL) res += 8 * d;
	}
	wm_rmsnorm_bwd_avx2(dx, res, g, x, w, dw, rows - r, d, eps, invs != NULL ? invs + r : NULL);
}

#else
#define wm_rmsnorm_bwd_avx512 wm_rmsnorm_bwd_any
#define wm_rmsnorm_fwd_avx512 wm_rmsnorm_fwd_any
#define wm_rmsnorm_fwd_avx2 wm_rmsnorm_fwd_any
#define wm_rmsnorm_bwd_avx2 wm_rmsnorm_bwd_any
#endif

WM_LEVEL_SWITCH(wm_rms, 0)

// wm_rmsnorm_fwd also writes each row's 1/rms to invs when it is not
// NULL; wm_rmsnorm_bwd takes them from invs when it is not NULL (the same
// values it would compute) instead of reading x once more for them.
static void wm_rmsnorm_fwd(float *y, const float *x, const float *w, ptrdiff_t rows, ptrdiff_t d, double eps,
                           double *invs) {
	if (wm_rms_level >= 2) wm_rmsnorm_fwd_avx512(y, x, w, rows, d, eps, invs);
	else if (wm_rms_level == 1) wm_rmsnorm_fwd_avx2(y, x, w, rows, d, eps, invs);
	else wm_rmsnorm_fwd_any(y, x, w, rows, d, eps, invs);
}
static void wm_rmsnorm_bwd(float *dx, const float *res, const float *g, const float *x, const float *w, double *dw,
                           ptrdiff_t rows, ptrdiff_t d, double eps, const double *invs) {
	if (wm_rms_level >= 2) wm_rmsnorm_bwd_avx512(dx, res, g, x, w, dw, rows, d, eps, invs);
	else if (wm_rms_level == 1) wm_rmsnorm_bwd_avx2(dx, res, g, x, w, dw, rows, d, eps, invs);
	else wm_rmsnorm_bwd_any(dx, res, g, x, w, dw, rows, d, eps, invs);
}
*/
import "C"

// rmsnormLevel selects the best variant of the RMSNorm kernels the CPU has
// up to the kernel level most (levelAVX512: eight rows at a time on
// AVX-512, forward and backward) and returns the level chosen;
// setKernelLevel calls it.
func rmsnormLevel(most int) int {
	return int(C.wm_rms_set_level(C.int(most)))
}

// rmsnormForwardRows32 is rmsnormForwardRows on float32 rows, in C.
func rmsnormForwardRows32(y, x, w []float32, eps float64, inv []float64) {
	d := len(w)
	rows := len(x) / d
	if rows == 0 {
		return
	}
	_ = y[rows*d-1]
	if inv != nil {
		_ = inv[rows-1]
	}
	C.wm_rmsnorm_fwd(f32p(y), f32p(x), f32p(w), C.ptrdiff_t(rows), C.ptrdiff_t(d), C.double(eps), f64p(inv))
}

// rmsnormBackwardRows32 is rmsnormBackwardRows on float32 rows, in C; dx
// and res may be nil (res is read only with dx).
func rmsnormBackwardRows32(dx, res, dy, x, w []float32, dw []float64, eps float64, inv []float64) {
	d := len(w)
	rows := len(x) / d
	if rows == 0 {
		return
	}
	_, _ = dy[rows*d-1], dw[d-1]
	if dx == nil {
		res = nil
	} else {
		_ = dx[rows*d-1]
	}
	if res != nil {
		_ = res[rows*d-1]
	}
	if inv != nil {
		_ = inv[rows-1]
	}
	C.wm_rmsnorm_bwd(f32p(dx), f32p(res), f32p(dy), f32p(x), f32p(w), f64p(dw), C.ptrdiff_t(rows), C.ptrdiff_t(d), C.double(eps),
		f64p(inv))
}
