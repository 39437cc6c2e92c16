package experiments

import (
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/pkg/errors"

	"github.com/wonderful-matrices/wonderful-matrices-go/experiments/train"
	"github.com/wonderful-matrices/wonderful-matrices-go/internal/atomicfile"
	"github.com/wonderful-matrices/wonderful-matrices-go/internal/rss"
)

// Runner runs an experiment's arms into a results folder.
type Runner struct {
	// Out is the results root: arms go to Out/NAME/PRESET/ARM/seed-S.
	Out    string
	Preset string
	// Seeds repeats every arm with seeds 0…Seeds−1 (default 1).
	Seeds int
	// Only, when non-empty, runs these seeds instead of 0…Seeds−1 (one
	// task of a sweep runs one arm at one seed).
	Only []int
	// Resume continues unfinished arms from their checkpoints and reuses
	// finished ones; without it, any earlier result is an error.
	Resume bool
	// Log receives one line per arm and the training progress.
	Log io.Writer
	// Arms, when non-empty, runs only the arms of these names.
	Arms []string
	// LRGrid, when set, is the learning-rate grid each training arm
	// searches (instead of the definition's at the preset); NoLRSearch
	// turns the search off, so the arms train at their own rates.
	LRGrid     []float64
	NoLRSearch bool
	// NoisySeeds, when above the seeds run, is the number of seeds an arm
	// gets when the sd of the definition's primary measure over its first
	// seeds exceeds NoisyCV of the mean.
	NoisySeeds int
	// Shards, when above 1, splits every training arm's batches over that
	// many graphs run at once (train.Config.Shards): faster on several
	// cores, the same results to rounding, and recorded in each run's
	// config, so a run started without it does not resume with it.
	Shards int
	// ShardThreads, with Shards, caps each shard's loops at that many
	// goroutines (train.Config.ShardThreads): speed only, the same results,
	// so a run may resume with another value.
	ShardThreads int
	// Stop, when closed, ends the sweep after the training step in
	// progress: that arm is checkpointed, no further arm starts, the report
	// is written, and Run returns the arm's *train.StoppedError (a resume
	// continues where it stopped).
	Stop <-chan struct{}
}

// NoisyCV is the sd over seeds, as a share of the mean, above which an
// arm is noisy: Runner.NoisySeeds gives it more seeds.
const NoisyCV = 0.03

// Failure is an arm that failed (at a seed, or -1 for the arm's
// learning-rate search); the sweep goes on without it.
type Failure struct {
	Arm  string
	Seed int
	Err  error
}

// RunError lists the arms that failed.
type RunError struct{ Failures []Failure }

func (e *RunError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d arm(s) failed:", len(e.Failures))
	for _, f := range e.Failures {
		if f.Seed < 0 {
			fmt.Fprintf(&b, "\n  %s: %v", f.Arm, f.Err)
			continue
		}
		fmt.Fprintf(&b, "\n  %s seed %d: %v", f.Arm, f.Seed, f.Err)
	}
	return b.String()
}

// PresetDir is the folder of an experiment at a preset under out.
func PresetDir(out, name, preset string) string { return filepath.Join(out, name, preset) }

// ResultSet is one experiment at one preset that has a folder of results.
type ResultSet struct {
	Def    *Definition
	Preset string
}

// ResultSets lists the experiment/preset folders (OUT/NAME/PRESET) of the
// registered experiments under out, by name then preset order; an error
// when out is not a folder, none when it holds no results.
func ResultSets(out string) ([]ResultSet, error) {
	st, err := os.Stat(out)
	if err != nil {
		return nil, errors.Errorf("%s: %v", out, errors.Cause(err))
	}
	if !st.IsDir() {
		return nil, errors.Errorf("%s is not a folder", out)
	}
	var sets []ResultSet
	for _, name := range Names() {
		def, _ := Lookup(name)
		for _, p := range Presets {
			if st, err := os.Stat(PresetDir(out, name, p)); err == nil && st.IsDir() {
				sets = append(sets, ResultSet{def, p})
			}
		}
	}
	return sets, nil
}

// SeedDir is the folder of an arm at a seed.
func SeedDir(out, name, preset, arm string, seed int) string {
	return filepath.Join(PresetDir(out, name, preset), arm, fmt.Sprintf("seed-%d", seed))
}

