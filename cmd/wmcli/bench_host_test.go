package wmcli

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// hostReport is a report of wm bench --out with one row on 2 threads whose
// BLAS rate is rate GFLOP/s.
func hostReport(rate string) string {
	return `# wm bench

2026-11-29: a test's report.

| pattern | d_model | seq_len | batch | threads | wm train tok/s | peer train tok/s | wm eval tok/s | peer eval tok/s |
| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |
| (SM)1 | 32 | 32 | 2 | 2 | 1000 | 500 | 3000 | 1000 |

| row | BLAS GFLOP/s | train ceiling tok/s | eval ceiling tok/s |
| --- | ---: | ---: | ---: |
| (SM)1 d32 t32 b2 ×2 | ` + rate + ` | 5000 | 9000 |
`
}

// checkHost passes a rate within --host-slack of the report's either way,
// names the rate, its thread count, the report's rate and the side when it
// is below or above, and ignores thread counts the report lacks.
func TestBenchCheckHost(t *testing.T) {
	cfg := benchSettings{hostLike: "docs/bench.md", hostRates: map[int]float64{1: 240, 2: 460}, hostSlack: 0.1}
	for _, c := range []struct {
		p    int
		rate float64
	}{{1, 230}, {1, 217}, {1, 263}, {2, 415}, {2, 505}} {
		if err := cfg.checkHost(c.p, c.rate); err != nil {
			t.Errorf("%v on %d threads, within 10%%: %v", c.rate, c.p, err)
		}
	}
	for _, c := range []struct {
		p    int
		rate float64
		want string
	}{
		{1, 183, "183 GFLOP/s on 1 thread(s) against 240 (24% below) in docs/bench.md, more than --host-slack 10% off it"},
		{2, 358, "358 GFLOP/s on 2 thread(s) against 460 (22% below) in docs/bench.md"},
		{1, 300, "300 GFLOP/s on 1 thread(s) against 240 (25% above) in docs/bench.md, more than --host-slack 10% off it"},
		{2, 510, "510 GFLOP/s on 2 thread(s) against 460 (11% above)"},
	} {
		if err := cfg.checkHost(c.p, c.rate); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("rate %v on %d threads: %v, want %q", c.rate, c.p, err, c.want)
		}
	}
	if err := cfg.checkHost(4, 1); err != nil {
		t.Errorf("no thread count in common: %v", err)
	}
	if err := (benchSettings{}).checkHost(1, 1); err != nil {
		t.Errorf("without --host-like: %v", err)
	}
}

// hostGuard keeps the best reading at each thread count, measures a
// reading off the report's once more and stops only when the second is off
// too, naming the reading nearer the report's (the faster of two slow
// ones, the slower of two fast ones), and without --host-like only keeps
// the readings.
func TestBenchHostGuard(t *testing.T) {
	var readings []float64
	var taken int
	measure := func(p int) (float64, error) {
		r := readings[taken]
		taken++
		return r, nil
	}
	for _, c := range []struct {
		name     string
		readings []float64
		want     string // "" for no error
		best     float64
	}{
		{"a reading like the report's", []float64{450}, "", 450},
		{"a slow reading, then one like the report's", []float64{300, 440}, "", 440},
		{"a fast reading, then one like the report's", []float64{600, 470}, "", 600},
		{"two slow readings", []float64{300, 320}, "320 GFLOP/s on 2 thread(s) against 464 (31% below)", 320},
		{"two fast readings", []float64{700, 600}, "600 GFLOP/s on 2 thread(s) against 464 (29% above)", 700},
		{"a slow reading, then a fast one", []float64{300, 560}, "560 GFLOP/s on 2 thread(s) against 464 (21% above)", 560},
	} {
		taken, readings = 0, c.readings
		rates := map[int]float64{}
		g := hostGuard{cfg: benchSettings{hostLike: "docs/bench.md", hostRates: map[int]float64{2: 464}, hostSlack: 0.1}, rates: rates, measure: measure}
		err := g.reading(2)
		var unlike *hostCheckError
		switch {
		case taken != len(c.readings):
			t.Errorf("%s: %d readings taken, want %d", c.name, taken, len(c.readings))
		case c.want == "" && err != nil:
			t.Errorf("%s: %v", c.name, err)
		case c.want != "" && (!errors.As(err, &unlike) || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: %v, want a host check naming %q", c.name, err, c.want)
		}
		if rates[2] != c.best {
			t.Errorf("%s: kept rate %v, want the best reading %v", c.name, rates[2], c.best)
		}
	}
	taken, readings = 0, []float64{1, 2}
	free := hostGuard{rates: map[int]float64{}, measure: measure}
	if err := free.reading(1); err != nil || taken != 1 || free.rates[1] != 1 {
		t.Errorf("without --host-like: %v, %d readings, rates %v", err, taken, free.rates)
	}
}

// --host-like must name a report with BLAS rates, and --host-slack a
// fraction below 1; each mistake is an error naming it.
func TestBenchHostLikeErrors(t *testing.T) {
	dir := t.TempDir()
	noRates := filepath.Join(dir, "norates.md")
	os.WriteFile(noRates, []byte(strings.SplitAfter(hostReport("1"), "| 1000 |\n")[0]), 0o644)
	other := filepath.Join(dir, "other.md")
	os.WriteFile(other, []byte("# notes\n"), 0o644)
	for _, c := range []struct {
		path  string
		slack float64
		want  string
	}{
		{filepath.Join(dir, "missing.md"), 0.1, "--host-like: open " + filepath.Join(dir, "missing.md")},
		{other, 0.1, "not a report of wm bench --out"},
		{noRates, 0.1, "has no BLAS rates"},
		{"", 1, "--host-slack: must be in [0, 1), got 1"},
		{"", -0.5, "--host-slack: must be in [0, 1)"},
	} {
		if _, err := readHostRates(c.path, c.slack); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q, slack %v: %v, want %q", c.path, c.slack, err, c.want)
		}
	}
	if rates, err := readHostRates("", 0.1); rates != nil || err != nil {
		t.Errorf("no --host-like: %v, %v", rates, err)
	}
}

