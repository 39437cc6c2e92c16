//go:build openblas

package ops

// With the openblas build tag (cgo), float32 matrices are transposed in C:
// eight-by-eight tiles through AVX2's unpack, shuffle and lane permutes
// (forty instructions a tile, where the Go loop of transposeTiles moves
// one value at a time, 0.4 ns each here), the edges one value at a time.
// Data only moves, so every variant gives the same matrix
// (TestTransposeRowsMatchesGo).

/*
#cgo CFLAGS: -O3
#include <stddef.h>
#include "wm_avx2_switch.h"

// wm_transpose_any sets dst[j*rows + i] = src[i*ld + j] for i < rows, j < cols.
static void wm_transpose_any(float *dst, const float *src, ptrdiff_t ld, ptrdiff_t rows, ptrdiff_t cols) {
	for (ptrdiff_t i = 0; i < rows; i++)
		for (ptrdiff_t j = 0; j < cols; j++) dst[j * rows + i] = src[i * ld + j];
}

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#include <immintrin.h>

// wm_transpose8_avx2 transposes the 8×8 tile at src (row stride ld) into dst
// (row stride ldd): pairs of rows interleaved, then pairs of pairs, then the
// 128-bit halves exchanged.
__attribute__((target("avx2"))) static inline void wm_transpose8_avx2(float *dst, ptrdiff_t ldd, const float *src,
                                                                       ptrdiff_t ld) {
	__m256 r0 = _mm256_loadu_ps(src), r1 = _mm256_loadu_ps(src + ld), r2 = _mm256_loadu_ps(src + 2 * ld),
	       r3 = _mm256_loadu_ps(src + 3 * ld), r4 = _mm256_loadu_ps(src + 4 * ld), r5 = _mm256_loadu_ps(src + 5 * ld),
	       r6 = _mm256_loadu_ps(src + 6 * ld), r7 = _mm256_loadu_ps(src + 7 * ld);
	__m256 t0 = _mm256_unpacklo_ps(r0, r1), t1 = _mm256_unpackhi_ps(r0, r1), t2 = _mm256_unpacklo_ps(r2, r3),
	       t3 = _mm256_unpackhi_ps(r2, r3), t4 = _mm256_unpacklo_ps(r4, r5), t5 = _mm256_unpackhi_ps(r4, r5),
	       t6 = _mm256_unpacklo_ps(r6, r7), t7 = _mm256_unpackhi_ps(r6, r7);
	__m256 u0 = _mm256_shuffle_ps(t0, t2, _MM_SHUFFLE(1, 0, 1, 0)), u1 = _mm256_shuffle_ps(t0, t2, _MM_SHUFFLE(3, 2, 3, 2)),
	       u2 = _mm256_shuffle_ps(t1, t3, _MM_SHUFFLE(1, 0, 1, 0)), u3 = _mm256_shuffle_ps(t1, t3, _MM_SHUFFLE(3, 2, 3, 2)),
	       u4 = _mm256_shuffle_ps(t4, t6, _MM_SHUFFLE(1, 0, 1, 0)), u5 = _mm256_shuffle_ps(t4, t6, _MM_SHUFFLE(3, 2, 3, 2)),
	       u6 = _mm256_shuffle_ps(t5, t7, _MM_SHUFFLE(1, 0, 1, 0)), u7 = _mm256_shuffle_ps(t5, t7, _MM_SHUFFLE(3, 2, 3, 2));
	_mm256_storeu_ps(dst, _mm256_permute2f128_ps(u0, u4, 0x20));
	_mm256_storeu_ps(dst + ldd, _mm256_permute2f128_ps(u1, u5, 0x20));
	_mm256_storeu_ps(dst + 2 * ldd, _mm256_permute2f128_ps(u2, u6, 0x20));
	_mm256_storeu_ps(dst + 3 * ldd, _mm256_permute2f128_ps(u3, u7, 0x20));
	_mm256_storeu_ps(dst + 4 * ldd, _mm256_permute2f128_ps(u0, u4, 0x31));
	_mm256_storeu_ps(dst + 5 * ldd, _mm256_permute2f128_ps(u1, u5, 0x31));
	_mm256_storeu_ps(dst + 6 * ldd, _mm256_permute2f128_ps(u2, u6, 0x31));
	_mm256_storeu_ps(dst + 7 * ldd, _mm256_permute2f128_ps(u3, u7, 0x31));
}

// WM_TR_STRIP_ROWS is the block of source rows wm_transpose_avx2 takes in
// column strips (wm_tr_strips).
#define WM_TR_STRIP_ROWS 128

// wm_tr_strips says whether wm_transpose_avx2 takes src's rows in blocks of
// WM_TR_STRIP_ROWS and, within a block, eight columns at a time (each
// eight-column strip wholly written to its eight rows of dst before the
// next), rather than eight rows at a time across all the columns. Eight
// rows at a time write 32 bytes to each of cols rows of dst, rows floats
// apart, and keep every one of those cache lines open until the next eight
// rows fill its other half: more than the level-1 cache holds where cols is
// large, and more than its ways where dst's rows lie a multiple of 1 KiB
// apart (rows % 256 == 0), whose lines fall in a few of its sets. Measured
// in one process, the two orders interleaved (one core of an Intel Xeon,
// family 6 model 207, warm): attention's [1024, 256] keys 0.41× the time
// of eight rows at a time, a [256, 64] batch 0.56×, a [64, 688] weight
// 0.54×, [64, 176] 0.73×, [64, 256] 0.86×; the shapes left to rows (64 ×
// 16, 64 × 64, 64 × 88, 88 × 64, 176 × 64, all within the level-1 cache)
// ran the same or up to 13% slower in strips. Only the order of the
// copies differs, so dst is the same either way.
static inline int wm_tr_strips(ptrdiff_t rows, ptrdiff_t cols) { return cols > 128 || rows % 256 == 0; }

// wm_transpose_avx2 is wm_transpose_any by 8×8 tiles, in the order
// wm_tr_strips chooses; the rows and columns past the last whole tile one
// value at a time.
__attribute__((target("avx2"))) static void wm_transpose_avx2(float *dst, const float *src, ptrdiff_t ld, ptrdiff_t rows,
                                                               ptrdiff_t cols) {
	const ptrdiff_t r8 = rows - rows % 8, c8 = cols - cols % 8;
	if (wm_tr_strips(rows, cols)) {
		for (ptrdiff_t i0 = 0; i0 < r8; i0 += WM_TR_STRIP_ROWS) {
			const ptrdiff_t i1 = i0 + WM_TR_STRIP_ROWS < r8 ? i0 + WM_TR_STRIP_ROWS : r8;
			for (ptrdiff_t j = 0; j < c8; j += 8)
				for (ptrdiff_t i = i0; i < i1; i += 8) wm_transpose8_avx2(dst + j * rows + i, rows, src + i * ld + j, ld);
		}
	} else {
		for (ptrdiff_t i = 0; i < r8; i += 8)
			for (ptrdiff_t j = 0; j < c8; j += 8) wm_transpose8_avx2(dst + j * rows + i, rows, src + i * ld + j, ld);
	}
	for (ptrdiff_t i = 0; i < r8; i++)
		for (ptrdiff_t j = c8; j < cols; j++) dst[j * rows + i] = src[i * ld + j];
	for (ptrdiff_t i = r8; i < rows; i++)
		for (ptrdiff_t j = 0; j < cols; j++) dst[j * rows + i] = src[i * ld + j];
}
#else
#define wm_transpose_avx2 wm_transpose_any
#endif

WM_AVX2_SWITCH(wm_tr, 0)
static void wm_transpose(float *dst, const float *src, ptrdiff_t ld, ptrdiff_t rows, ptrdiff_t cols) {
	if (wm_tr_avx2) wm_transpose_avx2(dst, src, ld, rows, cols);
	else wm_transpose_any(dst, src, ld, rows, cols);
}
*/
import "C"

// transposeAVX2 selects the AVX2 variant of the transpose (where the CPU
// has it) or the portable one, and says which is in use; setKernelLevel
// calls it.
func transposeAVX2(on bool) bool {
	return C.wm_tr_set_avx2(cbool(on)) != 0
}

// transposeRows32 is transposeTiles on float32, in C: dst[j*rows+i] =
// src[i*ld+j] for i < rows, j < cols.
func transposeRows32(dst, src []float32, ld, rows, cols int) {
	if rows == 0 || cols == 0 {
		return
	}
	_, _ = dst[rows*cols-1], src[(rows-1)*ld+cols-1]
	C.wm_transpose(f32p(dst), f32p(src), C.ptrdiff_t(ld), C.ptrdiff_t(rows), C.ptrdiff_t(cols))
}
