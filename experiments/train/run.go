package train

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"time"

	"github.com/pkg/errors"
	"gorgonia.org/tensor"

	"github.com/wonderful-matrices/wonderful-matrices-go/experiments/data"
	"github.com/wonderful-matrices/wonderful-matrices-go/graph"
	"github.com/wonderful-matrices/wonderful-matrices-go/internal/atomicfile"
	"github.com/wonderful-matrices/wonderful-matrices-go/internal/rss"
)

// Files of a run folder.
const (
	RunConfigFile = "config.json"
	MetricsFile   = "metrics.jsonl"
	ResultFile    = "result.json"
	pointerFile   = "checkpoint.json"
)

// RunConfig is everything that defines a run; it is saved as config.json,
// and a folder holding a different one is refused.
type RunConfig struct {
	Model graph.Config `json:"model"`
	Train Config       `json:"train"`
	// Data names the corpus and tokenizer ("kjv/byte", a path, a task).
	Data string `json:"data"`
}

// Metrics is one line of metrics.jsonl.
type Metrics struct {
	Step       int     `json:"step"`
	Loss       float64 `json:"loss"`
	CE         float64 `json:"ce"`
	PPL        float64 `json:"ppl"`
	LR         float64 `json:"lr"`
	GradNorm   float64 `json:"grad_norm"`
	TokensPerS float64 `json:"tokens_per_s"`
	// ValLoss and ValPPL are measured every EvalEvery steps on the first
	// EvalBatches batches of the validation set, and after the last step on
	// the whole of it.
	ValLoss *float64 `json:"val_loss,omitempty"`
	ValPPL  *float64 `json:"val_ppl,omitempty"`
}

// Result is result.json: what a finished run measured.
type Result struct {
	Steps     int     `json:"steps"`
	TrainLoss float64 `json:"train_loss"`
	// ValLoss and ValPPL are the whole validation set's after the last
	// step: choices (the learning rate) are made on them.
	ValLoss float64 `json:"val_loss"`
	ValPPL  float64 `json:"val_ppl"`
	// TestLoss and TestPPL are the whole test set's after the last step,
	// when the run has one: the numbers to report, which no choice saw.
	TestLoss float64 `json:"test_loss,omitempty"`
	TestPPL  float64 `json:"test_ppl,omitempty"`
	// PeakRSSMB is the process's peak resident memory in MiB by the end of
	// the run, measures included (since the sweep started the arm, where
	// the system lets rss.ResetPeak work).
	PeakRSSMB    float64 `json:"peak_rss_mb,omitempty"`
	TokensPerS   float64 `json:"tokens_per_s"`
	WallSeconds  float64 `json:"wall_seconds"`
	Params       int64   `json:"params"`
	ActiveParams int64   `json:"active_params"`
	// Measures are what Run.Measure found on the trained model (MQAR
	// accuracy, perplexity per evaluation length, …), by name.
	Measures map[string]float64 `json:"measures,omitempty"`
}

// Run trains Model on Train (validating on Valid) into the folder Dir.
type Run struct {
	Dir    string
	Config RunConfig
	Train  data.Dataset
	Valid  data.Dataset
	// Test, when set, is evaluated once, whole, after the last step
	// (Result.TestLoss); nothing during training reads it.
	Test data.Dataset
	// Measure, when set, is called on the trained model after the last
	// step; what it returns is saved in result.json as Measures.
	Measure func(m *graph.Model) (map[string]float64, error)
	// Progress receives a progress bar (on a terminal) or plain lines.
	Progress io.Writer
	// Files are written into the folder beside config.json (a trained
	// tokenizer), once the folder is known to be this run's.
	Files map[string][]byte
	// StopAfter, when > 0, stops the run after that many steps of this
	// process without a final checkpoint, as a crash would (for tests).
	StopAfter int
	// Stop, when closed, ends the run after the step in progress: the step
	// is checkpointed and Start returns a *StoppedError (a graceful stop on
	// SIGINT or SIGTERM; --resume continues exactly).
	Stop <-chan struct{}
}

