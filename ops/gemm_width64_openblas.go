//go:build openblas

package ops

// The 64-wide product kernel (gemm_width64.go) in C, AVX-512: c[i, 0:64] =
// alpha · Σ_p a(i, p) · b[p, 0:64] + beta · c[i, 0:64], a(i, p) = a[i·lda +
// p] or, transposed, a[p·lda + i]. Six rows of c are 24 zmm accumulators;
// each step p loads b's row once (4 zmm) and broadcasts six values of a,
// so the loop is bound by its FMAs, with a not packed and b copied into a
// panel only for products of 64 rows or more (WM_W64_PACK_ROWS). The
// sum over p is in order, one accumulator per value of c, so a value does
// not depend on m, on the row's place in its block of six, or on the run.

/*
// cgo joins the CFLAGS of all the package's files and the last -O wins:
// every file says -O3 (see activations_openblas.go).
#cgo CFLAGS: -O3
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("fp-contract=off")
#endif
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#include <immintrin.h>

#define WM_W64_ATTR __attribute__((target("avx512f")))

// WM_W64_ROWS(MR) is the kernel for MR rows of c. With an not NULL (the
// next six rows of an untransposed a, an[0..5]), it also prefetches, once
// every sixteen steps of the sum (a cache line of a row), those rows'
// lines at the same step, so that the next block finds them in cache
// rather than in memory, where a step's activations often are (whole
// steps at d_model 256 ran 1–4% faster: docs/performance.md, "The 64-wide
// kernel's next rows prefetched"). A prefetch reads nothing into the sums,
// so the values, and their order, are the same.
#define WM_W64_ROWS(MR)                                                                            \
	WM_W64_ATTR static inline __attribute__((always_inline)) void wm_w64_rows##MR(                 \
	    int ta, ptrdiff_t k, float alpha, const float *a, ptrdiff_t lda, const ptrdiff_t *ri,       \
	    const float *b, ptrdiff_t ldb, float beta, float *c, ptrdiff_t ldc, const float *const *an) { \
		__m512 acc[MR][4];                                                                          \
		const float *ar[MR];                                                                        \
		for (int r = 0; r < MR; r++) ar[r] = a + (ri != NULL ? ri[r] : r) * lda;                    \
		for (int r = 0; r < MR; r++)                                                                \
			for (int j = 0; j < 4; j++) acc[r][j] = _mm512_setzero_ps();                            \
		for (ptrdiff_t p = 0; p < k; p++) {                                                         \
			const float *bp = b + p * ldb;                                                          \
			if (an != NULL && (p & 15) == 0)                                                        \
				for (int r = 0; r < 6; r++) _mm_prefetch((const char *)(an[r] + p), _MM_HINT_T0);   \
			__m512 b0 = _mm512_loadu_ps(bp), b1 = _mm512_loadu_ps(bp + 16);                         \
			__m512 b2 = _mm512_loadu_ps(bp + 32), b3 = _mm512_loadu_ps(bp + 48);                    \
			_Pragma("GCC unroll 8") for (int r = 0; r < MR; r++) {                                  \
				__m512 x = _mm512_set1_ps(ta ? a[p * lda + r] : ar[r][p]);                          \
				acc[r][0] = _mm512_fmadd_ps(x, b0, acc[r][0]);                                      \
				acc[r][1] = _mm512_fmadd_ps(x, b1, acc[r][1]);                                      \
				acc[r][2] = _mm512_fmadd_ps(x, b2, acc[r][2]);                                      \
				acc[r][3] = _mm512_fmadd_ps(x, b3, acc[r][3]);                                      \
			}                                                                                       \
		}                                                                                           \
		__m512 va = _mm512_set1_ps(alpha), vb = _mm512_set1_ps(beta);                               \
		for (int r = 0; r < MR; r++)                                                                \
			for (int j = 0; j < 4; j++) {                                                           \
				float *cp = c + r * ldc + 16 * j;                                                   \
				__m512 v = _mm512_mul_ps(va, acc[r][j]);                                            \
				if (beta != 0) v = _mm512_add_ps(v, _mm512_mul_ps(vb, _mm512_loadu_ps(cp)));        \
				_mm512_storeu_ps(cp, v);                                                            \
			}                                                                                       \
	}

WM_W64_ROWS(6)
WM_W64_ROWS(5)
WM_W64_ROWS(4)
WM_W64_ROWS(3)
WM_W64_ROWS(2)
WM_W64_ROWS(1)

// WM_W64_A is the first of a's rows for c's rows from i on: with row
// indices ri (a untransposed), a itself, the rows found through ri + i;
// else a's row i (or, transposed, its column i).
#define WM_W64_A(ta, a, lda, ri, i) ((ri) != NULL ? (a) : (ta) ? (a) + (i) : (a) + (i) * (lda))
#define WM_W64_RI(ri, i) ((ri) != NULL ? (ri) + (i) : NULL)

// wm_w64_next_rows sets an[0..5] to a's rows i to i+5 (found through ri
// where it is given): the next block, for the kernel to prefetch.
static inline void wm_w64_next_rows(const float **an, const float *a, ptrdiff_t lda, const ptrdiff_t *ri, ptrdiff_t i) {
	for (int r = 0; r < 6; r++) an[r] = a + (ri != NULL ? ri[i + r] : i + r) * lda;
}

WM_W64_ATTR static void wm_gemm_width64(int ta, ptrdiff_t m, ptrdiff_t k, float alpha, const float *a,
                                        ptrdiff_t lda, const ptrdiff_t *ri, const float *b, ptrdiff_t ldb,
                                        float beta, float *c, ptrdiff_t ldc) {
	ptrdiff_t i = 0;
	// Each block of an untransposed a with six more rows after it
	// prefetches those rows. (Transposed, the next block's values lie in
	// the lines this block reads.)
	if (!ta)
		for (; i + 12 <= m; i += 6) {
			const float *an[6];
			wm_w64_next_rows(an, a, lda, ri, i + 6);
			wm_w64_rows6(0, k, alpha, WM_W64_A(0, a, lda, ri, i), lda, WM_W64_RI(ri, i), b, ldb, beta, c + i * ldc, ldc, an);
		}
	for (; i + 6 <= m; i += 6)
		wm_w64_rows6(ta, k, alpha, WM_W64_A(ta, a, lda, ri, i), lda, WM_W64_RI(ri, i), b, ldb, beta, c + i * ldc, ldc, NULL);
	const float *ai = WM_W64_A(ta, a, lda, ri, i);
	const ptrdiff_t *rii = WM_W64_RI(ri, i);
	float *ci = c + i * ldc;
	switch (m - i) {
	case 5: wm_w64_rows5(ta, k, alpha, ai, lda, rii, b, ldb, beta, ci, ldc, NULL); break;
	case 4: wm_w64_rows4(ta, k, alpha, ai, lda, rii, b, ldb, beta, ci, ldc, NULL); break;
	case 3: wm_w64_rows3(ta, k, alpha, ai, lda, rii, b, ldb, beta, ci, ldc, NULL); break;
	case 2: wm_w64_rows2(ta, k, alpha, ai, lda, rii, b, ldb, beta, ci, ldc, NULL); break;
	case 1: wm_w64_rows1(ta, k, alpha, ai, lda, rii, b, ldb, beta, ci, ldc, NULL); break;
	}
}

// The same kernel for a width w under 64 (a product's last columns): NV
// vectors of 16, the last one's lanes past w masked off in b's loads and
// c's loads and stores. A value of c is the same sum, in the same order,
// as the 64-wide kernel gives it. (The 64-wide kernel is not this one at
// four vectors with a full mask: that was measured, and (AM)4 d_model 256
// on two shards trained 3–6% slower, medians of 5.)
#define WM_WT_ROWS(MR, NV)                                                                         \
	WM_W64_ATTR static inline __attribute__((always_inline)) void wm_wt_rows##MR##_##NV(           \
	    int ta, ptrdiff_t k, float alpha, const float *a, ptrdiff_t lda, const ptrdiff_t *ri,       \
	    const float *b, ptrdiff_t ldb, float beta, float *c, ptrdiff_t ldc, __mmask16 last) {       \
		__m512 acc[MR][NV];                                                                         \
		const float *ar[MR];                                                                        \
		for (int r = 0; r < MR; r++) ar[r] = a + (ri != NULL ? ri[r] : r) * lda;                    \
		for (int r = 0; r < MR; r++)                                                                \
			for (int j = 0; j < NV; j++) acc[r][j] = _mm512_setzero_ps();                           \
		for (ptrdiff_t p = 0; p < k; p++) {                                                         \
			const float *bp = b + p * ldb;                                                          \
			__m512 bv[NV];                                                                          \
			for (int j = 0; j < NV - 1; j++) bv[j] = _mm512_loadu_ps(bp + 16 * j);                  \
			bv[NV - 1] = _mm512_maskz_loadu_ps(last, bp + 16 * (NV - 1));                           \
			_Pragma("GCC unroll 8") for (int r = 0; r < MR; r++) {                                  \
				__m512 x = _mm512_set1_ps(ta ? a[p * lda + r] : ar[r][p]);                          \
				for (int j = 0; j < NV; j++) acc[r][j] = _mm512_fmadd_ps(x, bv[j], acc[r][j]);      \
			}                                                                                       \
		}                                                                                           \
		__m512 va = _mm512_set1_ps(alpha), vb = _mm512_set1_ps(beta);                               \
		for (int r = 0; r < MR; r++)                                                                \
			for (int j = 0; j < NV; j++) {                                                          \
				float *cp = c + r * ldc + 16 * j;                                                   \
				__mmask16 mk = j == NV - 1 ? last : (__mmask16)0xFFFF;                              \
				__m512 v = _mm512_mul_ps(va, acc[r][j]);                                            \
				if (beta != 0) v = _mm512_add_ps(v, _mm512_mul_ps(vb, _mm512_maskz_loadu_ps(mk, cp))); \
				_mm512_mask_storeu_ps(cp, mk, v);                                                   \
			}                                                                                       \
	}

#define WM_WT_NV(NV)                                                                               \
	WM_WT_ROWS(6, NV)                                                                              \
	WM_WT_ROWS(5, NV)                                                                              \
	WM_WT_ROWS(4, NV)                                                                              \
	WM_WT_ROWS(3, NV)                                                                              \
	WM_WT_ROWS(2, NV)                                                                              \
	WM_WT_ROWS(1, NV)                                                                              \
	WM_W64_ATTR static void wm_wt_##NV(int ta, ptrdiff_t m, ptrdiff_t k, float alpha, const float *a, \
	                                   ptrdiff_t lda, const ptrdiff_t *ri, const float *b, ptrdiff_t ldb, \
	                                   float beta, float *c, ptrdiff_t ldc, __mmask16 last) {       \
		ptrdiff_t i = 0;                                                                            \
		for (; i + 6 <= m; i += 6)                                                                  \
			wm_wt_rows6_##NV(ta, k, alpha, WM_W64_A(ta, a, lda, ri, i), lda, WM_W64_RI(ri, i), b, ldb, beta, \
			                 c + i * ldc, ldc, last);                                                  \
		const float *ai = WM_W64_A(ta, a, lda, ri, i);                                              \
		const ptrdiff_t *rii = WM_W64_RI(ri, i);                                                    \
		float *ci = c + i * ldc;                                                                    \
		switch (m - i) {                                                                            \
		case 5: wm_wt_rows5_##NV(ta, k, alpha, ai, lda, rii, b, ldb, beta, ci, ldc, last); break;   \
		case 4: wm_wt_rows4_##NV(ta, k, alpha, ai, lda, rii, b, ldb, beta, ci, ldc, last); break;   \
		case 3: wm_wt_rows3_##NV(ta, k, alpha, ai, lda, rii, b, ldb, beta, ci, ldc, last); break;   \
		case 2: wm_wt_rows2_##NV(ta, k, alpha, ai, lda, rii, b, ldb, beta, ci, ldc, last); break;   \
		case 1: wm_wt_rows1_##NV(ta, k, alpha, ai, lda, rii, b, ldb, beta, ci, ldc, last); break;   \
		}                                                                                           \
	}

WM_WT_NV(1)
WM_WT_NV(2)
WM_WT_NV(3)
WM_WT_NV(4)

// WM_W64_PACK_ROWS is the fewest rows of c for which wm_gemm_width copies
// b's k × w values into a panel 64 floats wide first (where b's rows are
// not adjacent already, ldb > w: a caller running many blocks with one b
// copies it once, gemm_panels.go). Every block of six rows reads all of b, so in a product of
// many rows its rows lie one 256-byte run apart instead of ldb floats: one
// stream the prefetcher follows, 16 pages where a tile of 256 rows at ldb
// 688 touched 172. In a C harness on an Intel Xeon (one core, 256 × 64 ×
// 256), with b flushed from the caches before each call as a weight's
// tile is in a step, the copy and the product ran 8–22% faster at ldb 260,
// 344, 512, 688 and 1376, 2% at 256 and 87% at 1024 (whose rows share
// their level-1 sets); with b warm, −1% to +37%. Under 64 rows the copy
// is not paid back when b is warm (12 rows: 40% slower). In whole steps
// on the same Xeon, two run at once, d_model 256 trained 1.6–2.4% faster
// and (AM)4 evaluated 3.0% faster (docs/performance.md). The kernels read
// the same values in the same order either way, so the bits are the same.
#define WM_W64_PACK_ROWS 64

// wm_w64_panel is this thread's panel for b, wm_w64_panel_cap its floats:
// grown to the largest k the thread has seen (256 bytes a step of the sum,
// 1 MiB at k 4096) and kept for the thread's life.
static __thread float *wm_w64_panel;
static __thread size_t wm_w64_panel_cap;

// wm_w64_pack copies b's k rows of w floats into this thread's panel, at a
// leading dimension of 64, and returns it, or NULL where it cannot be had
// (the caller then reads b where it is). Each row goes by four vector loads
// and stores (the last masked under 64 floats), not by a call of memcpy:
// attention's products pack a 64 × 64 tile or a head's keys per call,
// 256 bytes a row, and memcpy's call and dispatch for each row took most
// of the 3.4% of an (AM)4 d_model 256 training step's samples it had.
WM_W64_ATTR static const float *wm_w64_pack(const float *b, ptrdiff_t ldb, ptrdiff_t k, ptrdiff_t w) {
	size_t need = (size_t)k * 64;
	if (need > wm_w64_panel_cap) {
		float *p = aligned_alloc(64, need * sizeof(float));
		if (p == NULL) return NULL;
		free(wm_w64_panel);
		wm_w64_panel = p;
		wm_w64_panel_cap = need;
	}
	float *panel = wm_w64_panel;
	if (w == 64) {
		for (ptrdiff_t p = 0; p < k; p++) {
			const float *s = b + p * ldb;
			float *d = panel + p * 64;
			__m512 x0 = _mm512_loadu_ps(s), x1 = _mm512_loadu_ps(s + 16);
			__m512 x2 = _mm512_loadu_ps(s + 32), x3 = _mm512_loadu_ps(s + 48);
			_mm512_store_ps(d, x0);
			_mm512_store_ps(d + 16, x1);
			_mm512_store_ps(d + 32, x2);
			_mm512_store_ps(d + 48, x3);
		}
		return panel;
	}
	const int nv = (int)((w + 15) / 16);
	const __mmask16 last = (__mmask16)((1u << (w - 16 * (nv - 1))) - 1u);
	for (ptrdiff_t p = 0; p < k; p++) {
		const float *s = b + p * ldb;
		float *d = panel + p * 64;
		for (int j = 0; j < nv - 1; j++) _mm512_store_ps(d + 16 * j, _mm512_loadu_ps(s + 16 * j));
		_mm512_mask_storeu_ps(d + 16 * (nv - 1), last, _mm512_maskz_loadu_ps(last, s + 16 * (nv - 1)));
	}
	return panel;
}

// wm_gemm_width is c[i, 0:w] = alpha · Σ_p a(i, p) · b[p, 0:w] + beta ·
// c[i, 0:w] for 0 < w <= 64: the 64-wide kernel at 64, else the masked one,
// reading b from a panel for WM_W64_PACK_ROWS rows or more.
WM_W64_ATTR static void wm_gemm_width(int ta, ptrdiff_t m, ptrdiff_t w, ptrdiff_t k, float alpha,
                                      const float *a, ptrdiff_t lda, const ptrdiff_t *ri, const float *b,
                                      ptrdiff_t ldb, float beta, float *c, ptrdiff_t ldc) {
	const ptrdiff_t bw = w < 64 ? w : 64;
	if (m >= WM_W64_PACK_ROWS && ldb > bw && k > 0) {
		const float *panel = wm_w64_pack(b, ldb, k, bw);
		if (panel != NULL) b = panel, ldb = 64;
	}
	if (w >= 64) {
		wm_gemm_width64(ta, m, k, alpha, a, lda, ri, b, ldb, beta, c, ldc);
		return;
	}
	int nv = (int)((w + 15) / 16);
	__mmask16 last = (__mmask16)((1u << (w - 16 * (nv - 1))) - 1u); // 16 lanes: 0xFFFF
	switch (nv) {
	case 1: wm_wt_1(ta, m, k, alpha, a, lda, ri, b, ldb, beta, c, ldc, last); break;
	case 2: wm_wt_2(ta, m, k, alpha, a, lda, ri, b, ldb, beta, c, ldc, last); break;
	case 3: wm_wt_3(ta, m, k, alpha, a, lda, ri, b, ldb, beta, c, ldc, last); break;
	case 4: wm_wt_4(ta, m, k, alpha, a, lda, ri, b, ldb, beta, c, ldc, last); break;
	}
}

static int wm_w64_cpu(void) {
	__builtin_cpu_init();
	return __builtin_cpu_supports("avx512f");
}
#else
static void wm_gemm_width(int ta, ptrdiff_t m, ptrdiff_t w, ptrdiff_t k, float alpha, const float *a,
                          ptrdiff_t lda, const ptrdiff_t *ri, const float *b, ptrdiff_t ldb, float beta, float *c,
                          ptrdiff_t ldc) {}
static int wm_w64_cpu(void) { return 0; }
#endif

static int wm_w64_on = 0;
static int wm_w64_set(int on) {
	wm_w64_on = on && wm_w64_cpu();
	return wm_w64_on;
}
*/
import "C"