// A report whose wm ran other OpenBLAS kernels than this one is refused
// by name; the same kernels (in any case), a report that names none, or a
// wm without OpenBLAS pass.
func TestBenchHostLikeKernels(t *testing.T) {
	line := "2026-11-28: 2 cores. OpenBLAS kernels: wm Cooperlake; peer Cooperlake (chosen by OpenBLAS from the CPU)."
	err := sameBLASKernels("docs/bench.md", line, "Haswell")
	if err == nil || !strings.Contains(err.Error(), "docs/bench.md ran OpenBLAS's Cooperlake kernels, this wm runs Haswell") {
		t.Errorf("other kernels: %v", err)
	}
	for _, c := range []struct{ line, core string }{{line, "Cooperlake"}, {line, "COOPERLAKE"}, {"2026-11-28: 2 cores.", "Haswell"}, {line, ""}} {
		if err := sameBLASKernels("docs/bench.md", c.line, c.core); err != nil {
			t.Errorf("%q against %q: %v", c.core, c.line, err)
		}
	}
}

// Against a report whose host was far faster, or far slower, wm bench
// stops after the BLAS rate with exit 3 (exitHostUnlike), names the rates,
// measures no row, and leaves no journal behind, so the same command can
// be run again later.
func TestBenchStopsOnUnlikeHost(t *testing.T) {
	bin, tmp := buildWM(t)
	for _, c := range []struct{ rate, side string }{{"1000000", "below"}, {"1", "above"}} {
		like := filepath.Join(tmp, "like.md")
		if err := os.WriteFile(like, []byte(hostReport(c.rate)), 0o644); err != nil {
			t.Fatal(err)
		}
		out := filepath.Join(tmp, "bench.md")
		res, err := exec.Command(bin, "bench", "--host-like", like, "--patterns", "(SM)1", "--sizes", "32x32x2", "--procs", "2",
			"--reps", "1", "--rounds", "1", "--peer", "", "--out", out).CombinedOutput()
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != exitHostUnlike {
			t.Fatalf("report at %s GFLOP/s: exit %v, want %d:\n%s", c.rate, err, exitHostUnlike, res)
		}
		if !strings.Contains(string(res), "host check: this host's BLAS rate is ") || !strings.Contains(string(res), "on 2 thread(s) against "+c.rate+" (") || !strings.Contains(string(res), "% "+c.side+")") {
			t.Errorf("report at %s GFLOP/s: the error does not name the rates and %q:\n%s", c.rate, c.side, res)
		}
		if strings.Contains(string(res), "measuring ") {
			t.Errorf("report at %s GFLOP/s: a row was measured on an unlike host:\n%s", c.rate, res)
		}
		for _, f := range []string{out, out + journalSuffix} {
			if _, err := os.Stat(f); !os.IsNotExist(err) {
				t.Errorf("report at %s GFLOP/s: %s is left behind (%v)", c.rate, f, err)
			}
		}
	}
}
