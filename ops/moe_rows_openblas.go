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
// the AVX2 loop, which memory bounds. The lists of each expert's tokens
// that every forward builds from the gates (moeChoices32, for moeTokens)
// run here too.

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

// wm_moe_masks_any sets masks[t] to the experts token t chose (bit e: gate
// g[t·n + e] is not zero, NaN included; n ≤ 64) and adds one to counts[e]
// for each. Only the loop over a mask's set bits branches, k times a
// token for top-k gates, which the predictor learns.
static void wm_moe_masks_any(const float *g, ptrdiff_t tokens, ptrdiff_t n, uint64_t *masks, int64_t *counts) {
	for (ptrdiff_t t = 0; t < tokens; t++) {
		const float *r = g + t * n;
		uint64_t m = 0;
		for (ptrdiff_t e = 0; e < n; e++) m |= (uint64_t)(r[e] != 0) << e;
		masks[t] = m;
		for (uint64_t b = m; b != 0; b &= b - 1) counts[__builtin_ctzll(b)]++;
	}
}

// wm_moe_fill writes each token t into all[next[e]++] for every expert e of
// masks[t], tokens in order, so each expert's part of all is ascending.
static void wm_moe_fill(const uint64_t *masks, ptrdiff_t tokens, int64_t *next, int64_t *all) {
	for (ptrdiff_t t = 0; t < tokens; t++)
		for (uint64_t b = masks[t]; b != 0; b &= b - 1) all[next[__builtin_ctzll(b)]++] = t;
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

// wm_moe_masks_avx2 is wm_moe_masks_any with eight gates compared at once
// (unordered not-equal, so NaN counts) and their signs gathered into the
// mask by one movemask.
__attribute__((target("avx2,fma"))) static void wm_moe_masks_avx2(const float *g, ptrdiff_t tokens, ptrdiff_t n,
                                                                  uint64_t *masks, int64_t *counts) {
	const __m256 zero = _mm256_setzero_ps();
	for (ptrdiff_t t = 0; t < tokens; t++) {
		const float *r = g + t * n;
		uint64_t m = 0;
		ptrdiff_t e = 0;
		for (; e + 8 <= n; e += 8)
			m |= (uint64_t)(unsigned)_mm256_movemask_ps(_mm256_cmp_ps(_mm256_loadu_ps(r + e), zero, _CMP_NEQ_UQ)) << e;
		for (; e < n; e++) m |= (uint64_t)(r[e] != 0) << e;
		masks[t] = m;
		for (uint64_t b = m; b != 0; b &= b - 1) counts[__builtin_ctzll(b)]++;
	}
}
#else
#define wm_moe_scatter_avx2 wm_moe_scatter_any
#define wm_moe_gate_grad_avx2 wm_moe_gate_grad_any
#define wm_moe_gate_grad_avx512 wm_moe_gate_grad_any
#define wm_moe_masks_avx2 wm_moe_masks_any
#endif

WM_LEVEL_SWITCH(wm_moe, 1)
static void wm_moe_scatter(float *dst, const float *rows, const int64_t *tok, ptrdiff_t m, const float *g, ptrdiff_t n,
                           ptrdiff_t e, ptrdiff_t d) {
	if (wm_moe_level >= 1) wm_moe_scatter_avx2(dst, rows, tok, m, g, n, e, d);
	else wm_moe_scatter_any(dst, rows, tok, m, g, n, e, d);
}
static void wm_moe_masks(const float *g, ptrdiff_t tokens, ptrdiff_t n, uint64_t *masks, int64_t *counts) {
	if (wm_moe_level >= 1) wm_moe_masks_avx2(g, tokens, n, masks, counts);
	else wm_moe_masks_any(g, tokens, n, masks, counts);
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

// moeChoices32 lists the tokens each of n experts chose, for tokens rows of
// n float32 gates (n ≤ 64): a gate that is not zero (NaN included) is a
// choice. all holds expert 0's tokens, then expert 1's, and so on, each
// ascending; counts[e] is how many expert e has. In C: each token's gates
// become a mask of its experts, eight compared at once, and the tokens are
// written from the masks' set bits, k a token for top-k gates, where
// moeTokensGo visits all n gates of every token twice. On 2048 tokens of
// 8 experts, top-2, moeTokens took 0.38–0.40 of moeTokensGo's time on an
// Emerald Rapids Xeon (BenchmarkMoETokens, four runs), allocations
// included.
func moeChoices32(g []float32, tokens, n int) (all, counts []int) {
	if strconv.IntSize != 64 || n > 64 {
		return moeChoicesGo(g, tokens, n)
	}
	counts = make([]int, n)
	if tokens == 0 || n == 0 {
		return nil, counts
	}
	_ = g[tokens*n-1]
	masks := make([]uint64, tokens)
	C.wm_moe_masks(f32p(g), C.ptrdiff_t(tokens), C.ptrdiff_t(n), (*C.uint64_t)(unsafe.Pointer(&masks[0])), tokensp(counts))
	next, total := make([]int, n), 0
	for e, c := range counts {
		next[e] = total
		total += c
	}
	all = make([]int, total)
	if total > 0 {
		C.wm_moe_fill((*C.uint64_t)(unsafe.Pointer(&masks[0])), C.ptrdiff_t(tokens), tokensp(next), tokensp(all))
	}
	return all, counts
}
