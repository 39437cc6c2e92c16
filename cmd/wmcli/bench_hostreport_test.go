package wmcli

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// reportWithHost is the start of a report of wm bench made on host h, as
// its header is written.
func reportWithHost(date, cpu string, cores int, kernels string) string {
	return "# wm bench\n\n" + date + ": " + strconv.Itoa(cores) + " cores (" + cpu + "), Go go1.26.8, BLAS openblas, float32 kernels avx512; peer: PyTorch 1.13.0a0 (CPU, float32), allocator jemalloc. Command: wm bench --reps 8. OpenBLAS kernels: wm " + kernels + "; peer " + kernels + " (chosen by OpenBLAS from the CPU).\n\n| pattern |\n"
}

var (
	epyc  = benchHost{cpu: "AMD EPYC, family 26, model 2", cores: 2, kernels: "Cooperlake"}
	xeon  = benchHost{cpu: "Intel(R) Xeon(R) Processor, family 6, model 167", cores: 2, kernels: "SkylakeX"}
	other = benchHost{cpu: "AMD EPYC, family 25, model 17", cores: 2, kernels: "Cooperlake"}
)

// The header names the host; parentheses inside the processor's name are
// kept, and a file that is not a report is passed over.
func TestParseBenchHost(t *testing.T) {
	for _, want := range []benchHost{epyc, xeon} {
		got, ok, err := parseBenchHost("r.md", reportWithHost("2026-12-01", want.cpu, want.cores, want.kernels))
		if err != nil || !ok || got != want {
			t.Errorf("parseBenchHost = %+v, %v, %v; want %+v", got, ok, err, want)
		}
	}
	if _, ok, err := parseBenchHost("notes.md", "# Notes\n\nbench notes\n"); ok || err != nil {
		t.Errorf("a file that is not a report: ok %v, err %v; want false, nil", ok, err)
	}
	_, ok, err := parseBenchHost("r.md", "# wm bench\n\nno host here\n")
	if !ok || err == nil || !strings.Contains(err.Error(), "r.md:3") {
		t.Errorf("a report without a host: ok %v, err %v; want true and an error naming r.md:3", ok, err)
	}
}

// Every committed report parses, names the host it was made on, and is the
// one reportForHost finds for that host (so make bench-peer on a host of
// that kind writes to it and checks against it).
func TestCommittedReportsHaveHosts(t *testing.T) {
	paths, err := filepath.Glob("../../docs/bench*.md")
	if err != nil {
		t.Fatal(err)
	}
	if len(paths) == 0 {
		t.Skip("no docs/bench*.md beside the package")
	}
	for _, p := range paths {
		text, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		h, ok, err := parseBenchHost(p, string(text))
		if err != nil || !ok || h.cpu == "" || h.cores == 0 || h.kernels == "" {
			t.Errorf("%s: host %+v, ok %v, err %v", p, h, ok, err)
			continue
		}
		path, found, err := reportForHost("../../docs", h)
		if err != nil || !found || filepath.Base(path) != filepath.Base(p) {
			t.Errorf("reportForHost(docs, the host of %s) = %q, %v, %v; want that report", p, path, found, err)
		}
	}
}

func TestHostReportName(t *testing.T) {
	for h, want := range map[benchHost]string{
		epyc:                           "bench-amd-epyc-family-26-model-2-2cores.md",
		xeon:                           "bench-intel-xeon-processor-family-6-model-167-2cores.md",
		{cpu: "unknown CPU", cores: 4}: "bench-unknown-cpu-4cores.md",
		{cpu: "(R)", cores: 1}:         "bench-unknown-cpu-1cores.md",
	} {
		if got := hostReportName(h); got != want {
			t.Errorf("hostReportName(%q) = %q, want %q", h.cpu, got, want)
		}
	}
}

// reportForHost finds the one report made on a host like this one, or names
// the path of a first one; two alike, or a first path taken by another
// host's report, are errors that name the files.
func TestHostReport(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("bench.md", reportWithHost("2026-11-28", epyc.cpu, epyc.cores, epyc.kernels))
	write("bench-notes.md", "# Notes on benchmarks\n")
	write("bench.md.rounds.jsonl", "{}\n")

	if path, found, err := reportForHost(dir, epyc); err != nil || !found || path != filepath.Join(dir, "bench.md") {
		t.Errorf("the EPYC's report: %q, %v, %v", path, found, err)
	}
	first := filepath.Join(dir, hostReportName(xeon))
	if path, found, err := reportForHost(dir, xeon); err != nil || found || path != first {
		t.Errorf("a Xeon with no report: %q, %v, %v; want %q, false", path, found, err, first)
	}
	// Other kernels on the same processor are another kind of host.
	haswell := epyc
	haswell.kernels = "Haswell"
	if _, found, err := reportForHost(dir, haswell); err != nil || found {
		t.Errorf("the EPYC on Haswell kernels: found %v, err %v; want a first report", found, err)
	}

	write(hostReportName(xeon), reportWithHost("2026-12-01", xeon.cpu, xeon.cores, xeon.kernels))
	if path, found, err := reportForHost(dir, xeon); err != nil || !found || path != first {
		t.Errorf("the Xeon's report: %q, %v, %v", path, found, err)
	}

	write("bench-copy.md", reportWithHost("2026-11-29", epyc.cpu, epyc.cores, epyc.kernels))
	_, _, err := reportForHost(dir, epyc)
	if err == nil || !strings.Contains(err.Error(), "bench-copy.md") || !strings.Contains(err.Error(), "bench.md") {
		t.Errorf("two reports alike: err %v; want one naming both", err)
	}

	write(hostReportName(other), reportWithHost("2026-11-29", "AMD EPYC, family 25, model 17", 2, "Haswell"))
	_, _, err = reportForHost(dir, other)
	if err == nil || !strings.Contains(err.Error(), "another host") {
		t.Errorf("a first path taken by another host's report: err %v", err)
	}

	write("bench-broken.md", "# wm bench\n\nno host\n")
	if _, _, err := reportForHost(dir, xeon); err == nil || !strings.Contains(err.Error(), "bench-broken.md") {
		t.Errorf("a report with no host: err %v; want one naming it", err)
	}
	if _, _, err := reportForHost(filepath.Join(dir, "missing"), xeon); err == nil {
		t.Error("a missing folder: no error")
	}
}

// wm bench-host prints the path alone on stdout, and says on stderr what
// it found.
func TestRunBenchHost(t *testing.T) {
	dir := t.TempDir()
	var out, errOut bytes.Buffer
	if rc := Run([]string{"bench-host", dir}, &out, &errOut); rc != 0 {
		t.Fatalf("rc %d: %s", rc, errOut.String())
	}
	want := filepath.Join(dir, hostReportName(thisBenchHost())) + "\n"
	if out.String() != want || !strings.Contains(errOut.String(), "a first report") {
		t.Errorf("stdout %q (want %q), stderr %q", out.String(), want, errOut.String())
	}
	if rc := Run([]string{"bench-host"}, &out, &errOut); rc != 2 {
		t.Errorf("no folder: rc %d, want 2", rc)
	}
}
