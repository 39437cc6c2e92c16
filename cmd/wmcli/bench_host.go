package wmcli

import (
	"fmt"
	"math"
	"os"
	"regexp"
	"strings"

	"github.com/pkg/errors"

	"github.com/wonderful-matrices/wonderful-matrices-go/ops"
)

// A run of wm bench compares with an earlier one (docs/bench.md, through
// wm bench-diff) only on a host as fast as that run's. On this shared
// machine the host has run 20–35% slower for hours at a time, and then the
// peer's two-thread rows lost more than wm's, raising their ratios with no
// change to either program (docs/performance.md, "A re-run on a slower
// host, not committed"); a host faster than the report's moves them as
// much the other way. --host-like REPORT checks every reading of the BLAS
// rate the run takes (at the start, and after each row) against REPORT's:
// at the start, a host more than --host-slack slower or faster stops the
// run before its first row rather than an hour later; later, a host whose
// speed has moved that far stops it with its finished rounds kept in the
// journal, for --resume when the host is back.

// readHostRates reads the BLAS rates by thread count of the report at path
// for --host-like (nil when path is ""), and checks slack.
func readHostRates(path string, slack float64) (map[int]float64, error) {
	if !(slack >= 0 && slack < 1) {
		return nil, errors.Errorf("--host-slack: must be in [0, 1), got %v", slack)
	}
	if path == "" {
		return nil, nil
	}
	text, err := os.ReadFile(path)
	if err != nil {
		return nil, errors.Wrap(err, "--host-like")
	}
	rep, err := parseBenchReport(path, string(text))
	if err != nil {
		return nil, errors.Wrap(err, "--host-like")
	}
	if len(rep.rates) == 0 {
		return nil, errors.Errorf("--host-like: %s has no BLAS rates (no matrix-product ceiling table) to compare this host with", path)
	}
	if err := sameBLASKernels(path, rep.machine, ops.BLASCore()); err != nil {
		return nil, err
	}
	return rep.rates, nil
}

// reportKernels finds the OpenBLAS kernels wm ran in a report's machine
// line ("OpenBLAS kernels: wm Cooperlake; …").
var reportKernels = regexp.MustCompile(`OpenBLAS kernels: wm ([A-Za-z0-9_]+)`)

// sameBLASKernels is an error when the report at path (its machine line)
// names the OpenBLAS kernels wm ran and this wm runs others (core, ""
// without OpenBLAS): its rates would then differ by the kernels, not by
// the host, as when OPENBLAS_CORETYPE is set on one side only.
func sameBLASKernels(path, machine, core string) error {
	m := reportKernels.FindStringSubmatch(machine)
	if m == nil || core == "" || strings.EqualFold(m[1], core) {
		return nil
	}
	env := "OPENBLAS_CORETYPE is not set here"
	if v, ok := os.LookupEnv("OPENBLAS_CORETYPE"); ok {
		env = "OPENBLAS_CORETYPE=" + v + " here"
	}
	return errors.Errorf("--host-like: %s ran OpenBLAS's %s kernels, this wm runs %s (%s): its figures would not compare; set OPENBLAS_CORETYPE as that run had it (wm info names the kernels), or check against the report made on this kind of host (wm bench-host docs names it)", path, m[1], core, env)
}

// checkHost returns an error when rate, a reading of the BLAS rate on p
// threads, is more than cfg.hostSlack (a fraction of the report's rate)
// below or above the --host-like report's rate on p threads; nil without
// --host-like, or when the report has no rate on p threads.
func (cfg benchSettings) checkHost(p int, rate float64) error {
	want, ok := cfg.hostRates[p]
	if !ok || math.Abs(rate-want) <= cfg.hostSlack*want {
		return nil
	}
	side := "below"
	if rate > want {
		side = "above"
	}
	return &hostCheckError{fmt.Sprintf("host check: this host's BLAS rate is %.0f GFLOP/s on %d thread(s) against %.0f (%.0f%% %s) in %s, more than --host-slack %.0f%% off it: its ratios to the peer would not compare with that run's; measure when the host is at that run's speed (or without --host-like)",
		rate, p, want, 100*math.Abs(rate/want-1), side, cfg.hostLike, 100*cfg.hostSlack)}
}

// exitHostUnlike is wm bench's exit status when --host-like stopped the
// run (any other failure exits 1), so that a script can wait and run the
// same command again (scripts/bench-until-done.sh).
const exitHostUnlike = 3

// hostGuard takes a run's readings of the BLAS rate: it keeps the best at
// each thread count in rates (the rate of the ceilings) and, with
// --host-like, checks each reading against the report's. A reading off
// the report's is measured once more, as one reading at a slow moment can
// be far off (62 GFLOP/s once against the usual 91), and the run stops (a
// *hostCheckError, naming the reading nearer the report's) only when the
// second is off too.
type hostGuard struct {
	cfg     benchSettings
	rates   map[int]float64
	measure func(p int) (gflops float64, err error)
}

// reading measures the rate on p threads, keeps it, and checks it.
func (g hostGuard) reading(p int) error {
	r, err := g.measure(p)
	if err != nil {
		return err
	}
	g.rates[p] = max(g.rates[p], r)
	if g.cfg.checkHost(p, r) == nil {
		return nil
	}
	again, err := g.measure(p)
	if err != nil {
		return err
	}
	g.rates[p] = max(g.rates[p], again)
	if want := g.cfg.hostRates[p]; math.Abs(again-want) < math.Abs(r-want) {
		r = again
	}
	return g.cfg.checkHost(p, r)
}

// hostCheckError is checkHost's verdict that the host's speed is off the
// --host-like report's, either way: the run stops, and a journal that
// holds no round yet is removed with it (runBench), so the same command
// can simply be run again; one with rounds is kept for --resume.
type hostCheckError struct{ msg string }

func (e *hostCheckError) Error() string { return e.msg }
