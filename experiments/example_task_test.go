package experiments_test

import (
	"fmt"
	"strings"

	"github.com/pkg/errors"

	"github.com/wonderful-matrices/wonderful-matrices-go/experiments"
	"github.com/wonderful-matrices/wonderful-matrices-go/experiments/data"
	"github.com/wonderful-matrices/wonderful-matrices-go/experiments/eval"
	"github.com/wonderful-matrices/wonderful-matrices-go/experiments/train"
	"github.com/wonderful-matrices/wonderful-matrices-go/graph"
)

// CountTask is a task of one's own: a language model of the lines "1 2 3 …
// n" (counting), validated and tested on lines it never trains on, with a
// measure of its own (the share of test lines the model continues right).
type CountTask struct{ Lines int }

func (CountTask) Name() string { return "count" }

func (CountTask) Measures() (keys, prefixes []string) {
	return append(experiments.TrainingMeasures(), "count_accuracy"), nil
}

func (t CountTask) Data(experiments.Arm) string {
	return fmt.Sprintf("counting lines=%d/byte", t.Lines)
}

func (t CountTask) Check(a experiments.Arm) error {
	if t.Lines < 30 {
		return errors.Errorf("count: %d lines, need at least 30", t.Lines)
	}
	return nil
}

// lines are "k k+1 … k+5" for k = 1…n; every tenth is validation, the next
// test.
func (t CountTask) lines() (train, valid, test []string) {
	for k := 1; k <= t.Lines; k++ {
		var w []string
		for j := k; j < k+6; j++ {
			w = append(w, fmt.Sprint(j))
		}
		switch k % 10 {
		case 0:
			valid = append(valid, strings.Join(w, " "))
		case 1:
			test = append(test, strings.Join(w, " "))
		default:
			train = append(train, strings.Join(w, " "))
		}
	}
	return train, valid, test
}

func (t CountTask) Prepare(run *train.Run, a experiments.Arm, _ int, _ *experiments.Cache) error {
	tr, va, te := t.lines()
	pack := func(ls []string) data.Sequences {
		s, _ := data.Pack(data.ByteTokenizer{}.Encode(strings.Join(ls, "\n")+"\n"), a.Train.SeqLen)
		return s
	}
	run.Train, run.Valid, run.Test = pack(tr), pack(va), pack(te)
	run.Measure = func(m *graph.Model) (map[string]float64, error) {
		right := 0
		for _, l := range te {
			// Given all but the last number, the model's argmax must spell
			// the last number and the newline, digit by digit.
			cut := strings.LastIndexByte(l, ' ') + 1
			ok, err := eval.Continues(m, data.ByteTokenizer{}.Encode(l[:cut]), data.ByteTokenizer{}.Encode(l[cut:]+"\n"))
			if err != nil {
				return nil, err
			}
			if ok {
				right++
			}
		}
		return map[string]float64{"count_accuracy": float64(right) / float64(len(te))}, nil
	}
	return nil
}

// A task of one's own is a type with Name, Measures, Check, and, for a task
// that trains, Data and Prepare (which gives the run its data and its
// Measure). An experiment's arms name it, and its measure is a column.
func ExampleTrainingTask() {
	var _ experiments.TrainingTask = CountTask{}
	experiments.Register(&experiments.Definition{
		Name: "count-example", Version: 1,
		Title: "counting with SSD and attention", Reference: "an example",
		Arms: func(preset string) ([]experiments.Arm, error) {
			var arms []experiments.Arm
			for _, p := range []string{"SM", "AM"} {
				arms = append(arms, experiments.Arm{
					Name: p, Labels: []experiments.Label{{Key: "pattern", Value: p}},
					Task:  CountTask{Lines: 500},
					Model: graph.Config{Pattern: p, Vocab: data.ByteVocab, DModel: 16, Heads: 2},
					Train: train.Config{Steps: 20, Batch: 4, SeqLen: 32, LR: 3e-3},
				})
			}
			return arms, nil
		},
		Columns: []experiments.Column{{Title: "count accuracy", Key: "count_accuracy", Digits: 2}},
	})
	def, _ := experiments.Lookup("count-example")
	arms, err := def.Expand(experiments.Tiny)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, a := range arms {
		fmt.Println(a.Name, a.Task.Name(), a.Task.(experiments.TrainingTask).Data(a))
	}
	// Output:
	// SM count counting lines=500/byte
	// AM count counting lines=500/byte
}
