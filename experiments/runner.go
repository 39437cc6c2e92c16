package experiments

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/pkg/errors"

	"github.com/wonderful-matrices/wonderful-matrices-go/experiments/train"
	"github.com/wonderful-matrices/wonderful-matrices-go/graph"
	"github.com/wonderful-matrices/wonderful-matrices-go/internal/atomicfile"
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
	// Stop, when closed, ends the sweep after the training step in
	// progress: that arm is checkpointed, no further arm starts, the report
	// is written, and Run returns the arm's *train.StoppedError (a resume
	// continues where it stopped).
	Stop <-chan struct{}
}

// job is one arm at one seed.
type job struct {
	arm  Arm
	seed int
	dir  string
	cfg  []byte // config.json
}

// Failure is an arm that failed; the sweep goes on without it.
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
// writes the report. Failed arms are returned as a *RunError.
func (r Runner) Run(def *Definition) (*Report, error) {
	if r.Seeds == 0 {
		r.Seeds = 1
	}
	if r.Seeds < 1 {
		return nil, errors.Errorf("seeds: must be >= 1, got %d", r.Seeds)
	}
	if r.Out == "" {
		return nil, errors.New("out: a results folder is required")
	}
	logw := r.Log
	if logw == nil {
		logw = io.Discard
	}
	arms, err := def.Expand(r.Preset)
	if err != nil {
		return nil, err
	}
	if arms, err = selectArms(arms, r.Arms); err != nil {
		return nil, errors.Wrap(err, def.Name)
	}
	seeds := r.Only
	if len(seeds) == 0 {
		for s := 0; s < r.Seeds; s++ {
			seeds = append(seeds, s)
		}
	}
	for _, s := range seeds {
		if s < 0 {
			return nil, errors.Errorf("seed %d: seeds are >= 0", s)
		}
	}
	var jobs []job
	for _, a := range arms {
		for _, s := range seeds {
			cfg, err := armConfig(a, s)
			if err != nil {
				return nil, errors.Wrapf(err, "%s arm %s", def.Name, a.Name)
			}
			j := job{arm: a, seed: s, dir: SeedDir(r.Out, def.Name, r.Preset, a.Name, s), cfg: cfg}
			if _, _, err := train.CheckFolder(j.dir, cfg, r.Resume); err != nil {
				return nil, errors.Wrapf(err, "%s arm %s seed %d", def.Name, a.Name, s)
			}
			jobs = append(jobs, j)
		}
	}
	fmt.Fprintf(logw, "%s at %s: %d arm(s) × %d seed(s) into %s\n", def.Name, r.Preset, len(arms), len(seeds), PresetDir(r.Out, def.Name, r.Preset))
	d := newDatasets()
	var fails []Failure
	began := time.Now()
	for i, j := range jobs {
		t0 := time.Now()
		fmt.Fprintf(logw, "[%d/%d] %s seed %d (%s)\n", i+1, len(jobs), j.arm.Name, j.seed, j.arm.Task)
		res, err := runJob(j, d, r.Resume, logw, r.Stop)
		var stopped *train.StoppedError
		if errors.As(err, &stopped) {
			fmt.Fprintf(logw, "[%d/%d] %s seed %d %v\n", i+1, len(jobs), j.arm.Name, j.seed, err)
			if _, rerr := WriteReport(r.Out, def, r.Preset); rerr != nil {
				return nil, errors.Wrap(rerr, "report")
			}
			return nil, err
		}
		if err != nil {
			fmt.Fprintf(logw, "[%d/%d] %s seed %d FAILED: %v\n", i+1, len(jobs), j.arm.Name, j.seed, err)
			fails = append(fails, Failure{Arm: j.arm.Name, Seed: j.seed, Err: err})
			continue
		}
		fmt.Fprintf(logw, "[%d/%d] %s seed %d done in %s: %s\n", i+1, len(jobs), j.arm.Name, j.seed, time.Since(t0).Round(time.Second), summary(res))
	}
	fmt.Fprintf(logw, "%s at %s: %d run(s) in %s\n", def.Name, r.Preset, len(jobs), time.Since(began).Round(time.Second))
	rep, err := WriteReport(r.Out, def, r.Preset)
	if err != nil {
		return nil, errors.Wrap(err, "report")
	}
	if len(fails) > 0 {
		return rep, &RunError{Failures: fails}
	}
	return rep, nil
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
	if res.Steps > 0 {
		parts = append(parts, fmt.Sprintf("val ppl %.3f", res.ValPPL), fmt.Sprintf("%.0f tokens/s", res.TokensPerS))
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

// measureConfig is config.json of an arm that measures without training.
type measureConfig struct {
	Task       Task            `json:"task"`
	Model      graph.Config    `json:"model"`
	Throughput *ThroughputData `json:"throughput,omitempty"`
	Seed       int             `json:"seed"`
}

// armConfig is the config.json an arm at a seed writes, with every default
// filled in: a folder holding other bytes belongs to another config.
func armConfig(a Arm, seed int) ([]byte, error) {
	if rc, ok := runConfig(a, seed); ok {
		_, b, err := rc.Canonical()
		return b, err
	}
	mc := measureConfig{Task: a.Task, Model: a.Model.Resolved(), Seed: seed}
	if a.Task == TaskThroughput {
		mc.Throughput = &a.Throughput
	}
	b, err := json.MarshalIndent(mc, "", "  ")
	return b, errors.Wrap(err, "arm config")
}

// runConfig is the training config of a training arm; ok is false for the
// measuring tasks.
func runConfig(a Arm, seed int) (train.RunConfig, bool) {
	tc := a.Train
	tc.Seed = int64(seed)
	rc := train.RunConfig{Model: a.Model, Train: tc}
	switch a.Task {
	case TaskLM:
		rc.Data = "kjv/byte"
	case TaskMQAR:
		rc.Data = fmt.Sprintf("mqar vocab=%d train=%d test=%d", a.MQAR.Vocab, a.MQAR.TrainExamples, a.MQAR.TestExamples)
	case TaskExtrapolation:
		e := a.Extrapolation
		rc.Data = fmt.Sprintf("kjv/byte + passkey share=%g; eval factors=%v stride=%d passkeys=%d", e.PasskeyShare, e.Factors, e.Stride, e.Passkeys)
	default:
		return rc, false
	}
	return rc, true
}

// runJob runs one arm at one seed into its folder.
func runJob(j job, d *datasets, resume bool, logw io.Writer, stop <-chan struct{}) (train.Result, error) {
	if rc, ok := runConfig(j.arm, j.seed); ok {
		run := &train.Run{Dir: j.dir, Config: rc, Progress: logw, Stop: stop}
		if err := d.prepare(run, j.arm, j.seed); err != nil {
			return train.Result{}, err
		}
		return run.Start(resume)
	}
	if done, res, err := train.CheckFolder(j.dir, j.cfg, resume); err != nil || done {
		return res, err
	}
	res, err := measure(j.arm, j.seed)
	if err != nil {
		return res, err
	}
	if err := os.MkdirAll(j.dir, 0o755); err != nil {
		return res, errors.Wrap(err, "arm folder")
	}
	if err := atomicfile.WriteBytes(filepath.Join(j.dir, train.RunConfigFile), append(j.cfg, '\n')); err != nil {
		return res, err
	}
	return res, train.WriteResult(j.dir, res)
}

// measure runs a measuring arm (parameters or throughput).
func measure(a Arm, seed int) (train.Result, error) {
	var res train.Result
	m, err := graph.New(a.Model)
	if err != nil {
		return res, err
	}
	res.Params, res.ActiveParams = m.Count()
	res.Measures = map[string]float64{}
	var mixer int64
	for _, k := range m.Breakdown() {
		if isMixer(k.Kind) {
			mixer += k.Total
		}
	}
	res.Measures["mixer_params"] = float64(mixer)
	if a.Task == TaskThroughput {
		t := a.Throughput
		for _, T := range t.SeqLens {
			tp, err := train.MeasureThroughput(a.Model, max(1, t.Tokens/T), T, t.Reps, int64(seed))
			if err != nil {
				return res, errors.Wrapf(err, "sequence length %d", T)
			}
			res.Measures[fmt.Sprintf("train@%d", T)] = tp.Train
			res.Measures[fmt.Sprintf("eval@%d", T)] = tp.Eval
		}
	}
	return res, nil
}
