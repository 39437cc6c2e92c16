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

// sweepFlags are wm sweep's flags.
type sweepFlags struct {
	preset, out, only, wm, limit, extra, lrGrid *string
	seeds, cpus, shards, shardThreads           *int
	slurm                                       *bool
}

func newSweepFlags(fs *flag.FlagSet) sweepFlags {
	exe, _ := os.Executable()
	return sweepFlags{
		preset:       fs.String("preset", experiments.Tiny, "size: "+strings.Join(experiments.Presets, ", ")),
		out:          fs.String("out", "", "results folder on storage every node shares (required)"),
		seeds:        fs.Int("seeds", 3, "seeds per arm"),
		only:         fs.String("arms", "", "comma-separated arm names (default: all)"),
		slurm:        fs.Bool("slurm", false, "submit with sbatch (default: print the script)"),
		wm:           fs.String("wm", exe, "the wm binary the tasks run, reachable from every node"),
		cpus:         fs.Int("cpus-per-task", 2, "CPUs per task (GOMAXPROCS)"),
		shards:       fs.Int("shards", 0, "split each training batch over this many graphs run at once (wm run --shards; at most --cpus-per-task is useful)"),
		shardThreads: fs.Int("shard-threads", 0, "with --shards, each shard's loops on at most this many goroutines (wm run --shard-threads; the same results)"),
		limit:        fs.String("time", "", "time limit per task (Slurm format, e.g. 2:00:00)"),
		extra:        fs.String("sbatch", "", "extra sbatch options, separated by ';' (e.g. \"--partition=cpu;--mem=8G\")"),
		lrGrid:       fs.String("lr-grid", "", "learning rates each arm searches (an array of one task per arm before the seeds); \"none\" for no search (default: the experiment's grid at the preset, if any)"),
	}
}

// runSweep is `wm sweep NAME --preset P --out DIR --seeds N [--slurm]`: the
// sbatch scripts of the sweep's job arrays (see experiments.Sweep). Without
// --slurm it prints them; with it, it writes them beside the results,
// submits each after the one before, and a report job after the last.
func runSweep(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("wm sweep", flag.ContinueOnError)
	fs.SetOutput(stderr)
	f := newSweepFlags(fs)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: wm sweep NAME --out DIR [--preset P] [--seeds N] [--lr-grid A,B,C|none] [--slurm]")
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
	sw, err := f.sweep(name)
	if err != nil {
		return fail(2, err)
	}
	arrays, err := sw.Arrays()
	if err != nil {
		return fail(2, err)
	}
	if !*f.slurm {
		for i, a := range arrays {
			if i > 0 {
				fmt.Fprintf(stdout, "\n# ---- submitted after the array above has ended (sbatch --dependency=afterany:ID) ----\n")
			}
			fmt.Fprint(stdout, a.Script)
		}
		return 0
	}
	if err := submit(sw, arrays, stdout); err != nil {
		return fail(1, err)
	}
	return 0
}

// sweep is the Sweep the flags describe for the experiment name.
func (f sweepFlags) sweep(name string) (experiments.Sweep, error) {
	if *f.out == "" {
		return experiments.Sweep{}, errors.New("--out is required")
	}
	absOut, err := filepath.Abs(*f.out)
	if err != nil {
		return experiments.Sweep{}, err
	}
	absWM, err := filepath.Abs(*f.wm)
	if err != nil {
		return experiments.Sweep{}, err
	}
	if err := experiments.CheckPreset(*f.preset); err != nil {
		return experiments.Sweep{}, err
	}
	def, err := experiments.Lookup(name)
	if err != nil {
		return experiments.Sweep{}, err
	}
	if err := checkShardFlags(*f.shards, *f.shardThreads); err != nil {
		return experiments.Sweep{}, err
	}
	sw := experiments.Sweep{Name: name, Preset: *f.preset, Out: absOut, Seeds: *f.seeds, WM: absWM, CPUs: *f.cpus, Shards: *f.shards, ShardThreads: *f.shardThreads, Time: *f.limit}
	grid, off, err := parseLRGridFlag(*f.lrGrid)
	switch {
	case err != nil:
		return sw, err
	case grid != nil:
		sw.LRGrid = grid
	case !off:
		sw.LRGrid = def.LRGrid[*f.preset]
	}
	if *f.only != "" {
		sw.Arms = strings.Split(*f.only, ",")
	}
	for _, e := range strings.Split(*f.extra, ";") {
		if e = strings.TrimSpace(e); e != "" {
			sw.Extra = append(sw.Extra, e)
		}
	}
	return sw, nil
}

// submit writes each array's script to the sweep's log folder and submits
// it after the one before, then a report job after the last.
func submit(sw experiments.Sweep, arrays []experiments.SweepArray, stdout io.Writer) error {
	if _, err := exec.LookPath("sbatch"); err != nil {
		return errors.New("sbatch is not on PATH: run on a Slurm login node, or drop --slurm to print the script")
	}
	if err := os.MkdirAll(sw.LogDir(), 0o755); err != nil {
		return errors.Wrap(err, "sweep")
	}
	var ids, paths []string
	total := 0
	for _, a := range arrays {
		path := filepath.Join(sw.LogDir(), "sweep-"+a.Name+".sh")
		if err := atomicfile.WriteBytes(path, []byte(a.Script)); err != nil {
			return err
		}
		args := []string{"--parsable"}
		if len(ids) > 0 {
			args = append(args, "--dependency=afterany:"+ids[len(ids)-1])
		}
		id, err := sbatch(append(args, path)...)
		if err != nil && len(ids) > 0 {
			err = errors.Wrapf(err, "the arrays %s are submitted, the %s array is not", strings.Join(ids, ", "), a.Name)
		}
		if err != nil {
			return err
		}
		ids, paths = append(ids, id), append(paths, path)
		total += len(a.Tasks)
	}
	report, err := sbatch("--parsable", "--dependency=afterany:"+ids[len(ids)-1], "--job-name=wm-report-"+sw.Name,
		"--output="+filepath.Join(sw.LogDir(), "report-%j.out"), "--wrap="+sw.ReportCommand())
	if err != nil {
		return errors.Wrapf(err, "the arrays %s are submitted, the report job is not: run wm report %s when they end", strings.Join(ids, ", "), sw.Out)
	}
	fmt.Fprintf(stdout, "submitted %s: job array(s) %s (%d tasks) and report job %s after them\nscripts: %s\nlogs: %s\nwatch: squeue -j %s,%s\n",
		sw.Name, strings.Join(ids, ", "), total, report, strings.Join(paths, " "), sw.LogDir(), strings.Join(ids, ","), report)
	return nil
}

// parseLRGridFlag reads --lr-grid: "" is the experiment's grid (grid nil,
// off false), "none" no search (off), else the rates.
func parseLRGridFlag(v string) (grid []float64, off bool, err error) {
	switch v {
	case "":
		return nil, false, nil
	case "none":
		return nil, true, nil
	}
	grid, err = experiments.ParseLRGrid(v)
	return grid, false, errors.Wrap(err, "--lr-grid")
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

// checkShardFlags checks --shards and --shard-threads as wm run and wm
// sweep take them: shards at least 0, threads at least 0 and only with
// shards above 1.
func checkShardFlags(shards, threads int) error {
	switch {
	case shards < 0:
		return errors.Errorf("--shards: must be >= 0, got %d", shards)
	case threads < 0 || (threads > 0 && shards < 2):
		return errors.Errorf("--shard-threads: must be >= 0, and 0 unless --shards is above 1 (it is %d), got %d", shards, threads)
	}
	return nil
}
