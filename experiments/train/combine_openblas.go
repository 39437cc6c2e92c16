//go:build openblas

package train

// With the openblas build tag (cgo), the float32 sums of the shards'
// gradients (combineInto) run in C, eight values at a time with AVX2 where
// the CPU has it. Two shards, wm's layout on two cores, take one pass:
// dst = (0 + w0·a) + w1·b, reading both shards' gradients once and writing
// the sum once, where Go's loops took a pass per shard, one value at a
// time (1.4% of a two-thread (SR)3 AR training step at d_model 64). Each
// value is the same float32 multiplies and adds in the same order, with no
// fused multiply-add (fp-contract off; the AVX2 loop spells out each
// operation), so C and Go agree to the bit (TestCombineKernelsMatchGo).

/*
#cgo CFLAGS: -O2
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("fp-contract=off")
#endif
#include <stddef.h>

// wm_combine2_any: dst = (0 + wa·a) + wb·b, or dst = 0 + wa·a when b is NULL.
static void wm_combine2_any(float *dst, const float *a, float wa, const float *b, float wb, ptrdiff_t n) {
	if (b == NULL)
		for (ptrdiff_t j = 0; j < n; j++) dst[j] = 0.0f + wa * a[j];
	else
		for (ptrdiff_t j = 0; j < n; j++) dst[j] = (0.0f + wa * a[j]) + wb * b[j];
}

// wm_combine_add_any: dst += w·a.
static void wm_combine_add_any(float *dst, const float *a, float w, ptrdiff_t n) {
	for (ptrdiff_t j = 0; j < n; j++) dst[j] += w * a[j];
}

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#include <immintrin.h>

__attribute__((target("avx2"))) static void wm_combine2_avx2(float *dst, const float *a, float wa, const float *b,
                                                             float wb, ptrdiff_t n) {
	const __m256 va = _mm256_set1_ps(wa), vb = _mm256_set1_ps(wb), zero = _mm256_setzero_ps();
	ptrdiff_t j = 0;
	if (b == NULL)
		for (; j + 8 <= n; j += 8)
			_mm256_storeu_ps(dst + j, _mm256_add_ps(zero, _mm256_mul_ps(va, _mm256_loadu_ps(a + j))));
	else
		for (; j + 8 <= n; j += 8) {
			__m256 s = _mm256_add_ps(zero, _mm256_mul_ps(va, _mm256_loadu_ps(a + j)));
			_mm256_storeu_ps(dst + j, _mm256_add_ps(s, _mm256_mul_ps(vb, _mm256_loadu_ps(b + j))));
		}
	wm_combine2_any(dst + j, a + j, wa, b == NULL ? NULL : b + j, wb, n - j);
}

__attribute__((target("avx2"))) static void wm_combine_add_avx2(float *dst, const float *a, float w, ptrdiff_t n) {
	const __m256 vw = _mm256_set1_ps(w);
	ptrdiff_t j = 0;
	for (; j + 8 <= n; j += 8)
		_mm256_storeu_ps(dst + j, _mm256_add_ps(_mm256_loadu_ps(dst + j), _mm256_mul_ps(vw, _mm256_loadu_ps(a + j))));
	wm_combine_add_any(dst + j, a + j, w, n - j);
}
#else
#define wm_combine2_avx2 wm_combine2_any
#define wm_combine_add_avx2 wm_combine_add_any
#endif

static void wm_combine2(float *dst, const float *a, float wa, const float *b, float wb, ptrdiff_t n, int avx2) {
	if (avx2) wm_combine2_avx2(dst, a, wa, b, wb, n);
	else wm_combine2_any(dst, a, wa, b, wb, n);
}

static void wm_combine_add(float *dst, const float *a, float w, ptrdiff_t n, int avx2) {
	if (avx2) wm_combine_add_avx2(dst, a, w, n);
	else wm_combine_add_any(dst, a, w, n);
}
*/
import "C"

import "unsafe"

// combineAVX2 says whether this CPU runs the AVX2 loops (AdamW's kernel
// has them at level 1 and above); tests turn it off to check the portable
// ones.
var combineAVX2 = adamwLevel >= 1

func f32ptr(s []float32) *C.float { return (*C.float)(unsafe.Pointer(&s[0])) }

// combine2f32 sets dst = (0 + wa·a) + wb·b, or dst = 0 + wa·a when b is nil
// (a and b as long as dst).
func combine2f32(dst, a []float32, wa float32, b []float32, wb float32) {
	if len(dst) == 0 {
		return
	}
	a = a[:len(dst)]
	var bp *C.float
	if b != nil {
		bp = f32ptr(b[:len(dst)])
	}
	C.wm_combine2(f32ptr(dst), f32ptr(a), C.float(wa), bp, C.float(wb), C.ptrdiff_t(len(dst)), cint(combineAVX2))
}

// combineAddF32 adds w·a into dst.
func combineAddF32(dst, a []float32, w float32) {
	if len(dst) == 0 {
		return
	}
	C.wm_combine_add(f32ptr(dst), f32ptr(a[:len(dst)]), C.float(w), C.ptrdiff_t(len(dst)), cint(combineAVX2))
}

func cint(b bool) C.int {
	if b {
		return 1
	}
	return 0
}

// combineWeighted32 is combineWeightedGo on float32 in C, the first two
// terms in one pass.
func combineWeighted32(dst []float32, srcs [][]float32, ws []float32) {
	switch len(srcs) {
	case 0:
		clear(dst)
		return
	case 1:
		combine2f32(dst, srcs[0], ws[0], nil, 0)
	default:
		combine2f32(dst, srcs[0], ws[0], srcs[1], ws[1])
	}
	for k := 2; k < len(srcs); k++ {
		combineAddF32(dst, srcs[k], ws[k])
	}
}
