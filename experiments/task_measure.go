package experiments

import (
	"fmt"

	"github.com/pkg/errors"

	"github.com/wonderful-matrices/wonderful-matrices-go/experiments/train"
	"github.com/wonderful-matrices/wonderful-matrices-go/graph"
)

// ParamsTask counts an arm's parameters, in total, active per token and in
// its sequence transformations (Wonderful Matrices Figure 8); it trains
// nothing.
type ParamsTask struct{}

// TaskParams counts parameters.
var TaskParams = ParamsTask{}

// Name is "params".
func (ParamsTask) Name() string { return "params" }

// Measures are the counts.
func (ParamsTask) Measures() (keys, prefixes []string) {
	return []string{"params", "active_params", "mixer_params"}, nil
}

// Check has nothing to refuse.
func (ParamsTask) Check(Arm) error { return nil }

// Settings: none.
func (ParamsTask) Settings() any { return nil }

// Measure counts the model's parameters.
func (ParamsTask) Measure(a Arm, _ int) (train.Result, error) { return countParams(a.Model) }

// countParams is a model's total and active parameters and those of its
// sequence transformations (mixer_params).
func countParams(cfg graph.Config) (train.Result, error) {
	var res train.Result
	m, err := graph.New(cfg)
	if err != nil {
		return res, err
	}
	res.Params, res.ActiveParams = m.Count()
	var mixer int64
	for _, k := range m.Breakdown() {
		if isMixer(k.Kind) {
			mixer += k.Total
		}
	}
	res.Measures = map[string]float64{"mixer_params": float64(mixer)}
	return res, nil
}

// ThroughputTask times training and evaluation steps of an untrained model
// at several sequence lengths (Wonderful Matrices Figure 6).
type ThroughputTask struct {
	SeqLens []int `json:"seq_lens"`
	// Tokens per timed step: the batch is Tokens / seq_len (at least 1).
	Tokens int `json:"tokens"`
	Reps   int `json:"reps"`
}

// Name is "throughput".
func (ThroughputTask) Name() string { return "throughput" }

// Measures are the counts and train@T, eval@T tokens/s.
func (ThroughputTask) Measures() (keys, prefixes []string) {
	return []string{"params", "active_params", "mixer_params"}, []string{"train", "eval"}
}

// Check refuses an empty sweep.
func (t ThroughputTask) Check(Arm) error {
	if len(t.SeqLens) == 0 || t.Tokens < 1 || t.Reps < 1 {
		return errors.Errorf("throughput: sequence lengths %v, %d tokens and %d reps: need lengths and both >= 1", t.SeqLens, t.Tokens, t.Reps)
	}
	return nil
}

// Settings are the lengths, tokens and reps.
func (t ThroughputTask) Settings() any { return &t }

// Measure counts the parameters and times a step at every length.
func (t ThroughputTask) Measure(a Arm, seed int) (train.Result, error) {
	res, err := countParams(a.Model)
	if err != nil {
		return res, err
	}
	for _, T := range t.SeqLens {
		tp, err := train.MeasureThroughput(a.Model, max(1, t.Tokens/T), T, t.Reps, int64(seed))
		if err != nil {
			return res, errors.Wrapf(err, "sequence length %d", T)
		}
		res.Measures[fmt.Sprintf("train@%d", T)] = tp.Train
		res.Measures[fmt.Sprintf("eval@%d", T)] = tp.Eval
	}
	return res, nil
}
