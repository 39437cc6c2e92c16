//go:build openblas

package ops

// With the openblas build tag (cgo), the routed MoE's float32 row passes
// (moe_rows.go) run in C, one call per expert (and, for the combine, per
// worker): the gate gradient's dot products in dot8's eight float64 lanes,
// folded in dot8's order, and every scaled row as one float32 multiply (and
// add) per value with no fused multiply-add, so C and Go agree to the bit
// (TestMoERowsMatchGo; every variant in TestMoERowsEveryLevel). The AVX2
// variant holds the eight lanes in two four-lane registers (wm_dot8.h). At
// the AVX-512 level the gate gradient holds them in one register, for rows
// of a multiple of eight values (d_model), and the combine's scatter keeps
// the AVX2 loop, which memory bounds.

/*
// cgo joins the CFLAGS of all the package's files and the last -O wins:
// every file says -O3 (see activations_openblas.go).
#cgo CFLAGS: -O3
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("fp-contract=off")
#endif
#include <stddef.h>
#include <stdint.h>
#include "wm_avx2_switch.h"
#include "wm_dot8.h"

static void wm_moe_scatter_any(float *dst, const float *rows, const int64_t *tok, ptrdiff_t m, const float *g,
                               ptrdiff_t n, ptrdiff_t e, ptrdiff_t d) {
	for (ptrdiff_t r = 0; r < m; r++) {
		const float s = g ? g[tok[r] * n + e] : 1.0f;
		float *o = dst + tok[r] * d;
		const float *src = rows + r * d;
		for (ptrdiff_t q = 0; q < d; q++) o[q] += s * src[q];
	}
}

static void wm_moe_gate_grad_any(float *dg, float *dY, const float *dy, const float *Y, const float *g,
                                 const int64_t *tok, ptrdiff_t m, ptrdiff_t n, ptrdiff_t e, ptrdiff_t d) {
	for (ptrdiff_t r = 0; r < m; r++) {
		const float *src = dy + tok[r] * d, *yr = Y + r * d;
		float *out = dY + r * d;
		dg[tok[r] * n + e] = (float)wm_dot8_any(src, yr, d);
		const float gt = g[tok[r] * n + e];
		for (ptrdiff_t q = 0; q < d; q++) out[q] = gt * src[q];
	}
}

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#include <immintrin.h>
__attribute__((target("avx2,fma"))) static void wm_moe_scatter_avx2(float *dst, const float *rows, const int64_t *tok,
                                                                   ptrdiff_t m, const float *g, ptrdiff_t n,
                                                                   ptrdiff_t e, ptrdiff_t d) {
	for (ptrdiff_t r = 0; r < m; r++) {
		const float s = g ? g[tok[r] * n + e] : 1.0f;
		const __m256 s8 = _mm256_set1_ps(s);
		float *o = dst + tok[r] * d;
		const float *src = rows + r * d;
		ptrdiff_t q = 0;
		for (; q + 8 <= d; q += 8)
			_mm256_storeu_ps(o + q, _mm256_add_ps(_mm256_loadu_ps(o + q), _mm256_mul_ps(s8, _mm256_loadu_ps(src + q))));
		for (; q < d; q++) o[q] += s * src[q];
	}
}

__attribute__((target("avx2,fma"))) static void wm_moe_gate_grad_avx2(float *dg, float *dY, const float *dy,
                                                                     const float *Y, const float *g,
                                                                     const int64_t *tok, ptrdiff_t m, ptrdiff_t n,
                                                                     ptrdiff_t e, ptrdiff_t d) {
	for (ptrdiff_t r = 0; r < m; r++) {
		const float *src = dy + tok[r] * d, *yr = Y + r * d;
		float *out = dY + r * d;
		dg[tok[r] * n + e] = (float)wm_dot8_whole_avx2(src, yr, d);
		const float gt = g[tok[r] * n + e];
		const __m256 g8 = _mm256_set1_ps(gt);
		ptrdiff_t q = 0;
		for (; q + 8 <= d; q += 8) _mm256_storeu_ps(out + q, _mm256_mul_ps(g8, _mm256_loadu_ps(src + q)));
		for (; q < d; q++) out[q] = gt * src[q];
	}
}

// wm_moe_gate_grad_avx512 is wm_moe_gate_grad_any for rows of a multiple
// of eight values: a row's eight lanes in one register, folded in
// wm_fold8's order (wm_fold8_avx512), and dY's scaled row sixteen values
// at a time, then eight. Other widths take the AVX2 variant. Alone,
// on 1,023 tokens of an expert: rows of 64 −30%, of 256 −23% against
// AVX2; four rows side by side were no faster (the rows come from memory).
__attribute__((target("avx512f,avx512dq,avx2,fma"))) static void wm_moe_gate_grad_avx512(
	float *dg, float *dY, const float *dy, const float *Y, const float *g, const int64_t *tok, ptrdiff_t m,
	ptrdiff_t n, ptrdiff_t e, ptrdiff_t d) {
	if (d % 8 != 0) {
		wm_moe_gate_grad_avx2(dg, dY, dy, Y, g, tok, m, n, e, d);
		return;
	}
	for (ptrdiff_t r = 0; r < m; r++) {
		const float *src = dy + tok[r] * d, *yr = Y + r * d;
		float *out = dY + r * d;
		__m512d l = _mm512_setzero_pd();
		for (ptrdiff_t q = 0; q < d; q += 8)
			l = _mm512_fmadd_pd(_mm512_cvtps_pd(_mm256_loadu_ps(src + q)), _mm512_cvtps_pd(_mm256_loadu_ps(yr + q)), l);
		const __m512 g16 = _mm512_set1_ps(g[tok[r] * n + e]);
		ptrdiff_t q = 0;
		for (; q + 16 <= d; q += 16) _mm512_storeu_ps(out + q, _mm512_mul_ps(g16, _mm512_loadu_ps(src + q)));
		for (; q < d; q += 8)
			_mm256_storeu_ps(out + q, _mm256_mul_ps(_mm512_castps512_ps256(g16), _mm256_loadu_ps(src + q)));
		dg[tok[r] * n + e] = (float)wm_fold8_avx512(l);
	}
}
#else
#define wm_moe_scatter_avx2 wm_moe_scatter_any
#define wm_moe_gate_grad_avx2 wm_moe_gate_grad_any
#define wm_moe_gate_grad_avx512 wm_moe_gate_grad_any
#endif

WM_LEVEL_SWITCH(wm_moe, 1)
static void wm_moe_scatter(float *dst, const float *rows, const int64_t *tok, ptrdiff_t m, const float *g, ptrdiff_t n,
                           ptrdiff_t e, ptrdiff_t d) {
	if (wm_moe_level >= 1) wm_moe_scatter_avx2(dst, rows, tok, m, g, n, e, d);
	else wm_moe_scatter_any(dst, rows, tok, m, g, n, e, d);
}
static void wm_moe_gate_grad(float *dg, float *dY, const float *dy, const float *Y, const float *g, const int64_t *tok,
                             ptrdiff_t m, ptrdiff_t n, ptrdiff_t e, ptrdiff_t d) {
	if (wm_moe_level >= 2) wm_moe_gate_grad_avx512(dg, dY, dy, Y, g, tok, m, n, e, d);
	else if (wm_moe_level == 1) wm_moe_gate_grad_avx2(dg, dY, dy, Y, g, tok, m, n, e, d);
	else wm_moe_gate_grad_any(dg, dY, dy, Y, g, tok, m, n, e, d);
}
*/
import "C"