// Run checks every arm's folder first (another config's results, or earlier
// results without Resume, stop it before any work and change nothing), then
// runs the arms in order, going on past an arm that fails, and finally
// writes the report. With a learning-rate grid (LRGrid, or the
// definition's at the preset) each training arm first searches it (see
// lrsearch.go), then runs its seeds at the chosen rate. Failed arms are
// returned as a *RunError.
func (r Runner) Run(def *Definition) (*Report, error) {
	sw, err := r.plan(def)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(sw.log, "%s at %s: %d arm(s) × %d seed(s) into %s%s\n", def.Name, r.Preset, len(sw.arms), len(sw.seeds), PresetDir(r.Out, def.Name, r.Preset), sw.gridNote())
	began := time.Now()
	for i, a := range sw.arms {
		sw.prefix = fmt.Sprintf("[arm %d/%d] %s", i+1, len(sw.arms), a.Name)
		if err := sw.runArm(a); err != nil {
			var stopped *train.StoppedError
			if errors.As(err, &stopped) {
				if _, rerr := WriteReport(r.Out, def, r.Preset); rerr != nil {
					return nil, errors.Wrap(rerr, "report")
				}
				return nil, err
			}
			fmt.Fprintf(sw.log, "%s FAILED: %v\n", sw.prefix, err)
			sw.fails = append(sw.fails, Failure{Arm: a.Name, Seed: -1, Err: err})
		}
	}
	fmt.Fprintf(sw.log, "%s at %s: %d run(s) in %s\n", def.Name, r.Preset, sw.runs, time.Since(began).Round(time.Second))
	rep, err := WriteReport(r.Out, def, r.Preset)
	if err != nil {
		return nil, errors.Wrap(err, "report")
	}
	if len(sw.fails) > 0 {
		return rep, &RunError{Failures: sw.fails}
	}
	return rep, nil
}

// sweep is one Run in progress.
type sweep struct {
	r     Runner
	def   *Definition
	arms  []Arm
	seeds []int
	grid  []float64
	sel   Selection
	data  *Cache
	log   io.Writer
	fails []Failure
	// prefix opens the progress lines of the arm in progress.
	prefix string
	runs   int
}

// plan resolves the runner's settings against def and checks every folder
// the sweep will write before any work.
func (r Runner) plan(def *Definition) (*sweep, error) {
	if r.Seeds == 0 {
		r.Seeds = 1
	}
	if r.Seeds < 1 {
		return nil, errors.Errorf("seeds: must be >= 1, got %d", r.Seeds)
	}
	if r.Out == "" {
		return nil, errors.New("out: a results folder is required")
	}
	sw := &sweep{r: r, def: def, data: NewCache(), log: r.Log, sel: def.Select}
	if sw.log == nil {
		sw.log = io.Discard
	}
	arms, err := def.Expand(r.Preset)
	if err != nil {
		return nil, err
	}
	if sw.arms, err = selectArms(arms, r.Arms); err != nil {
		return nil, errors.Wrap(err, def.Name)
	}
	sw.seeds = r.Only
	if len(sw.seeds) == 0 {
		for s := 0; s < r.Seeds; s++ {
			sw.seeds = append(sw.seeds, s)
		}
	}
	for _, s := range sw.seeds {
		if s < 0 {
			return nil, errors.Errorf("seed %d: seeds are >= 0", s)
		}
	}
	if !r.NoLRSearch {
		sw.grid = r.LRGrid
		if sw.grid == nil {
			sw.grid = def.LRGrid[r.Preset]
		}
		if sw.grid != nil {
			if sw.grid, err = checkLRGrid(sw.grid); err != nil {
				return nil, errors.Wrap(err, def.Name)
			}
		}
	}
	return sw, sw.preflight()
}

// gridNote says in the first progress line which rates are searched.
func (sw *sweep) gridNote() string {
	if sw.grid == nil {
		return ""
	}
	return fmt.Sprintf(", learning rate searched over %v per arm (seed 0), the seeds at the best on validation", sw.grid)
}