// LockFile is the file of a run folder that the process training into it
// holds locked (see lockFolder); it names the holder's pid.
const LockFile = "run.lock"

// DivergedError is returned by Start when a step's loss or a gradient is
// not finite: the run stopped there, and its last good checkpoint is kept.
// A learning-rate search counts such a rate as failed.
type DivergedError struct {
	Step int
	Loss float64
	// Param is the first parameter with a non-finite gradient, "" if none.
	Param string
}

func (e *DivergedError) Error() string {
	where := ""
	if e.Param != "" {
		where = "; the first non-finite gradient is " + e.Param
	}
	return fmt.Sprintf("step %d: the loss is %v%s; stopped, the last good checkpoint is kept", e.Step, e.Loss, where)
}

// StoppedError is returned by Start when Run.Stop ended the run: the
// folder holds a checkpoint of step Step, from which a resume continues.
type StoppedError struct {
	Dir  string
	Step int
}

func (e *StoppedError) Error() string {
	return fmt.Sprintf("stopped at step %d: checkpoint written to %s", e.Step, e.Dir)
}

// Start trains from scratch, or with resume from the folder's last
// checkpoint. A folder that holds another config, or an unfinished run when
// resume is not set, is an error before any work; a finished run with
// resume returns its saved result.
func (r *Run) Start(resume bool) (Result, error) {
	cfg, cfgJSON, err := r.Config.Canonical()
	if err != nil {
		return Result{}, err
	}
	if r.Train == nil || r.Valid == nil || r.Train.Len() == 0 || r.Valid.Len() == 0 {
		return Result{}, errors.New("run: no training or no validation examples")
	}
	if cfg.Train.SeqLen != r.Train.SeqLen() || cfg.Train.SeqLen != r.Valid.SeqLen() {
		return Result{}, errors.Errorf("run: sequences of %d/%d tokens, the config says %d", r.Train.SeqLen(), r.Valid.SeqLen(), cfg.Train.SeqLen)
	}
	if done, res, err := CheckFolder(r.Dir, cfgJSON, resume); err != nil || done {
		return res, err
	}
	if err := os.MkdirAll(r.Dir, 0o755); err != nil {
		return Result{}, errors.Wrap(err, "run")
	}
	unlock, err := lockFolder(r.Dir)
	if err != nil {
		return Result{}, err
	}
	defer unlock()
	// Checked again under the lock: another process may have finished or
	// started this folder since the first look.
	if done, res, err := CheckFolder(r.Dir, cfgJSON, resume); err != nil || done {
		return res, err
	}
	m, err := graph.New(cfg.Model)
	if err != nil {
		return Result{}, err
	}
	if err := m.Init(tensor.Float32, cfg.Train.Seed); err != nil {
		return Result{}, err
	}
	opt := NewAdamW(m.Params(), cfg.Train.WeightDecay)
	start := 0
	if resume {
		if start, err = r.restore(&m, opt); err != nil {
			return Result{}, err
		}
	}
	if err := atomicfile.WriteBytes(filepath.Join(r.Dir, RunConfigFile), append(cfgJSON, '\n')); err != nil {
		return Result{}, err
	}
	for name, b := range r.Files {
		if err := atomicfile.WriteBytes(filepath.Join(r.Dir, name), b); err != nil {
			return Result{}, err
		}
	}
	if err := truncateMetrics(filepath.Join(r.Dir, MetricsFile), start); err != nil {
		return Result{}, err
	}
	return r.loop(m, opt, cfg, start)
}

// Canonical returns the config with every default filled in, validated,
// and its JSON as config.json holds it.
func (c RunConfig) Canonical() (RunConfig, []byte, error) {
	c.Train = c.Train.Resolved()
	c.Model = c.Model.Resolved()
	if err := c.Train.Validate(); err != nil {
		return c, nil, err
	}
	b, err := json.MarshalIndent(c, "", "  ")
	return c, b, errors.Wrap(err, "run config")
}

