package experiments

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/pkg/errors"

	"github.com/wonderful-matrices/wonderful-matrices-go/experiments/train"
	"github.com/wonderful-matrices/wonderful-matrices-go/internal/atomicfile"
)

// job is one arm at one seed.
type job struct {
	arm  Arm
	seed int
	dir  string
	cfg  []byte // config.json
}

// trains says whether an arm trains (a learning-rate search applies) or
// only measures.
func (a Arm) trains() bool {
	_, ok := a.Task.(TrainingTask)
	return ok
}

// armConfig is the config.json an arm at a seed writes, with every default
// filled in: a folder holding other bytes belongs to another config.
func armConfig(a Arm, seed int) ([]byte, error) {
	if rc, ok := runConfig(a, seed); ok {
		_, b, err := rc.Canonical()
		return b, err
	}
	mt, ok := a.Task.(MeasuringTask)
	if !ok {
		return nil, errors.Errorf("arm %s: task %T neither trains nor measures", a.Name, a.Task)
	}
	return measureConfig(a, mt, seed)
}

// measureConfig is config.json of an arm that measures without training:
// {"task": NAME, "model": …, NAME: settings, "seed": S}, indented.
func measureConfig(a Arm, t MeasuringTask, seed int) ([]byte, error) {
	var raw bytes.Buffer
	enc := func(v any) error {
		b, err := json.Marshal(v)
		raw.Write(b)
		return err
	}
	raw.WriteString(`{"task":`)
	err := enc(t.Name())
	raw.WriteString(`,"model":`)
	err = errors.Wrap(firstErr(err, enc(a.Model.Resolved())), "arm config")
	if st := t.Settings(); st != nil && err == nil {
		raw.WriteString(",")
		enc(t.Name())
		raw.WriteString(":")
		err = errors.Wrap(enc(st), "arm config")
	}
	fmt.Fprintf(&raw, `,"seed":%d}`, seed)
	if err != nil {
		return nil, err
	}
	var out bytes.Buffer
	return out.Bytes(), errors.Wrap(json.Indent(&out, raw.Bytes(), "", "  "), "arm config")
}

func firstErr(errs ...error) error {
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}

// runConfig is the training config of a training arm; ok is false for a
// measuring task.
func runConfig(a Arm, seed int) (train.RunConfig, bool) {
	t, ok := a.Task.(TrainingTask)
	if !ok {
		return train.RunConfig{}, false
	}
	tc := a.Train
	tc.Seed = int64(seed)
	return train.RunConfig{Model: a.Model, Train: tc, Data: t.Data(a)}, true
}

// runJob runs one arm at one seed into its folder.
func runJob(j job, cache *Cache, resume bool, logw io.Writer, stop <-chan struct{}) (train.Result, error) {
	if rc, ok := runConfig(j.arm, j.seed); ok {
		run := &train.Run{Dir: j.dir, Config: rc, Progress: logw, Stop: stop}
		if err := j.arm.Task.(TrainingTask).Prepare(run, j.arm, j.seed, cache); err != nil {
			return train.Result{}, err
		}
		return run.Start(resume)
	}
	if done, res, err := train.CheckFolder(j.dir, j.cfg, resume); err != nil || done {
		return res, err
	}
	res, err := j.arm.Task.(MeasuringTask).Measure(j.arm, j.seed)
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
