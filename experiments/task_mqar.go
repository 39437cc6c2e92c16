package experiments

import (
	"fmt"

	"github.com/pkg/errors"

	"github.com/wonderful-matrices/wonderful-matrices-go/experiments/data"
	"github.com/wonderful-matrices/wonderful-matrices-go/experiments/eval"
	"github.com/wonderful-matrices/wonderful-matrices-go/experiments/train"
	"github.com/wonderful-matrices/wonderful-matrices-go/graph"
)

// Seeds of the generated data, apart from the training seed so that the
// validation and test examples never change with it.
const (
	mqarTrainSeed    = 1_000
	mqarValidSeed    = 2_000
	mqarTestSeed     = 5_000
	passkeyTrainSeed = 3_000
	passkeyTestSeed  = 4_000
)

// MQARTask trains on multi-query associative recall (Wonderful Matrices
// Table 5, appendix C.1; Zoology's multiquery_ar) and reports the accuracy
// on test examples drawn apart from the validation examples that choices
// read.
type MQARTask struct {
	Vocab int `json:"vocab"`
	// Pairs of keys and values per example (Zoology's num_kv_pairs); 0 is
	// SPEC §6's T/4.
	Pairs         int `json:"pairs,omitempty"`
	TrainExamples int `json:"train_examples"`
	// TestExamples is the size of the validation set (learning-rate
	// choice, curves) and, drawn apart, of the test set (the reported
	// accuracy).
	TestExamples int `json:"test_examples"`
}

// Name is "mqar".
func (MQARTask) Name() string { return "mqar" }

// Measures add the validation and test accuracy.
func (MQARTask) Measures() (keys, prefixes []string) {
	return append(append([]string{}, trainingMeasures...), "accuracy", "val_accuracy"), nil
}

// Data names the sets' sizes.
func (q MQARTask) Data(Arm) string {
	return fmt.Sprintf("mqar vocab=%d pairs=%d train=%d valid=%d test=%d", q.Vocab, q.Pairs, q.TrainExamples, q.TestExamples, q.TestExamples)
}

// Check refuses empty sets and a length or vocabulary that cannot hold the
// pairs.
func (q MQARTask) Check(a Arm) error {
	if q.TrainExamples < 1 || q.TestExamples < 1 {
		return errors.Errorf("mqar: %d training and %d test examples, need at least 1 of each", q.TrainExamples, q.TestExamples)
	}
	_, err := data.NewMQARSet(a.Train.SeqLen, q.Vocab, q.Pairs, 1, 0)
	return err
}

// Prepare draws the training examples from the arm's seed, the validation
// and test examples from fixed seeds, and measures both accuracies.
func (q MQARTask) Prepare(run *train.Run, a Arm, seed int, _ *Cache) error {
	t := a.Train.SeqLen
	set := func(n int, s int64) (data.MQARSet, error) { return data.NewMQARSet(t, q.Vocab, q.Pairs, n, s) }
	tr, err := set(q.TrainExamples, mqarTrainSeed+int64(seed))
	if err != nil {
		return err
	}
	va, err := set(q.TestExamples, mqarValidSeed)
	if err != nil {
		return err
	}
	te, err := set(q.TestExamples, mqarTestSeed)
	if err != nil {
		return err
	}
	valid, test := va.Examples(), te.Examples()
	run.Train, run.Valid = tr, valid
	run.Measure = func(m *graph.Model) (map[string]float64, error) {
		vacc, err := eval.MQARAccuracy(m, valid, a.Train.Batch)
		if err != nil {
			return nil, err
		}
		tacc, err := eval.MQARAccuracy(m, test, a.Train.Batch)
		return map[string]float64{"val_accuracy": vacc, "accuracy": tacc}, err
	}
	return nil
}
