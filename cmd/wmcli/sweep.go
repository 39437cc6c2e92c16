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
		lrGrid = fs.String("lr-grid", "", "learning rates each arm searches (an array of one task per arm before the seeds); \"none\" for no search (default: the experiment's grid at the preset, if any)")
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
	def, err := experiments.Lookup(name)
	if err != nil {
		return fail(2, err)
	}
	sw := experiments.Sweep{Name: name, Preset: *preset, Out: absOut, Seeds: *seeds, WM: absWM, CPUs: *cpus, Time: *limit, LRGrid: def.LRGrid[*preset]}
	switch *lrGrid {
	case "":
	case "none":
		sw.LRGrid = nil
	default:
		if sw.LRGrid, err = experiments.ParseLRGrid(*lrGrid); err != nil {
			return fail(2, errors.Wrap(err, "--lr-grid"))
		}
	}
	if *only != "" {
		sw.Arms = strings.Split(*only, ",")
	}
	for _, e := range strings.Split(*extra, ";") {
		if e = strings.TrimSpace(e); e != "" {
			sw.Extra = append(sw.Extra, e)
		}
	}
	arrays, err := sw.Arrays()
	if err != nil {
		return fail(2, err)
	}
	if !*slurm {
		for i, a := range arrays {
			if i > 0 {
				fmt.Fprintf(stdout, "\n# ---- submitted after the array above has ended (sbatch --dependency=afterany:ID) ----\n")
			}
			fmt.Fprint(stdout, a.Script)
		}
		return 0
	}
	if _, err := exec.LookPath("sbatch"); err != nil {
		return fail(1, errors.New("sbatch is not on PATH: run on a Slurm login node, or drop --slurm to print the script"))
	}
	if err := os.MkdirAll(sw.LogDir(), 0o755); err != nil {
		return fail(1, errors.Wrap(err, "sweep"))
	}
	var ids, paths []string
	total := 0
	for _, a := range arrays {
		path := filepath.Join(sw.LogDir(), "sweep-"+a.Name+".sh")
		if err := atomicfile.WriteBytes(path, []byte(a.Script)); err != nil {
			return fail(1, err)
		}
		args := []string{"--parsable"}
		if len(ids) > 0 {
			args = append(args, "--dependency=afterany:"+ids[len(ids)-1])
		}
		id, err := sbatch(append(args, path)...)
		if err != nil {
			if len(ids) > 0 {
				err = errors.Wrapf(err, "the arrays %s are submitted, the %s array is not", strings.Join(ids, ", "), a.Name)
			}
			return fail(1, err)
		}
		ids, paths = append(ids, id), append(paths, path)
		total += len(a.Tasks)
	}
	report, err := sbatch("--parsable", "--dependency=afterany:"+ids[len(ids)-1], "--job-name=wm-report-"+name,
		"--output="+filepath.Join(sw.LogDir(), "report-%j.out"), "--wrap="+sw.ReportCommand())
	if err != nil {
		return fail(1, errors.Wrapf(err, "the arrays %s are submitted, the report job is not: run wm report %s when they end", strings.Join(ids, ", "), absOut))
	}
	fmt.Fprintf(stdout, "submitted %s: job array(s) %s (%d tasks) and report job %s after them\nscripts: %s\nlogs: %s\nwatch: squeue -j %s,%s\n",
		name, strings.Join(ids, ", "), total, report, strings.Join(paths, " "), sw.LogDir(), strings.Join(ids, ","), report)
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