// CheckFolder says, without changing anything, whether dir may hold the
// run whose config.json is cfgJSON: it refuses a folder of another config,
// a non-empty folder with no config, and a finished or unfinished run when
// resume is not set; done is set (with the saved result) when the run is
// finished and resume is set.
func CheckFolder(dir string, cfgJSON []byte, resume bool) (done bool, res Result, err error) {
	old, err := os.ReadFile(filepath.Join(dir, RunConfigFile))
	if os.IsNotExist(err) {
		if entries, _ := os.ReadDir(dir); !onlyLock(entries) && !resume {
			return false, res, errors.Errorf("run folder %s is not empty and holds no run config: choose another --out", dir)
		}
		return false, res, nil
	}
	if err != nil {
		return false, res, errors.Wrap(err, "run folder")
	}
	if !bytes.Equal(bytes.TrimSpace(old), bytes.TrimSpace(cfgJSON)) {
		return false, res, errors.Errorf("run folder %s holds a run of another config (%s differs): choose another --out; nothing was changed", dir, RunConfigFile)
	}
	if b, err := os.ReadFile(filepath.Join(dir, ResultFile)); err == nil {
		if !resume {
			return false, res, errors.Errorf("run folder %s holds a finished run: pass --resume to reuse it or choose another --out", dir)
		}
		err := json.Unmarshal(b, &res)
		return true, res, errors.Wrapf(err, "run folder %s: %s", dir, ResultFile)
	}
	if !resume {
		return false, res, errors.Errorf("run folder %s holds an unfinished run: pass --resume to continue it or choose another --out", dir)
	}
	return false, res, nil
}

// onlyLock says whether a folder's entries are none or just the lock file
// (left by a process that died before writing config.json).
func onlyLock(entries []os.DirEntry) bool {
	return len(entries) == 0 || len(entries) == 1 && entries[0].Name() == LockFile
}

type pointer struct {
	Dir  string `json:"dir"`
	Step int    `json:"step"`
}

// restore loads the last checkpoint's model and optimiser; 0 when there is none.
func (r *Run) restore(m **graph.Model, opt *AdamW) (int, error) {
	b, err := os.ReadFile(filepath.Join(r.Dir, pointerFile))
	if os.IsNotExist(err) {
		return 0, nil
	}
	if err != nil {
		return 0, errors.Wrap(err, "resume")
	}
	var p pointer
	if err := json.Unmarshal(b, &p); err != nil {
		return 0, errors.Wrapf(err, "resume: %s", pointerFile)
	}
	dir := filepath.Join(r.Dir, p.Dir)
	loaded, _, err := graph.Load(dir)
	if err != nil {
		return 0, errors.Wrap(err, "resume")
	}
	if err := loadOptimizer(filepath.Join(dir, optimizerFile), opt, loaded.Params()); err != nil {
		return 0, errors.Wrap(err, "resume")
	}
	*m = loaded
	return p.Step, nil
}

// checkpoint writes the model and optimiser after step into a new folder,
// then points checkpoint.json at it and removes the previous one: a crash at
// any moment leaves a pointer to a whole checkpoint.
func (r *Run) checkpoint(m *graph.Model, opt *AdamW, step int) error {
	name := fmt.Sprintf("ckpt-%07d", step)
	dir := filepath.Join(r.Dir, name)
	if err := graph.Save(dir, m, map[string]string{"step": fmt.Sprint(step)}); err != nil {
		os.RemoveAll(dir) // a partial checkpoint (disk full) is not kept
		return err
	}
	if err := saveOptimizer(filepath.Join(dir, optimizerFile), opt); err != nil {
		os.RemoveAll(dir)
		return err
	}
	var prev pointer
	if b, err := os.ReadFile(filepath.Join(r.Dir, pointerFile)); err == nil {
		_ = json.Unmarshal(b, &prev)
	}
	pj, _ := json.Marshal(pointer{Dir: name, Step: step})
	if err := atomicfile.WriteBytes(filepath.Join(r.Dir, pointerFile), pj); err != nil {
		if name != prev.Dir {
			os.RemoveAll(dir)
		}
		return err
	}
	if prev.Dir != "" && prev.Dir != name {
		os.RemoveAll(filepath.Join(r.Dir, prev.Dir))
	}
	return nil
}

