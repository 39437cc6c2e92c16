package wmcli

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"

	"github.com/wonderful-matrices/wonderful-matrices-go/ops"
)

// wm bench measures each configuration in a child process and writes the
// table; with python3-torch present the peer's columns and the ratios are
// filled in and its parameter count matches ours. Each configuration is
// measured in two rounds. Bad sizes and no rounds exit 2.
func TestBench(t *testing.T) {
	var out, errb bytes.Buffer
	if code := Run([]string{"bench", "--sizes", "64x256"}, &out, &errb); code != 2 || !strings.Contains(errb.String(), "d_model x seq_len x batch") {
		t.Errorf("bad size: exit %d, %q", code, errb.String())
	}
	if code := Run([]string{"bench", "--patterns", "(SX)2"}, &out, &errb); code != 2 || !strings.Contains(errb.String(), "unknown letter") {
		t.Errorf("bad pattern: exit %d, %q", code, errb.String())
	}
	if code := Run([]string{"bench", "--rounds", "0"}, &out, &errb); code != 2 || !strings.Contains(errb.String(), "--rounds: must be >= 1, got 0") {
		t.Errorf("no rounds: exit %d, %q", code, errb.String())
	}
	bin, tmp := buildWM(t)
	peer := ""
	if exec.Command("/usr/bin/python3", "-c", "import torch").Run() == nil {
		peer = "/usr/bin/python3"
	}
	file := filepath.Join(tmp, "bench.md")
	malloc, mallocDesc := peerMallocForTests()
	cmd := exec.Command(bin, "bench", "--patterns", "(SM)1;(SE)1 IE", "--sizes", "32x32x2", "--ssd-sizes", "32x64x1", "--procs", "2",
		"--reps", "1", "--rounds", "2", "--experts", "64", "--peer", peer, "--peer-malloc", malloc, "--out", file)
	res, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("wm bench: %v\n%s", err, res)
	}
	md, _ := os.ReadFile(file)
	if peer != "" && !strings.Contains(string(md), "(CPU, float32), allocator "+mallocDesc) {
		t.Errorf("the header does not name the peer's allocator %q:\n%s", mallocDesc, md)
	}
	// Each configuration is measured twice, wm and the peer taking turns.
	if !strings.Contains(string(res), "(SM)1 d=32 t=64 b=1 threads=2, round 2 of 2") || !strings.Contains(string(md), "best of 2 rounds") {
		t.Errorf("the second round is missing from the progress or the file's header:\n%s", res)
	}
	// The rounds are spread over the run: the last configuration's first
	// round comes before the first configuration's second.
	last1 := strings.Index(string(res), "(SE)1 IE d=32 t=32 b=2 threads=2, round 1 of 2")
	first2 := strings.Index(string(res), "(SM)1 d=32 t=32 b=2 threads=2, round 2 of 2")
	if last1 < 0 || first2 < 0 || last1 > first2 {
		t.Errorf("the rounds are not spread over the run (round 1 of the last configuration at %d, round 2 of the first at %d):\n%s", last1, first2, res)
	}
	// The peer's layout names its ATen kernels where it ran two sets (a CPU
	// with AVX-512).
	aten := ""
	if k, _ := peerATenKernels("auto", cpuFlags()); len(k) > 1 {
		aten = "( AVX2| AVX512)"
	}
	// Batch 2 on 2 cores runs wm as one graph, as 2 shards and as 2 shards
	// of one thread each (the column names the fastest); batch 1 only as
	// one graph.
	for _, row := range []string{`\| \(SM\)1 \| 32 \| 32 \| 2 \| 2 \| (1|2|2×1) \| (—|(2×1|1×2)` + aten + `) \| \d+ \|`, `\| \(SM\)1 \| 32 \| 64 \| 1 \| 2 \| 1 \|`, `\| \(SE\)1 IE \| 32 \| 32 \| 2 \| 2 \| (1|2|2×1) \|`} {
		if !regexp.MustCompile(row).Match(md) {
			t.Errorf("bench.md lacks a row %s:\n%s", row, md)
		}
	}
	// The computed part: the BLAS rate and each row's matrix-product work.
	if !regexp.MustCompile(`\| \(SM\)1 d32 t32 b2 ×2 \| [1-9]\d* \| \d+\.\d\d \|`).Match(md) || !strings.Contains(string(md), "## Performance targets") {
		t.Errorf("bench.md lacks the ceiling table or the targets:\n%s", md)
	}
	if regexp.MustCompile(`\(SE\)1 IE \| 32 \| 64`).Match(md) {
		t.Error("the SSD-only sizes were measured for a pattern with CDMoE and IFA")
	}
	if peer == "" {
		t.Log("no python3-torch: the peer columns are not checked")
		return
	}
	// On 2 cores the peer runs in both thread layouts and names the faster,
	// and the header names the ATen kernels it ran.
	if !regexp.MustCompile(`\| 2 \| [12] \| (2×1|1×2)`+aten+` \| \d+ \| \d+ \| \d+\.\d\d× \|`).Match(md) || strings.Contains(string(res), "not like for like") {
		t.Errorf("peer ratios missing or parameter counts differ:\n%s\n%s", md, res)
	}
	if !regexp.MustCompile(`ATen kernels \(peer's best training figures\): (AVX2|AVX512|NO AVX)`).Match(md) {
		t.Errorf("bench.md's header does not name the peer's ATen kernels:\n%s", md)
	}
	if !regexp.MustCompile(`The peer's evaluation, timed eagerly and as torch.jit.optimize_for_inference makes the traced, frozen model, the faster kept: (optimized|eager) in \d`).Match(md) {
		t.Errorf("bench.md's header does not say which form the peer's evaluation figures came from:\n%s", md)
	}
	// Both sides' processes inherit wm bench's scheduling policy: batch,
	// where the system allows it.
	want := `Scheduling policy: wm batch \(SCHED_BATCH\); peer batch \(SCHED_BATCH\)\.`
	if err := ops.SetSchedulingPolicy("batch"); err != nil {
		t.Logf("SCHED_BATCH refused here (%v): only checking that both sides ran under one policy", err)
		want = `Scheduling policy: wm (\w+) \(SCHED_\w+\); peer \1 \(SCHED_\w+\)\.`
	}
	if !regexp.MustCompile(want).Match(md) {
		t.Errorf("bench.md's header does not name one scheduling policy for both sides (%s):\n%s", want, md)
	}
}

