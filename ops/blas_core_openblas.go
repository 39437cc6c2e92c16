//go:build openblas

package ops

// #cgo LDFLAGS: -lopenblas -ldl
// #include <dlfcn.h>
// #include <stdlib.h>
// char *openblas_get_corename(void);
//
// // wm_blas_reselect runs OpenBLAS's choice of kernels again as it runs
// // when the library loads (gotoblas_dynamic_init), with OPENBLAS_CORETYPE
// // naming core for the length of the call: 1 when it ran, 0 when this
// // OpenBLAS has no such entry points (one built for a single CPU, without
// // DYNAMIC_ARCH), found at run time so that such a library still links.
// // It must run before any BLAS call.
// static int wm_blas_reselect(const char *core) {
// 	void (*quit)(void) = (void (*)(void))dlsym(RTLD_DEFAULT, "gotoblas_dynamic_quit");
// 	void (*init)(void) = (void (*)(void))dlsym(RTLD_DEFAULT, "gotoblas_dynamic_init");
// 	if (quit == NULL || init == NULL) return 0;
// 	setenv("OPENBLAS_CORETYPE", core, 1);
// 	quit();
// 	init();
// 	unsetenv("OPENBLAS_CORETYPE");
// 	return 1;
// }
//
// // wm_cpu_blas_level is the widest of OpenBLAS's x86-64 kernel families
// // this CPU and its OS run, by the features OpenBLAS 0.3.25 checks when it
// // does not know the model: 4 AVX-512 with BF16 (Cooperlake), 3 AVX-512
// // with VL (SkylakeX), 2 AVX2 (Haswell), 1 AVX (Sandybridge), 0 none.
// static int wm_cpu_blas_level(void) {
// 	__builtin_cpu_init();
// 	if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx2")) {
// 		return __builtin_cpu_supports("avx512bf16") ? 4 : 3;
// 	}
// 	if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return 2;
// 	return __builtin_cpu_supports("avx") ? 1 : 0;
// }
import "C"

import (
	"os"
	"unsafe"
)

// BLASCore names the kernels OpenBLAS runs on this CPU ("Haswell",
// "SkylakeX", "Cooperlake", ...), as openblas_get_corename reports them.
// OpenBLAS chooses them from the CPU when it loads, unless the environment
// names them in OPENBLAS_CORETYPE; its sgemm on a Zen 5 EPYC ran at about
// 117 GFLOP/s on one core with the AVX2 (Haswell) kernels and 226 with the
// AVX-512 ones. Where OpenBLAS fell back to its SSE3 kernels on a CPU with
// wider vectors, the ops chose again when they loaded (BLASCoreReplaced).
// wm info and wm bench report it, for wm and for the peer.
func BLASCore() string { return C.GoString(C.openblas_get_corename()) }

// BLASCoreReplaced names the kernels OpenBLAS chose when it loaded if the
// ops replaced them (see blasCoreAtLoad), "" if they run OpenBLAS's own
// choice.
func BLASCoreReplaced() string { return blasCoreAtLoad.replaced }

// blasCoreChoice is what the ops found and did about OpenBLAS's kernels
// when the package loaded.
type blasCoreChoice struct {
	core     string // the kernels running after the ops' choice
	replaced string // OpenBLAS's own choice, if the ops replaced it
}

// blasCoreAtLoad is the kernels the ops run on. OpenBLAS before 0.3.25
// takes its SSE3 kernels (Prescott) on an Intel family-6 model it does not
// know: its model switch falls through to the Pentium 4 case (OpenBLAS
// commit e12aaed, "Fix unwanted fallthrough from Intel Family 6 to 15 in
// case of identification failure", in 0.3.25). Debian 12 ships 0.3.21, so
// on an Emerald Rapids Xeon (family 6, model 207) its sgemm ran at 43
// GFLOP/s on one core, against 268 with the AVX-512 kernels. When
// OpenBLAS chose kernels narrower than AVX and the CPU runs AVX or wider,
// and OPENBLAS_CORETYPE is not set (a value there, any value, is the
// user's choice and stands), the ops choose the kernels 0.3.25 falls back
// to from the CPU's features, before any product runs.
var blasCoreAtLoad = chooseBLASCore()

