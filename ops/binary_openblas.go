//go:build openblas

package ops

// With the openblas build tag (cgo), the float32 sums and products of Add
// and Mul (binary.go) run in C, eight values at a time under AVX2: Go
// compiles these loops one value at a time, 275 µs for a residual add of
// a million values where a copy of them takes 64 µs. Each value is one
// IEEE add or multiply in either language, so the results are the same
// bits (TestBinaryKernelsMatchGo).

/*
// cgo joins the CFLAGS of all the package's files and the last -O wins:
// every file says -O3 (see activations_openblas.go).
#cgo CFLAGS: -O3
#include <stddef.h>
#include "wm_avx2_switch.h"

#define WM_BINARY_KERNELS(SUFFIX, ATTR)                                                                          \
	ATTR static void wm_add_##SUFFIX(float *y, const float *a, const float *b, ptrdiff_t n) {                   \
		for (ptrdiff_t i = 0; i < n; i++) y[i] = a[i] + b[i];                                                  \
	}                                                                                                         \
	ATTR static void wm_mul_##SUFFIX(float *y, const float *a, const float *b, ptrdiff_t n) {                   \
		for (ptrdiff_t i = 0; i < n; i++) y[i] = a[i] * b[i];                                                  \
	}                                                                                                         \
	ATTR static void wm_mul_grad_##SUFFIX(float *da, float *db, const float *g, const float *a, const float *b, \
	                                     ptrdiff_t n) {                                                       \
		for (ptrdiff_t i = 0; i < n; i++) {                                                                    \
			da[i] = g[i] * b[i];                                                                               \
			db[i] = g[i] * a[i];                                                                               \
		}                                                                                                     \
	}

WM_BINARY_KERNELS(any, )
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
WM_BINARY_KERNELS(avx2, __attribute__((target("avx2"))))
#else
WM_BINARY_KERNELS(avx2, )
#endif

WM_AVX2_SWITCH(wm_bin, 0)
static void wm_add(float *y, const float *a, const float *b, ptrdiff_t n) {
	if (wm_bin_avx2) wm_add_avx2(y, a, b, n);
	else wm_add_any(y, a, b, n);
}
static void wm_mul(float *y, const float *a, const float *b, ptrdiff_t n) {
	if (wm_bin_avx2) wm_mul_avx2(y, a, b, n);
	else wm_mul_any(y, a, b, n);
}
static void wm_mul_grad(float *da, float *db, const float *g, const float *a, const float *b, ptrdiff_t n) {
	if (wm_bin_avx2) wm_mul_grad_avx2(da, db, g, a, b, n);
	else wm_mul_grad_any(da, db, g, a, b, n);
}
*/
import "C"

// binaryAVX2 selects the AVX2 variant of Add's and Mul's kernels (where the
// CPU has it) or the portable one, and says which is in use;
// setKernelLevel calls it.
func binaryAVX2(on bool) bool {
	return C.wm_bin_set_avx2(cbool(on)) != 0
}

// add32 sets y = a + b over len(y); a and b must be at least as long.
func add32(y, a, b []float32) {
	if len(y) > 0 {
		_, _ = a[len(y)-1], b[len(y)-1]
		C.wm_add(f32p(y), f32p(a), f32p(b), C.ptrdiff_t(len(y)))
	}
}

// mul32 sets y = a ⊙ b over len(y); a and b must be at least as long.
func mul32(y, a, b []float32) {
	if len(y) > 0 {
		_, _ = a[len(y)-1], b[len(y)-1]
		C.wm_mul(f32p(y), f32p(a), f32p(b), C.ptrdiff_t(len(y)))
	}
}

// mulGrad32 sets da = g ⊙ b and db = g ⊙ a over len(g).
func mulGrad32(da, db, g, a, b []float32) {
	if n := len(g); n > 0 {
		_, _, _, _ = da[n-1], db[n-1], a[n-1], b[n-1]
		C.wm_mul_grad(f32p(da), f32p(db), f32p(g), f32p(a), f32p(b), C.ptrdiff_t(n))
	}
}