// CheckpointDir returns the folder of the run's last checkpoint.
func CheckpointDir(runDir string) (string, error) {
	b, err := os.ReadFile(filepath.Join(runDir, pointerFile))
	if err != nil {
		return "", errors.Errorf("%s: no checkpoint (%v)", runDir, errors.Cause(err))
	}
	var p pointer
	if err := json.Unmarshal(b, &p); err != nil {
		return "", errors.Wrapf(err, "%s: %s", runDir, pointerFile)
	}
	return filepath.Join(runDir, p.Dir), nil
}

// truncateMetrics keeps the complete lines of steps <= last (what the
// checkpoint being resumed had seen), rewriting the file atomically.
func truncateMetrics(path string, last int) error {
	b, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		return errors.Wrap(err, "metrics")
	}
	var keep bytes.Buffer
	scanMetrics(b, func(line []byte, m Metrics) {
		if m.Step <= last {
			keep.Write(line)
			keep.WriteByte('\n')
		}
	})
	return atomicfile.WriteBytes(path, keep.Bytes())
}

// scanMetrics calls fn for each complete, well-formed line of a
// metrics.jsonl (a line cut by a crash is skipped).
func scanMetrics(b []byte, fn func(line []byte, m Metrics)) {
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 1<<16), 1<<20)
	for sc.Scan() {
		var m Metrics
		if json.Unmarshal(sc.Bytes(), &m) == nil && m.Step > 0 {
			fn(sc.Bytes(), m)
		}
	}
}

// finite reports whether v is neither NaN nor infinite.
func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

// loop runs steps start+1..Steps.
func (r *Run) loop(m *graph.Model, opt *AdamW, cfg RunConfig, start int) (Result, error) {
	tc := cfg.Train
	st, err := r.newStepper(m, opt, tc)
	if err != nil {
		return Result{}, err
	}
	mf, err := os.OpenFile(filepath.Join(r.Dir, MetricsFile), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return Result{}, errors.Wrap(err, "metrics")
	}
	defer mf.Close()
	bar := newProgress(r.Progress, tc.Steps, start)
	began := time.Now()
	var res Result
	res.Params, res.ActiveParams = m.Count()
	for step := start + 1; step <= tc.Steps; step++ {
		met, err := st.step(step)
		if err != nil {
			return res, err
		}
		if step%tc.EvalEvery == 0 || step == tc.Steps {
			if err := r.validate(st, &met, &res, step); err != nil {
				return res, err
			}
		}
		line, _ := json.Marshal(met)
		if _, err := mf.Write(append(line, '\n')); err != nil {
			return res, errors.Wrapf(err, "step %d: metrics in %s", step, r.Dir)
		}
		res.TrainLoss = met.CE
		bar.update(step, met)
		if r.StopAfter > 0 && step-start >= r.StopAfter {
			return res, errors.Errorf("stopped after %d steps (StopAfter)", r.StopAfter)
		}
		stop, err := r.maybeCheckpoint(m, opt, mf, step, tc)
		if err != nil || stop {
			bar.done()
			return res, err
		}
	}
	bar.done()
	res.Steps = tc.Steps
	res.WallSeconds = time.Since(began).Seconds()
	res.TokensPerS = st.tokens * float64(tc.Steps-start) / res.WallSeconds
	return res, r.finish(m, st, &res)
}

// stepper runs training steps: the compiled training and evaluation
// programs, the batches, the optimiser.
type stepper struct {
	m          *graph.Model
	opt        *AdamW
	tc         Config
	prog, eval *program
	batcher    *data.Batcher
	tokens     float64
}

