package wmcli

import (
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/pkg/errors"

	"github.com/wonderful-matrices/wonderful-matrices-go/experiments"
	"github.com/wonderful-matrices/wonderful-matrices-go/internal/atomicfile"
)

// runSweep is `wm sweep NAME --preset P --out DIR --seeds N [--slurm]`:
// the sbatch script of a job array with one task per arm and seed. Without
// --slurm it prints the script; with it, it writes the script beside the
// results, submits it, and submits a report job that runs after the array.
func runSweep(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("wm sweep", flag.ContinueOnError)
	fs.SetOutput(stderr)
	exe, _ := os.Executable()
	var (
		preset = fs.String("preset", experiments.Tiny, "size: "+strings.Join(experiments.Presets, ", "))
		out    = fs.String("out", "", "results folder on storage every node shares (required)")
		seeds  = fs.Int("seeds", 3, "seeds per arm")
		only   = fs.String("arms", "", "comma-separated arm names (default: all)")
		slurm  = fs.Bool("slurm", false, "submit with sbatch (default: print the script)")
		wm     = fs.String("wm", exe, "the wm binary the tasks run, reachable from every node")
		cpus   = fs.Int("cpus-per-task", 2, "CPUs per task (GOMAXPROCS)")
		limit  = fs.String("time", "", "time limit per task (Slurm format, e.g. 2:00:00)")
		extra  = fs.String("sbatch", "", "extra sbatch options, separated by ';' (e.g. \"--partition=cpu;--mem=8G\")")
	)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: wm sweep NAME --out DIR [--preset P] [--seeds N] [--slurm]")
		fs.PrintDefaults()
	}
	name, code, ok := parseNamed(fs, args, stderr)
	if !ok {
		return code
	}
	fail := func(code int, err error) int {
		fmt.Fprintf(stderr, "wm sweep: %v\n", err)
		return code
	}
	if *out == "" {
		return fail(2, errors.New("--out is required"))
	}
	absOut, err := filepath.Abs(*out)
	if err != nil {
		return fail(2, err)
	}
	absWM, err := filepath.Abs(*wm)
	if err != nil {
		return fail(2, err)
	}
	if err := experiments.CheckPreset(*preset); err != nil {
		return fail(2, err)
	}
	sw := experiments.Sweep{Name: name, Preset: *preset, Out: absOut, Seeds: *seeds, WM: absWM, CPUs: *cpus, Time: *limit}
	if *only != "" {
		sw.Arms = strings.Split(*only, ",")
	}
	for _, e := range strings.Split(*extra, ";") {
		if e = strings.TrimSpace(e); e != "" {
			sw.Extra = append(sw.Extra, e)
		}
	}
	script, err := sw.Script()
	if err != nil {
		return fail(2, err)
	}
	if !*slurm {
		fmt.Fprint(stdout, script)
		return 0
	}
	if _, err := exec.LookPath("sbatch"); err != nil {
		return fail(1, errors.New("sbatch is not on PATH: run on a Slurm login node, or drop --slurm to print the script"))
	}
	if err := os.MkdirAll(sw.LogDir(), 0o755); err != nil {
		return fail(1, errors.Wrap(err, "sweep"))
	}
	path := filepath.Join(sw.LogDir(), "sweep.sh")
	if err := atomicfile.WriteBytes(path, []byte(script)); err != nil {
		return fail(1, err)
	}
	array, err := sbatch("--parsable", path)
	if err != nil {
		return fail(1, err)
	}
	report, err := sbatch("--parsable", "--dependency=afterany:"+array, "--job-name=wm-report-"+name,
		"--output="+filepath.Join(sw.LogDir(), "report-%j.out"), "--wrap="+sw.ReportCommand())
	if err != nil {
		return fail(1, errors.Wrapf(err, "the array %s is submitted, the report job is not: run wm report %s when it ends", array, absOut))
	}
	tasks, _ := sw.Tasks()
	fmt.Fprintf(stdout, "submitted %s: job array %s (%d tasks) and report job %s after it\nscript: %s\nlogs: %s\nwatch: squeue -j %s,%s\n",
		name, array, len(tasks), report, path, sw.LogDir(), array, report)
	return 0
}

// sbatch submits and returns the job id (--parsable output).
func sbatch(args ...string) (string, error) {
	out, err := exec.Command("sbatch", args...).CombinedOutput()
	if err != nil {
		return "", errors.Errorf("sbatch %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	id, _, _ := strings.Cut(strings.TrimSpace(string(out)), ";")
	return id, nil
}
