package train

import (
	"os"
	"runtime/pprof"
	"testing"
)

// profileSteps starts a CPU profile of the steps BenchmarkTrainStep and
// BenchmarkEvalStep time, when WM_STEP_CPUPROFILE names a file, and
// returns the function that stops it. -cpuprofile covers the whole run:
// the model's set-up and, above all, each buffer's first use, whose page
// faults are charged to whichever kernel first writes it. In 12-step
// profiles of d_model-256 steps those made the residual adds look like
// 2.8% of a step (0.6% in steady state) and a MoE combine's clearing like
// 1.3% (nothing in steady state). The profile starts after the benchmark's
// untimed first step; Go runs each benchmark once with b.N = 1 before its
// timed run, and that run's profile is overwritten by the next, so the
// file holds the last run's steps. Select one benchmark (one pattern, size
// and layout): each overwrites the file.
func profileSteps(b *testing.B) (stop func()) {
	path := os.Getenv("WM_STEP_CPUPROFILE")
	if path == "" {
		return func() {}
	}
	f, err := os.Create(path)
	if err != nil {
		b.Fatalf("WM_STEP_CPUPROFILE: %v", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		b.Fatalf("WM_STEP_CPUPROFILE %s: %v (is -cpuprofile set too?)", path, err)
	}
	return func() {
		pprof.StopCPUProfile()
		if err := f.Close(); err != nil {
			b.Errorf("WM_STEP_CPUPROFILE %s: %v", path, err)
		}
	}
}