func (r *Run) newStepper(m *graph.Model, opt *AdamW, tc Config) (*stepper, error) {
	prog, err := compileShards(m, tc.Batch, tc.SeqLen, true, tc.layout())
	if err != nil {
		return nil, err
	}
	eval, err := compileShards(m, tc.Batch, tc.SeqLen, false, tc.layout())
	if err != nil {
		return nil, err
	}
	batcher, err := data.NewBatcher(r.Train, tc.Batch, tc.Seed)
	if err != nil {
		return nil, err
	}
	return &stepper{m: m, opt: opt, tc: tc, prog: prog, eval: eval, batcher: batcher,
		tokens: float64(tc.Batch * tc.SeqLen)}, nil
}

// step runs one optimiser step: forward and backward, a check that the loss
// and the gradients are finite, clipping, the AdamW update.
func (s *stepper) step(step int) (Metrics, error) {
	t0 := time.Now()
	ids, targets := s.batcher.Batch(step - 1)
	loss, ce, err := s.prog.run(ids, targets)
	if err != nil {
		return Metrics{}, errors.Wrapf(err, "step %d", step)
	}
	grads := s.prog.gradients()
	norm, bad := gradNorm(grads, s.prog.params)
	if !finite(loss) || bad != "" {
		return Metrics{}, &DivergedError{Step: step, Loss: loss, Param: bad}
	}
	scale := 1.0
	if norm > s.tc.ClipNorm {
		scale = s.tc.ClipNorm / norm
	}
	lr := LR(step-1, s.tc.Steps, s.tc.LR, s.tc.WarmupFrac, s.tc.MinLRFrac)
	s.opt.Update(s.prog.params, grads, scale, lr)
	s.prog.reset()
	return Metrics{Step: step, Loss: loss, CE: ce, PPL: math.Exp(ce), LR: lr, GradNorm: norm,
		TokensPerS: s.tokens / time.Since(t0).Seconds()}, nil
}

// validate measures the validation loss into met and res: the first
// EvalBatches batches, or after the last step the whole split.
func (r *Run) validate(s *stepper, met *Metrics, res *Result, step int) error {
	vl, err := evaluate(s.eval, r.Valid, s.tc)
	if step == s.tc.Steps {
		vl, err = evaluateAll(s.eval, r.Valid, s.tc.FinalEvalBatches)
	}
	if err != nil {
		return errors.Wrapf(err, "step %d: evaluation", step)
	}
	vp := math.Exp(vl)
	met.ValLoss, met.ValPPL = &vl, &vp
	res.ValLoss, res.ValPPL = vl, vp
	return nil
}

// maybeCheckpoint writes a checkpoint every CkptEvery steps, after the last,
// and when Stop was closed (then stop is set and err is a *StoppedError).
func (r *Run) maybeCheckpoint(m *graph.Model, opt *AdamW, mf *os.File, step int, tc Config) (stop bool, err error) {
	select {
	case <-r.Stop:
		stop = step < tc.Steps
	default:
	}
	if step%tc.CkptEvery == 0 || step == tc.Steps || stop {
		if err := mf.Sync(); err != nil {
			return false, errors.Wrapf(err, "step %d: metrics in %s", step, r.Dir)
		}
		if err := r.checkpoint(m, opt, step); err != nil {
			return false, errors.Wrapf(err, "step %d: checkpoint in %s (the previous checkpoint is kept)", step, r.Dir)
		}
	}
	if stop {
		return true, &StoppedError{Dir: r.Dir, Step: step}
	}
	return false, nil
}

// finish evaluates the test split, runs Measure and writes result.json.
func (r *Run) finish(m *graph.Model, s *stepper, res *Result) error {
	var err error
	if r.Test != nil {
		if res.TestLoss, err = evaluateAll(s.eval, r.Test, s.tc.FinalEvalBatches); err != nil {
			return errors.Wrap(err, "test set")
		}
		res.TestPPL = math.Exp(res.TestLoss)
	}
	if r.Measure != nil {
		if res.Measures, err = r.Measure(m); err != nil {
			return errors.Wrap(err, "measuring the trained model")
		}
	}
	res.PeakRSSMB = rss.PeakMB()
	return WriteResult(r.Dir, *res)
}