// jobAt is arm a at rate lr (0: the arm's own, and its folder without a
// search) and seed s.
func (sw *sweep) jobAt(a Arm, lr float64, s int) (job, error) {
	dir := SeedDir(sw.r.Out, sw.def.Name, sw.r.Preset, a.Name, s)
	if lr > 0 {
		a.Train.LR = lr
		dir = LRSeedDir(sw.r.Out, sw.def.Name, sw.r.Preset, a.Name, lr, s)
	}
	if sw.r.Shards > 1 && a.trains() {
		a.Train.Shards, a.Train.ShardThreads = sw.r.Shards, sw.r.ShardThreads
	}
	cfg, err := armConfig(a, s)
	if err != nil {
		return job{}, errors.Wrapf(err, "%s arm %s", sw.def.Name, a.Name)
	}
	return job{arm: a, seed: s, dir: dir, cfg: cfg}, nil
}

// preflight checks the folders known before any work: each arm's seeds, or
// with a search its trials at the grid's rates and, once a rate was
// chosen, its seeds at that rate.
func (sw *sweep) preflight() error {
	check := func(a Arm, lr float64, s int) error {
		j, err := sw.jobAt(a, lr, s)
		if err != nil {
			return err
		}
		_, _, err = train.CheckFolder(j.dir, j.cfg, sw.r.Resume)
		return errors.Wrapf(err, "%s arm %s seed %d", sw.def.Name, a.Name, s)
	}
	for _, a := range sw.arms {
		if sw.grid == nil || !a.trains() {
			for _, s := range sw.seeds {
				if err := check(a, 0, s); err != nil {
					return err
				}
			}
			continue
		}
		for _, lr := range sw.grid {
			if err := check(a, lr, 0); err != nil {
				return err
			}
		}
		c, ok, err := ReadLRChoice(ArmDir(sw.r.Out, sw.def.Name, sw.r.Preset, a.Name))
		if err != nil {
			return err
		}
		if !ok {
			continue // the search has not chosen yet: its seeds' folders are not known
		}
		for _, s := range sw.seeds {
			if err := check(a, c.Chosen, s); err != nil {
				return err
			}
		}
	}
	return nil
}

// runArm runs one arm: its search first when there is a grid, then its
// seeds, then more seeds when it is noisy (Runner.NoisySeeds). A seed that
// fails is recorded and the others go on; a search that fails fails the arm.
func (sw *sweep) runArm(a Arm) error {
	lr := 0.0
	if sw.grid != nil && a.trains() {
		c, err := searchLR(ArmDir(sw.r.Out, sw.def.Name, sw.r.Preset, a.Name), sw.grid, sw.sel, func(rate float64) (train.Result, error) {
			return sw.run(a, rate, 0, fmt.Sprintf("lr %g (search)", rate), sw.r.Resume)
		})
		if err != nil {
			return err
		}
		lr = c.Chosen
		fmt.Fprintf(sw.log, "%s: learning rate %s chosen on validation %s over %v\n", sw.prefix, c.Describe(), c.Select, c.rates())
	}
	seeds := sw.seeds
	for len(seeds) > 0 {
		var results []train.Result
		for _, s := range seeds {
			// Seed 0 at the chosen rate is the search's trial, finished.
			res, err := sw.run(a, lr, s, "", sw.r.Resume || (lr > 0 && s == 0))
			var stopped *train.StoppedError
			if errors.As(err, &stopped) {
				return err
			}
			if err != nil {
				fmt.Fprintf(sw.log, "%s seed %d FAILED: %v\n", sw.prefix, s, err)
				sw.fails = append(sw.fails, Failure{Arm: a.Name, Seed: s, Err: err})
				continue
			}
			results = append(results, res)
		}
		seeds = sw.moreSeeds(a, seeds, results)
	}
	return nil
}