// A row on p threads confines both sides to the same p cores (--pin, the
// default on Linux), and the header says how many each side had.
func TestBenchCoresOfEachSide(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("CPU masks are Linux's")
	}
	if exec.Command("/usr/bin/python3", "-c", "import torch").Run() != nil {
		t.Skip("no python3-torch: the peer's cores are not checked")
	}
	bin, tmp := buildWM(t)
	file := filepath.Join(tmp, "bench.md")
	malloc, _ := peerMallocForTests()
	cmd := exec.Command(bin, "bench", "--patterns", "(SM)1", "--sizes", "32x32x2", "--ssd-sizes", "", "--procs", "1",
		"--reps", "1", "--rounds", "1", "--peer", "/usr/bin/python3", "--peer-malloc", malloc, "--out", file)
	if res, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("wm bench: %v\n%s", err, res)
	}
	md, _ := os.ReadFile(file)
	want := "Cores: wm 1; peer 1 (each measurement of a row on p threads confined to the same p cores, both sides alike: --pin)."
	if !strings.Contains(string(md), want) {
		t.Errorf("bench.md's header lacks %q:\n%s", want, md)
	}
}

// peerMallocForTests is the peer allocator the tests that run the peer
// give wm bench: jemalloc where libjemalloc2 is installed, else glibc's
// malloc (a test machine need not have the package); and how the report's
// header names it.
func peerMallocForTests() (choice, desc string) {
	if _, desc, err := peerAllocator("jemalloc", jemallocDirs); err == nil {
		return "jemalloc", desc
	}
	return "glibc", "glibc's malloc"
}
