package wmcli

import (
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"

	"github.com/pkg/errors"

	"github.com/wonderful-matrices/wonderful-matrices-go/ops"
)

// A report of wm bench compares only with a run on a host of its kind: the
// same processor, the same number of cores and the same OpenBLAS kernels
// (and then, through --host-like, the same speed). The project's sessions
// and its users run on machines of several kinds, so docs/ keeps one
// committed report per kind, and `wm bench-host docs` names the one for
// the machine it runs on: make bench-peer checks the host against it and
// writes it again, and on a machine of a kind no report was made on it
// names the file a first report takes.

// benchHost is the kind of machine a report was made on, as its header
// line names it ("2026-11-28: 2 cores (AMD EPYC, family 26, model 2), Go
// …, OpenBLAS kernels: wm Cooperlake; …").
type benchHost struct {
	cpu     string // the processor: cpuModel's name, family and model
	cores   int
	kernels string // OpenBLAS's kernels wm ran; "" when not named
}

func (h benchHost) String() string {
	s := fmt.Sprintf("%s, %d cores", h.cpu, h.cores)
	if h.kernels != "" {
		s += ", OpenBLAS " + h.kernels + " kernels"
	}
	return s
}

// like reports whether a report made on h compares with a run on o: the
// same processor and cores, and the same kernels where both name them.
func (h benchHost) like(o benchHost) bool {
	return h.cpu == o.cpu && h.cores == o.cores &&
		(h.kernels == "" || o.kernels == "" || strings.EqualFold(h.kernels, o.kernels))
}

// reportHostLine finds the cores and the processor in a report's header
// line; the processor's name may hold parentheses ("Intel(R) Xeon(R)").
var reportHostLine = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}: (\d+) cores? \((.+?)\), Go `)

// parseBenchHost reads the host of the report text at path from its header
// line; ok is false when text is not a report of wm bench --out (its first
// line is not "# wm bench"), and err names the file when it is one whose
// header names no host.
func parseBenchHost(path, text string) (h benchHost, ok bool, err error) {
	lines := strings.SplitN(text, "\n", 4)
	if strings.TrimSpace(lines[0]) != "# wm bench" {
		return h, false, nil
	}
	for n, l := range lines[1:] {
		if l = strings.TrimSpace(l); l == "" {
			continue
		}
		m := reportHostLine.FindStringSubmatch(l)
		if m == nil {
			return h, true, errors.Errorf("%s:%d: a report of wm bench whose header names no host (no \"DATE: N cores (CPU), Go …\")", path, n+2)
		}
		h.cores, _ = strconv.Atoi(m[1])
		h.cpu = m[2]
		if k := reportKernels.FindStringSubmatch(l); k != nil {
			h.kernels = k[1]
		}
		return h, true, nil
	}
	return h, true, errors.Errorf("%s: a report of wm bench with no header line after its title", path)
}

// thisBenchHost is the host wm runs on, as a report made here would name
// it.
func thisBenchHost() benchHost {
	return benchHost{cpu: cpuModel(), cores: runtime.NumCPU(), kernels: ops.BLASCore()}
}

// hostReportName is the file name of a first report for host h:
// bench-<processor>-<N>cores.md, the processor in lower case with every
// run of other characters than letters and digits one hyphen, and "(R)"
// and "(TM)" left out ("bench-amd-epyc-family-26-model-2-2cores.md").
func hostReportName(h benchHost) string {
	s := strings.ToLower(h.cpu)
	for _, mark := range []string{"(r)", "(tm)"} {
		s = strings.ReplaceAll(s, mark, "")
	}
	var b strings.Builder
	hyphen := false
	for _, c := range s {
		if c >= 'a' && c <= 'z' || c >= '0' && c <= '9' {
			if hyphen && b.Len() > 0 {
				b.WriteByte('-')
			}
			b.WriteRune(c)
			hyphen = false
			continue
		}
		hyphen = true
	}
	if b.Len() == 0 {
		b.WriteString("unknown-cpu")
	}
	return fmt.Sprintf("bench-%s-%dcores.md", b.String(), h.cores)
}

// reportForHost is the report in dir made on a host like h (first true), or
// the path a first report for h takes (first false). The reports are
// dir's files bench*.md that begin "# wm bench"; it is an error when two
// of them are like h, or when the first report's path is taken by a report
// of another host.
func reportForHost(dir string, h benchHost) (path string, found bool, err error) {
	if _, err := os.Stat(dir); err != nil {
		return "", false, errors.Wrap(err, "the folder of reports")
	}
	names, err := filepath.Glob(filepath.Join(dir, "bench*.md"))
	if err != nil {
		return "", false, errors.Wrapf(err, "reports in %s", dir)
	}
	slices.Sort(names)
	var like []string
	hosts := map[string]benchHost{}
	for _, name := range names {
		text, err := os.ReadFile(name)
		if err != nil {
			return "", false, errors.Wrap(err, "a report")
		}
		rh, ok, err := parseBenchHost(name, string(text))
		if err != nil {
			return "", false, err
		}
		if !ok {
			continue
		}
		hosts[name] = rh
		if rh.like(h) {
			like = append(like, name)
		}
	}
	switch len(like) {
	case 1:
		return like[0], true, nil
	case 0:
	default:
		return "", false, errors.Errorf("%d reports in %s were made on hosts like this one (%s): %s; keep one, or name it with BENCH_REPORT=", len(like), dir, h, strings.Join(like, ", "))
	}
	first := filepath.Join(dir, hostReportName(h))
	if other, taken := hosts[first]; taken {
		return "", false, errors.Errorf("%s is a report made on another host (%s) than this one (%s): name this host's report with BENCH_REPORT=", first, other, h)
	}
	return first, false, nil
}

// runBenchHost is `wm bench-host DIR`: the path of DIR's report made on a
// host like this one on stdout, with what it found on stderr (the report
// and its host, or that a first report for this host takes the path
// printed). make bench-peer runs it to choose what to check the host
// against and what to write.
func runBenchHost(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("wm bench-host", flag.ContinueOnError)
	fs.SetOutput(stderr)
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() != 1 {
		fmt.Fprintln(stderr, "wm bench-host: give the folder of committed reports of wm bench: wm bench-host docs")
		return 2
	}
	h := thisBenchHost()
	path, found, err := reportForHost(fs.Arg(0), h)
	if err != nil {
		fmt.Fprintf(stderr, "wm bench-host: %v\n", err)
		return 1
	}
	if found {
		fmt.Fprintf(stderr, "wm bench-host: %s was made on a host like this one (%s)\n", path, h)
	} else {
		fmt.Fprintf(stderr, "wm bench-host: no report in %s was made on a host like this one (%s); a first report for it goes to %s\n", fs.Arg(0), h, path)
	}
	fmt.Fprintln(stdout, path)
	return 0
}
