//go:build openblas

package ops

// With the openblas build tag (cgo), Dot8 on float32 runs in C: the AVX2
// loop of wm_dot8.h (the eight lanes in two four-lane registers, as the SSD
// backward's rows and the MoE gate gradient sum them) where the CPU has
// AVX2 and FMA, the portable one otherwise. (An AVX-512 loop with the lanes
// in one register measured no faster on the clipping norm.) Both add the same products in
// the same order as dot8, so C and Go agree to the bit (TestDot8MatchesGo;
// each variant in TestDot8EveryLevel); a fused multiply-add rounds as a
// multiply and an add do, a float32 product being exact in float64.

/*
// cgo joins the CFLAGS of all the package's files and the last -O wins:
// every file says -O3 (see activations_openblas.go).
#cgo CFLAGS: -O3
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("fp-contract=off")
#endif
#include <stddef.h>
#include "wm_avx2_switch.h"
#include "wm_dot8.h"

WM_LEVEL_SWITCH(wm_d8, 1)

static double wm_dot8_f32(const float *a, const float *b, ptrdiff_t n) {
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
	if (wm_d8_level >= 1) return wm_dot8_whole_avx2(a, b, n);
#endif
	return wm_dot8_any(a, b, n);
}
*/
import "C"

// dot8Level selects the variant of Dot8's C loop the CPU has up to the
// kernel level most (AVX-512 runs the AVX2 loop) and returns the level
// chosen; setKernelLevel calls it.
func dot8Level(most int) int { return int(C.wm_d8_set_level(C.int(most))) }

// dot8F32 is dot8 on float32 in C.
func dot8F32(a, b []float32) float64 {
	if len(a) == 0 {
		return 0
	}
	b = b[:len(a)]
	return float64(C.wm_dot8_f32(f32p(a), f32p(b), C.ptrdiff_t(len(a))))
}