import (
	"fmt"
	"unsafe"
)

// width64Level turns the 64-wide kernel on at kernel level AVX-512 where
// the CPU has AVX-512 F, off otherwise (setKernelLevel calls it), and says
// whether it is on.
func width64Level(most int) bool {
	width64Enabled = C.wm_w64_set(cbool(most >= levelAVX512)) != 0
	return width64Enabled
}

// width64Enabled is the C switch's state, read without a cgo call.
var width64Enabled bool

// width64On says whether gemmHeadN may run the 64-wide kernel.
func width64On() bool { return width64Enabled }

// gemmWidth64Kernel32 is c = alpha · op(a) · b + beta · c for c [m, n], n
// at most 64 (under 64, the kernel with its last lanes masked), on the C
// kernel (width64On must hold). With beta 0, c is not read.
func gemmWidth64Kernel32(transA bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	if m == 0 || n == 0 {
		return
	}
	if n < 0 || n > width64 {
		panic("ops: the 64-wide kernel takes 1 to 64 columns")
	}
	// The last value each operand is read or written at, so that a short
	// slice panics here rather than C going past it.
	if k > 0 {
		if transA {
			_ = a[(k-1)*lda+m-1]
		} else {
			_ = a[(m-1)*lda+k-1]
		}
		_ = b[(k-1)*ldb+n-1]
	}
	_ = c[(m-1)*ldc+n-1]
	var ap, bp *C.float
	if k > 0 {
		ap, bp = f32p(a), f32p(b)
	}
	C.wm_gemm_width(cbool(transA), C.ptrdiff_t(m), C.ptrdiff_t(n), C.ptrdiff_t(k), C.float(alpha), ap, C.ptrdiff_t(lda),
		nil, bp, C.ptrdiff_t(ldb), C.float(beta), f32p(c), C.ptrdiff_t(ldc))
}