// chooseBLASCore replaces OpenBLAS's SSE-era kernels by the ones the CPU's
// features call for (blasCoreUpgrade), when the environment leaves the
// choice to OpenBLAS and this OpenBLAS can choose again.
func chooseBLASCore() blasCoreChoice {
	chosen := BLASCore()
	if _, named := os.LookupEnv("OPENBLAS_CORETYPE"); named {
		return blasCoreChoice{core: chosen}
	}
	want := blasCoreUpgrade(chosen, wmCPUBLASLevel())
	if want == "" || !reselectBLASCore(want) {
		return blasCoreChoice{core: chosen}
	}
	return blasCoreChoice{core: BLASCore(), replaced: chosen}
}

// reselectBLASCore has OpenBLAS choose its kernels again as it does when it
// loads, with OPENBLAS_CORETYPE naming core for that choice only (a name
// this OpenBLAS cannot force, such as 0.3.21's Cooperlake, takes its
// choice by the CPU's features): false when this OpenBLAS cannot choose
// again (built without DYNAMIC_ARCH). No product may run meanwhile.
func reselectBLASCore(core string) bool {
	name := C.CString(core)
	defer C.free(unsafe.Pointer(name))
	return C.wm_blas_reselect(name) != 0
}

// wmCPUBLASLevel is the widest of OpenBLAS's kernel families this CPU runs
// (wm_cpu_blas_level): 4 Cooperlake, 3 SkylakeX, 2 Haswell, 1 Sandybridge,
// 0 none of them.
func wmCPUBLASLevel() int { return int(C.wm_cpu_blas_level()) }

// blasSSECores are OpenBLAS's x86-64 kernel families without AVX, as
// openblas_get_corename names them: what it takes for a CPU it does not
// recognise (Prescott), or for one that predates AVX.
var blasSSECores = map[string]bool{
	"Prescott": true, "Katmai": true, "Coppermine": true, "Northwood": true, "Banias": true,
	"Atom": true, "Core2": true, "Penryn": true, "Dunnington": true, "Nehalem": true,
	"Athlon": true, "Opteron": true, "Opteron_SSE3": true, "Barcelona": true, "Nano": true,
}

// blasCoreUpgrade names the kernels to run in place of OpenBLAS's choice
// chosen on a CPU whose widest kernel family is level (wm_cpu_blas_level):
// "" when chosen stands, which is whenever it uses AVX or wider (OpenBLAS
// chose knowing the model) or the CPU has nothing wider.
func blasCoreUpgrade(chosen string, level int) string {
	if !blasSSECores[chosen] {
		return ""
	}
	switch level {
	case 4:
		return "Cooperlake"
	case 3:
		return "SkylakeX"
	case 2:
		return "Haswell"
	case 1:
		return "Sandybridge"
	}
	return ""
}

// blasSmallKernels says whether OpenBLAS's kernels for this CPU include
// the small-matrix ones gemmTall blocks its products for (tallRowBlock).
var blasSmallKernels = hasSmallKernels(blasCoreAtLoad.core)

// hasSmallKernels says whether OpenBLAS's core (openblas_get_corename) has
// sgemm's small-matrix kernels: in 0.3.21, the SkylakeX family.
func hasSmallKernels(core string) bool {
	switch core {
	case "SkylakeX", "Cooperlake", "SapphireRapids":
		return true
	}
	return false
}

// blasPackedBlocks says whether ops that run a chain of products by blocks
// of rows (SwiGLU) should also do so where OpenBLAS takes the products on
// its packed kernels: true in this build. (A variable, so that the tests
// can turn the path off and on.)
var blasPackedBlocks = true
