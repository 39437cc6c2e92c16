package wmcli

import (
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/pkg/errors"

	"github.com/wonderful-matrices/wonderful-matrices-go/experiments"
	"github.com/wonderful-matrices/wonderful-matrices-go/experiments/train"
)

// runList is `wm list`: the experiments, their arms at each preset and the
// papers they reproduce.
func runList(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("wm list", flag.ContinueOnError)
	fs.SetOutput(stderr)
	arms := fs.String("arms", "", "also list the arms of each experiment at this preset")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *arms != "" {
		if err := experiments.CheckPreset(*arms); err != nil {
			fmt.Fprintf(stderr, "wm list: %v\n", err)
			return 2
		}
	}
	fmt.Fprintf(stdout, "presets: %s\n\n", strings.Join(experiments.Presets, ", "))
	for _, name := range experiments.Names() {
		d, _ := experiments.Lookup(name)
		fmt.Fprintf(stdout, "%-14s %s\n%-14s (%s)\n", d.Name, d.Title, "", d.Reference)
		if *arms != "" {
			as, err := d.Expand(*arms)
			if err != nil {
				fmt.Fprintf(stderr, "wm list: %v\n", err)
				return 1
			}
			for _, a := range as {
				fmt.Fprintf(stdout, "%-14s   %s\n", "", a.Name)
			}
		}
	}
	return 0
}

// runExperiment is `wm run NAME --preset P --out DIR [--seeds N] [--resume]`.
func runExperiment(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("wm run", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		preset       = fs.String("preset", experiments.Tiny, "size: "+strings.Join(experiments.Presets, ", "))
		out          = fs.String("out", "", "results folder (required); results go to OUT/NAME/PRESET/ARM/seed-S")
		seeds        = fs.Int("seeds", 1, "seeds per arm; the table gives mean ± sd")
		resume       = fs.Bool("resume", false, "continue unfinished arms and reuse finished ones")
		only         = fs.String("arms", "", "comma-separated arm names to run (default: all; see wm list --arms PRESET)")
		seed         = fs.Int("seed", -1, "run only this seed (one task of a sweep; --seeds is then ignored)")
		lrGrid       = fs.String("lr-grid", "", "learning rates each arm searches (seed 0), e.g. 1e-3,3e-3,1e-2; the seeds run at the best on validation; \"none\" trains at the arms' own rates (default: the experiment's grid at the preset, if any)")
		noisy        = fs.Int("noisy-seeds", 0, "give an arm this many seeds in all when the sd of its reported measure over --seeds exceeds 3% of the mean")
		shards       = fs.Int("shards", 0, "split each training batch over this many graphs run at once (data parallelism on several cores; same results to rounding; must divide the arms' batch)")
		shardThreads = fs.Int("shard-threads", 0, "with --shards, run each shard's loops on at most this many goroutines (0: GOMAXPROCS; 1 with as many shards as cores is faster for small models; the same results either way)")
	)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: wm run NAME --preset P --out DIR [--seeds N] [--lr-grid A,B,C|none] [--noisy-seeds N] [--shards N [--shard-threads T]] [--resume]")
		fs.PrintDefaults()
	}
	name, code, ok := parseNamed(fs, args, stderr)
	if !ok {
		return code
	}
	fail := func(code int, err error) int {
		fmt.Fprintf(stderr, "wm run: %v\n", err)
		return code
	}
	def, err := experiments.Lookup(name)
	if err != nil {
		return fail(2, err)
	}
	if err := experiments.CheckPreset(*preset); err != nil {
		return fail(2, err)
	}
	if *out == "" {
		return fail(2, errors.New("--out is required"))
	}
	if err := checkShardFlags(*shards, *shardThreads); err != nil {
		return fail(2, err)
	}
	r := experiments.Runner{Out: *out, Preset: *preset, Seeds: *seeds, Resume: *resume, Log: stderr, NoisySeeds: *noisy, Shards: *shards, ShardThreads: *shardThreads}
	if r.LRGrid, r.NoLRSearch, err = parseLRGridFlag(*lrGrid); err != nil {
		return fail(2, err)
	}
	stop, release := stopOnSignal(stderr)
	defer release()
	r.Stop = stop
	if *only != "" {
		r.Arms = strings.Split(*only, ",")
	}
	if *seed >= 0 {
		r.Only = []int{*seed}
	}
	rep, err := r.Run(def)
	if rep != nil {
		printReport(stdout, rep)
	}
	return runStatus(err, args, stderr)
}

// runStatus is wm run's exit status for Runner.Run's error: 0, ExitStopped
// (with the command that resumes), 1 when arms failed, 2 for bad input.
func runStatus(err error, args []string, stderr io.Writer) int {
	var stopped *train.StoppedError
	var failed *experiments.RunError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &stopped):
		fmt.Fprintf(stderr, "wm run: %v\nto resume: %s\n", err, resumeLine(append([]string{"run"}, args...)))
		return ExitStopped
	case errors.As(err, &failed):
		fmt.Fprintf(stderr, "wm run: %v\n", err)
		return 1
	}
	fmt.Fprintf(stderr, "wm run: %v\n", err)
	return 2
}

// runReport is `wm report DIR`: rebuilds every table and plot under DIR
// from saved results.
func runReport(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("wm report", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprintln(stderr, "usage: wm report DIR (a results folder of wm run --out)") }
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return 2
	}
	dir := fs.Arg(0)
	found, err := findResults(dir)
	if err != nil {
		fmt.Fprintf(stderr, "wm report: %v\n", err)
		return 2
	}
	for _, f := range found {
		rep, err := experiments.WriteReport(dir, f.Def, f.Preset)
		if err != nil {
			fmt.Fprintf(stderr, "wm report: %s at %s: %v\n", f.Def.Name, f.Preset, err)
			return 1
		}
		printReport(stdout, rep)
	}
	return 0
}

// findResults lists the experiment/preset folders under dir; none is an
// error naming what was expected.
func findResults(dir string) ([]experiments.ResultSet, error) {
	sets, err := experiments.ResultSets(dir)
	if err == nil && len(sets) == 0 {
		err = errors.Errorf("%s holds no results of wm run (expected folders NAME/PRESET with NAME one of %s)", dir, strings.Join(experiments.Names(), ", "))
	}
	return sets, err
}

func printReport(w io.Writer, rep *experiments.Report) {
	fmt.Fprint(w, rep.Markdown)
	fmt.Fprintf(w, "\nwrote %s, %s", rep.Table, rep.CSV)
	if len(rep.Plots) > 0 {
		fmt.Fprintf(w, " and %d plot file(s) under %s", len(rep.Plots), filepath.Join(rep.Dir, "plots"))
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w)
}

// parseNamed parses `wm CMD NAME [flags]`: the experiment's name first, then
// the flags. ok is false (with the exit status in code, the usage or error
// printed) when the arguments are bad.
func parseNamed(fs *flag.FlagSet, args []string, stderr io.Writer) (name string, code int, ok bool) {
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		fs.Usage()
		return "", 2, false
	}
	if err := fs.Parse(args[1:]); err != nil {
		return "", 2, false
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "%s: unexpected arguments %v (flags go after the experiment name)\n", fs.Name(), fs.Args())
		return "", 2, false
	}
	return args[0], 0, true
}