// gemmWidth64Kernel32Rows is gemmWidth64Kernel32 with a untransposed and
// its rows found through rows: c[i, :] = alpha · a[rows[i]·lda : +k] · b +
// beta · c[i, :] for i < len(rows). It reads the values a gathered copy
// of those rows would hold, in the same order, so c has the same bits.
func gemmWidth64Kernel32Rows(rows []int, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	m := len(rows)
	if m == 0 || n == 0 {
		return
	}
	if n < 0 || n > width64 {
		panic("ops: the 64-wide kernel takes 1 to 64 columns")
	}
	// Every row read, and b and c's last values, inside their slices, so
	// that a bad index panics here rather than C reading past a.
	if k > 0 {
		for i, r := range rows {
			if r < 0 || r*lda+k > len(a) {
				panic(fmt.Sprintf("ops: the 64-wide kernel's row %d is a's row %d, outside its %d rows of %d", i, r, len(a)/max(lda, 1), lda))
			}
		}
		_ = b[(k-1)*ldb+n-1]
	}
	_ = c[(m-1)*ldc+n-1]
	var ap, bp *C.float
	var rp *C.ptrdiff_t
	if k > 0 {
		ap, bp = f32p(a), f32p(b)
		if unsafe.Sizeof(rows[0]) == unsafe.Sizeof(C.ptrdiff_t(0)) {
			rp = (*C.ptrdiff_t)(unsafe.Pointer(&rows[0]))
		} else {
			wide := make([]C.ptrdiff_t, m)
			for i, r := range rows {
				wide[i] = C.ptrdiff_t(r)
			}
			rp = &wide[0]
		}
	}
	C.wm_gemm_width(0, C.ptrdiff_t(m), C.ptrdiff_t(n), C.ptrdiff_t(k), C.float(alpha), ap, C.ptrdiff_t(lda),
		rp, bp, C.ptrdiff_t(ldb), C.float(beta), f32p(c), C.ptrdiff_t(ldc))
}