import (
	"strconv"
	"unsafe"
)

// moeRowsLevel selects the best variant of the MoE row kernels the CPU
// has up to the kernel level most (levelAVX512: the gate gradient's lanes
// in one register) and returns the level chosen; setKernelLevel calls it.
func moeRowsLevel(most int) int {
	return int(C.wm_moe_set_level(C.int(most)))
}

// tokensp is the address of tokens' first element as C's int64_t, which Go's
// int is on the 64-bit platforms the C kernels are used on.
func tokensp(tokens []int) *C.int64_t { return (*C.int64_t)(unsafe.Pointer(&tokens[0])) }

// moeScatterRows32 is moeScatterRowsGo on float32, in C.
func moeScatterRows32(dst, rows []float32, tokens []int, g []float32, n, e, d int) {
	if strconv.IntSize != 64 {
		moeScatterRowsGo(dst, rows, tokens, g, n, e, d)
		return
	}
	m := len(tokens)
	if m == 0 || d == 0 {
		return
	}
	// Bounds the C loop relies on, checked here so that a bad slice panics
	// in Go: every token's row of dst (and gate), and the m rows.
	_ = rows[m*d-1]
	for _, t := range tokens {
		_ = dst[t*d+d-1]
		if g != nil {
			_ = g[t*n+e]
		}
	}
	C.wm_moe_scatter(f32p(dst), f32p(rows), tokensp(tokens), C.ptrdiff_t(m), f32p(g), C.ptrdiff_t(n), C.ptrdiff_t(e), C.ptrdiff_t(d))
}

// moeGateGrad32 is moeGateGradGo on float32, in C.
func moeGateGrad32(dg, dY, dy, Y, g []float32, tokens []int, n, e, d int) {
	if strconv.IntSize != 64 {
		moeGateGradGo(dg, dY, dy, Y, g, tokens, n, e, d)
		return
	}
	m := len(tokens)
	if m == 0 || d == 0 {
		return
	}
	_, _ = dY[m*d-1], Y[m*d-1]
	for _, t := range tokens {
		_, _, _ = dy[t*d+d-1], dg[t*n+e], g[t*n+e]
	}
	C.wm_moe_gate_grad(f32p(dg), f32p(dY), f32p(dy), f32p(Y), f32p(g), tokensp(tokens), C.ptrdiff_t(m), C.ptrdiff_t(n), C.ptrdiff_t(e), C.ptrdiff_t(d))
}