// moreSeeds are the seeds to add to an arm that ran seeds with results:
// up to Runner.NoisySeeds in all when the sd of the definition's primary
// measure exceeds NoisyCV of its mean, none otherwise (and never for a
// sweep task that runs chosen seeds).
func (sw *sweep) moreSeeds(a Arm, ran []int, results []train.Result) []int {
	if len(sw.r.Only) > 0 || sw.r.NoisySeeds <= ran[len(ran)-1]+1 || len(results) < 2 || !a.trains() {
		return nil
	}
	var vs []float64
	for _, res := range results {
		if v, ok := value(a, res, sw.def.primary()); ok {
			vs = append(vs, v)
		}
	}
	st := meanSD(vs)
	if !(st.SD > NoisyCV*math.Abs(st.Mean)) {
		return nil
	}
	var more []int
	for s := ran[len(ran)-1] + 1; s < sw.r.NoisySeeds; s++ {
		more = append(more, s)
	}
	fmt.Fprintf(sw.log, "%s: %s %.4g ± %.4g over %d seeds (sd above %.0f%% of the mean): seeds %v added\n", sw.prefix, sw.def.primary(), st.Mean, st.SD, len(vs), 100*NoisyCV, more)
	return more
}

// run trains (or measures) arm a at rate lr (0: its own) and seed s,
// continuing or reusing an earlier run of its folder when resume is set,
// and logs the start and the outcome.
func (sw *sweep) run(a Arm, lr float64, s int, what string, resume bool) (train.Result, error) {
	j, err := sw.jobAt(a, lr, s)
	if err != nil {
		return train.Result{}, err
	}
	if what == "" {
		what = fmt.Sprintf("seed %d", s)
		if lr > 0 {
			what += fmt.Sprintf(" (lr %g)", lr)
		}
	}
	fmt.Fprintf(sw.log, "%s %s (%s)\n", sw.prefix, what, a.Task.Name())
	rss.ResetPeak()
	t0 := time.Now()
	res, err := runJob(j, sw.data, resume, sw.log, sw.r.Stop)
	sw.runs++
	if err == nil {
		fmt.Fprintf(sw.log, "%s %s done in %s: %s\n", sw.prefix, what, time.Since(t0).Round(time.Second), summary(res))
	}
	markFailure(j.dir, err)
	return res, err
}

// FailedFile in a run folder holds the error that ended the run's last
// attempt; a later attempt that finishes removes it. A graceful stop is not
// a failure.
const FailedFile = "failed.txt"

// markFailure records err in dir (when the run's folder exists), or clears
// an earlier record when err is nil.
func markFailure(dir string, err error) {
	path := filepath.Join(dir, FailedFile)
	var stopped *train.StoppedError
	switch {
	case err == nil:
		os.Remove(path)
	case errors.As(err, &stopped):
	default:
		if st, serr := os.Stat(dir); serr == nil && st.IsDir() {
			_ = atomicfile.WriteBytes(path, []byte(err.Error()+"\n"))
		}
	}
}

// selectArms keeps the arms named in only (all when empty).
func selectArms(arms []Arm, only []string) ([]Arm, error) {
	if len(only) == 0 {
		return arms, nil
	}
	byName := map[string]Arm{}
	var names []string
	for _, a := range arms {
		byName[a.Name] = a
		names = append(names, a.Name)
	}
	var out []Arm
	for _, n := range only {
		a, ok := byName[n]
		if !ok {
			return nil, errors.Errorf("arm %q does not exist; the arms are: %s", n, strings.Join(names, ", "))
		}
		out = append(out, a)
	}
	return out, nil
}

// summary is a one-line account of a result.
func summary(res train.Result) string {
	parts := []string{fmt.Sprintf("%d params", res.Params)}
	if res.PeakRSSMB > 0 {
		parts = append(parts, fmt.Sprintf("peak RSS %.0f MiB", res.PeakRSSMB))
	}
	if res.Steps > 0 {
		parts = append(parts, fmt.Sprintf("val ppl %.3f", res.ValPPL))
		if res.TestPPL > 0 {
			parts = append(parts, fmt.Sprintf("test ppl %.3f", res.TestPPL))
		}
		parts = append(parts, fmt.Sprintf("%.0f tokens/s", res.TokensPerS))
	}
	for _, k := range sortedKeys(res.Measures) {
		if len(parts) > 6 {
			parts = append(parts, "…")
			break
		}
		parts = append(parts, fmt.Sprintf("%s %.4g", k, res.Measures[k]))
	}
	return strings.Join(parts, ", ")
}

// sortedKeys lists a map's keys in order.
func sortedKeys[V any](m map[string]V) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}
