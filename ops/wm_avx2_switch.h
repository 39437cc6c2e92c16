// The AVX2 switch of a cgo file's kernels, and the CPU test and switch of
// files with three levels (AVX-512, AVX2, portable): cgo compiles each
// file's preamble on its own, so every file with AVX2 variants keeps a
// switch of its own, which setKernelLevel sets through the file's Go
// function. Included at the top of those preambles.
#ifndef WM_AVX2_SWITCH_H
#define WM_AVX2_SWITCH_H

// wm_cpu_avx2 says whether the CPU runs AVX2 (and FMA, when fma is set).
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
static inline int wm_cpu_avx2(int fma) {
	__builtin_cpu_init();
	return __builtin_cpu_supports("avx2") && (!fma || __builtin_cpu_supports("fma"));
}

// wm_cpu_level is the best of a three-level file's variants the CPU runs:
// 2 with AVX-512 (F and DQ), else 1 with AVX2 (and FMA, when fma is set),
// else 0.
static inline int wm_cpu_level(int fma) {
	__builtin_cpu_init();
	if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq")) return 2;
	return wm_cpu_avx2(fma);
}
#else
static inline int wm_cpu_avx2(int fma) {
	(void)fma;
	return 0;
}
static inline int wm_cpu_level(int fma) {
	(void)fma;
	return 0;
}
#endif

// WM_AVX2_SWITCH(name, fma) defines name##_avx2, set when the file's AVX2
// variants run, and name##_set_avx2(on), which selects them where the CPU
// has AVX2 (and FMA, when fma is set) and returns whether they run.
#define WM_AVX2_SWITCH(name, fma)                          \
	static int name##_avx2 = 0;                            \
	static int name##_set_avx2(int on) {                   \
		name##_avx2 = on && wm_cpu_avx2(fma);              \
		return name##_avx2;                                \
	}

// WM_LEVEL_SWITCH(name, fma) defines name##_level, the variant a
// three-level file's kernels run (2 AVX-512, 1 AVX2, 0 portable), and
// name##_set_level(most), which selects the best variant the CPU has up to
// most (wm_cpu_level(fma)) and returns the level chosen.
#define WM_LEVEL_SWITCH(name, fma)                         \
	static int name##_level = 0;                           \
	static int name##_set_level(int most) {                \
		int l = wm_cpu_level(fma);                         \
		name##_level = l < most ? l : most;                \
		return name##_level;                               \
	}

#endif