// WriteResult writes res as dir/result.json, atomically.
func WriteResult(dir string, res Result) error {
	rj, err := json.MarshalIndent(res, "", "  ")
	if err != nil {
		return errors.Wrap(err, "result")
	}
	return atomicfile.WriteBytes(filepath.Join(dir, ResultFile), append(rj, '\n'))
}

// ReadResult reads dir/result.json.
func ReadResult(dir string) (Result, error) {
	var res Result
	b, err := os.ReadFile(filepath.Join(dir, ResultFile))
	if err != nil {
		return res, errors.Wrap(err, "result")
	}
	return res, errors.Wrapf(json.Unmarshal(b, &res), "%s", filepath.Join(dir, ResultFile))
}

// ReadMetrics reads the complete lines of dir/metrics.jsonl.
func ReadMetrics(dir string) ([]Metrics, error) {
	b, err := os.ReadFile(filepath.Join(dir, MetricsFile))
	if err != nil {
		return nil, errors.Wrap(err, "metrics")
	}
	var out []Metrics
	scanMetrics(b, func(_ []byte, m Metrics) { out = append(out, m) })
	return out, nil
}

// evaluate is the mean cross-entropy over the first EvalBatches batches of
// the validation sequences, in order (wrapping when there are fewer).
func evaluate(p *program, valid data.Dataset, tc Config) (float64, error) {
	var sum float64
	n := valid.Len()
	for e := 0; e < tc.EvalBatches; e++ {
		var ids, targets [][]int
		for j := 0; j < tc.Batch; j++ {
			x, y := valid.At((e*tc.Batch + j) % n)
			ids, targets = append(ids, x), append(targets, y)
		}
		_, ce, err := p.run(ids, targets)
		p.reset()
		if err != nil {
			return 0, err
		}
		sum += ce
	}
	// The validation program runs every eval_every steps; its activations
	// need not stay allocated beside the training program's in between.
	p.release()
	return sum / float64(tc.EvalBatches), nil
}

// evaluateAll is the mean cross-entropy over every scored token of ds
// (targets that are not data.Ignore), a batch at a time, or of its first
// maxBatches batches when that is > 0; the last batch is filled up with
// rows whose targets are all ignored, so no token counts twice.
func evaluateAll(p *program, ds data.Dataset, maxBatches int) (float64, error) {
	n, b, T := ds.Len(), p.batch, p.seqLen
	if maxBatches > 0 {
		n = min(n, maxBatches*b)
	}
	if ds.SeqLen() != T {
		return 0, errors.Errorf("evaluation: sequences of %d tokens, the program takes %d", ds.SeqLen(), T)
	}
	blank := make([]int, T)
	ignored := make([]int, T)
	for i := range ignored {
		ignored[i] = data.Ignore
	}
	var sum, count float64
	for lo := 0; lo < n; lo += b {
		ids, targets := make([][]int, b), make([][]int, b)
		scored := 0
		for j := range ids {
			if lo+j < n {
				ids[j], targets[j] = ds.At(lo + j)
				for _, t := range targets[j] {
					if t != data.Ignore {
						scored++
					}
				}
			} else {
				ids[j], targets[j] = blank, ignored
			}
		}
		if scored == 0 {
			continue
		}
		_, ce, err := p.run(ids, targets)
		p.reset()
		if err != nil {
			return 0, errors.Wrapf(err, "evaluation: sequences %d..%d", lo, min(lo+b, n)-1)
		}
		sum += ce * float64(scored)
		count += float64(scored)
	}
	p.release()
	if count == 0 {
		return 0, errors.New("evaluation: no scored tokens")
	}
	return sum / count, nil
}
