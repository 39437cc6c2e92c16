//go:build openblas

package ops

import (
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// OpenBLAS's SSE-era kernels give way to the widest family the CPU runs;
// kernels with AVX or wider, OpenBLAS's choice knowing the model, stand, as
// do the SSE ones on a CPU without AVX.
func TestBLASCoreUpgrade(t *testing.T) {
	for _, c := range []struct {
		chosen string
		level  int
		want   string
	}{
		{"Prescott", 4, "Cooperlake"}, {"Prescott", 3, "SkylakeX"}, {"Nehalem", 2, "Haswell"},
		{"Core2", 1, "Sandybridge"}, {"Prescott", 0, ""},
		{"Haswell", 4, ""}, {"Zen", 3, ""}, {"SkylakeX", 4, ""}, {"Cooperlake", 4, ""}, {"", 4, ""},
	} {
		if got := blasCoreUpgrade(c.chosen, c.level); got != c.want {
			t.Errorf("blasCoreUpgrade(%q, %d) = %q, want %q", c.chosen, c.level, got, c.want)
		}
	}
}

// OpenBLAS chooses its kernels again when the ops ask (reselectBLASCore),
// and its products are right on the new ones: Haswell's, which any x86-64
// CPU with AVX2 runs, then the kernels the test began with.
func TestReselectBLASCoreRunsProducts(t *testing.T) {
	start := BLASCore()
	if wmCPUBLASLevel() < 2 {
		t.Skip("this CPU has no AVX2 for OpenBLAS's Haswell kernels")
	}
	if !reselectBLASCore("Haswell") {
		t.Skip("this OpenBLAS cannot choose its kernels again (no DYNAMIC_ARCH)")
	}
	defer func() {
		if !reselectBLASCore(start) || BLASCore() != start {
			t.Fatalf("choosing %s again left OpenBLAS on %s", start, BLASCore())
		}
	}()
	if got := BLASCore(); got != "Haswell" {
		t.Fatalf("after choosing Haswell, OpenBLAS runs %s", got)
	}
	r := rand.New(rand.NewSource(3))
	m, n, k := 96, 80, 300
	a, b := normalFloat32s(r, m*k), normalFloat32s(r, k*n)
	c0 := make([]float32, m*n)
	got := append([]float32(nil), c0...)
	gemm(false, false, m, n, k, 1, a, k, b, n, 0, got, n)
	term := func(i, j, q int) float64 { return float64(a[i*k+q]) * float64(b[q*n+j]) }
	checkGemmResult(t, "Haswell kernels", got, c0, m, n, k, n, 0, term)
}

// A process reports the kernels it runs and what the ops replaced, for
// TestBLASCoreChoiceAtLoad, when WM_BLAS_CORE_CHILD is set.
func TestBLASCoreChild(t *testing.T) {
	if os.Getenv("WM_BLAS_CORE_CHILD") == "" {
		t.Skip("run by TestBLASCoreChoiceAtLoad")
	}
	fmt.Printf("core=%s replaced=%s\n", BLASCore(), BLASCoreReplaced())
}

// A process whose environment names OpenBLAS's kernels runs them, even
// the SSE3 ones; one whose environment leaves the choice to OpenBLAS runs
// its choice unless that is SSE-era on a CPU with AVX or wider, and then
// the kernels blasCoreUpgrade names.
func TestBLASCoreChoiceAtLoad(t *testing.T) {
	child := func(env ...string) (core, replaced string) {
		t.Helper()
		cmd := exec.Command(os.Args[0], "-test.run", "^TestBLASCoreChild$", "-test.v")
		for _, kv := range os.Environ() {
			if !strings.HasPrefix(kv, "OPENBLAS_CORETYPE=") {
				cmd.Env = append(cmd.Env, kv)
			}
		}
		cmd.Env = append(cmd.Env, append(env, "WM_BLAS_CORE_CHILD=1")...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("child %v: %v\n%s", env, err, out)
		}
		for _, line := range strings.Split(string(out), "\n") {
			if rest, ok := strings.CutPrefix(line, "core="); ok {
				core, replaced, _ = strings.Cut(rest, " replaced=")
				return core, replaced
			}
		}
		t.Fatalf("child %v printed no core:\n%s", env, out)
		return "", ""
	}
	if core, replaced := child("OPENBLAS_CORETYPE=Prescott"); core != "Prescott" || replaced != "" {
		t.Errorf("OPENBLAS_CORETYPE=Prescott: the child ran %s (replaced %q), want Prescott, not replaced", core, replaced)
	}
	level := wmCPUBLASLevel()
	core, replaced := child()
	switch {
	case replaced == "":
		if want := blasCoreUpgrade(core, level); want != "" {
			t.Errorf("OpenBLAS chose %s on a CPU at level %d and the ops kept it; want %s", core, level, want)
		}
	case core != blasCoreUpgrade(replaced, level):
		t.Errorf("the ops replaced OpenBLAS's %s by %s on a CPU at level %d; want %s", replaced, core, level, blasCoreUpgrade(replaced, level))
	}
	t.Logf("OpenBLAS's own choice here: %s; the ops run %s", map[bool]string{true: core, false: replaced}[replaced == ""], core)
}
