//go:build openblas

package ops

// The float32 multiply-add peak of one core, to set a kernel's or a step's
// GFLOP/s against what the core can do at all (BenchmarkFMAPeak). The
// ceiling `wm bench` reports is OpenBLAS's rate on a 1024² product, which
// lies below this peak; the 64-wide kernel reaches the peak when its
// operands are warm (docs/performance.md, "What a core of this Xeon allows,
// and five ideas measured, not kept").

/*
// cgo joins the CFLAGS of all the package's files and the last -O wins:
// every file says -O3 (see activations_openblas.go).
#cgo CFLAGS: -O3
#include <stddef.h>
#include "wm_avx2_switch.h"

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#include <immintrin.h>

// WM_FMA_CHAINS independent chains of multiply-adds: enough to cover the
// latency of two FMA units (4 cycles each, so 8 in flight) with room.
#define WM_FMA_CHAINS 24

// wm_fma_peak16 runs rounds × WM_FMA_CHAINS 16-lane multiply-adds, each
// chain depending only on itself, and returns a value of them all so that
// none is left out.
__attribute__((target("avx512f"))) static float wm_fma_peak16(long rounds) {
	__m512 acc[WM_FMA_CHAINS];
	const __m512 m = _mm512_set1_ps(0.999999f), a = _mm512_set1_ps(1e-7f);
	for (int i = 0; i < WM_FMA_CHAINS; i++) acc[i] = _mm512_set1_ps((float)i);
	for (long r = 0; r < rounds; r++) {
		_Pragma("GCC unroll 24") for (int i = 0; i < WM_FMA_CHAINS; i++) acc[i] = _mm512_fmadd_ps(acc[i], m, a);
	}
	__m512 s = acc[0];
	for (int i = 1; i < WM_FMA_CHAINS; i++) s = _mm512_add_ps(s, acc[i]);
	return _mm512_reduce_add_ps(s);
}

// wm_fma_peak8 is wm_fma_peak16 on eight lanes (AVX2 and FMA).
__attribute__((target("avx2,fma"))) static float wm_fma_peak8(long rounds) {
	__m256 acc[WM_FMA_CHAINS];
	const __m256 m = _mm256_set1_ps(0.999999f), a = _mm256_set1_ps(1e-7f);
	for (int i = 0; i < WM_FMA_CHAINS; i++) acc[i] = _mm256_set1_ps((float)i);
	for (long r = 0; r < rounds; r++) {
		_Pragma("GCC unroll 24") for (int i = 0; i < WM_FMA_CHAINS; i++) acc[i] = _mm256_fmadd_ps(acc[i], m, a);
	}
	__m256 s = acc[0];
	for (int i = 1; i < WM_FMA_CHAINS; i++) s = _mm256_add_ps(s, acc[i]);
	float l[8];
	_mm256_storeu_ps(l, s);
	return ((l[0] + l[1]) + (l[2] + l[3])) + ((l[4] + l[5]) + (l[6] + l[7]));
}

// wm_fma_peak runs rounds of the lanes-wide loop, its value into *out, and
// returns 1, or 0 when the CPU has no such vectors (16 lanes: AVX-512 F;
// 8: AVX2 and FMA).
static int wm_fma_peak(int lanes, long rounds, float *out) {
	__builtin_cpu_init();
	if (lanes == 16 && __builtin_cpu_supports("avx512f")) {
		*out = wm_fma_peak16(rounds);
		return 1;
	}
	if (lanes == 8 && wm_cpu_avx2(1)) {
		*out = wm_fma_peak8(rounds);
		return 1;
	}
	return 0;
}
#else
#define WM_FMA_CHAINS 24
static int wm_fma_peak(int lanes, long rounds, float *out) { return 0; }
#endif
*/
import "C"

import "github.com/pkg/errors"

// fmaPeakFLOPs is the floating-point operations fmaPeak's rounds run at a
// width of lanes: two (a multiply and an add) per lane of each chain's
// multiply-add.
func fmaPeakFLOPs(lanes int, rounds int64) float64 {
	return 2 * float64(lanes) * float64(C.WM_FMA_CHAINS) * float64(rounds)
}

// fmaPeak runs rounds of independent float32 multiply-adds on vectors of
// lanes (16: AVX-512, 8: AVX2 with FMA), as many in flight as two FMA units
// can take, and returns their value (so that the work is not left out),
// or an error when the CPU has no such vectors. Timed, with fmaPeakFLOPs,
// it is one core's multiply-add peak at that width.
func fmaPeak(lanes int, rounds int64) (float32, error) {
	var v C.float
	if C.wm_fma_peak(C.int(lanes), C.long(rounds), &v) == 0 {
		return 0, errors.Errorf("fma peak: this CPU has no %d-lane float32 multiply-add (16: AVX-512 F, 8: AVX2 with FMA)", lanes)
	}
	return float32(v), nil
}
