package experiments

import (
	"fmt"
	"math/rand"
	"sort"

	"github.com/pkg/errors"

	"github.com/wonderful-matrices/wonderful-matrices-go/experiments/data"
	"github.com/wonderful-matrices/wonderful-matrices-go/experiments/eval"
	"github.com/wonderful-matrices/wonderful-matrices-go/experiments/train"
	"github.com/wonderful-matrices/wonderful-matrices-go/graph"
)

// Seeds of the generated data, apart from the training seed so that the
// test examples never change with it.
const (
	mqarTrainSeed    = 1_000
	mqarValidSeed    = 2_000
	mqarTestSeed     = 5_000
	passkeyTrainSeed = 3_000
	passkeyTestSeed  = 4_000
)

// datasets builds and caches the data of a sweep: the KJV byte streams
// once, packed sequences once per length.
type datasets struct {
	// ids are the byte tokens of the KJV's training, validation and test
	// books (data.KJVSplit).
	ids    *kjvIDs
	packed map[int]kjvSplit
}

type kjvIDs struct{ train, valid, test []int }

// kjvSplit is the KJV packed into sequences of one length.
type kjvSplit struct{ train, valid, test data.Sequences }

func newDatasets() *datasets { return &datasets{packed: map[int]kjvSplit{}} }

// kjvTokens returns the byte tokens of the three splits.
func (d *datasets) kjvTokens() (*kjvIDs, error) {
	if d.ids == nil {
		tr, va, te, err := data.KJVSplit()
		if err != nil {
			return nil, err
		}
		tok := data.ByteTokenizer{}
		d.ids = &kjvIDs{data.Encode(tok, []string{tr}), data.Encode(tok, []string{va}), data.Encode(tok, []string{te})}
	}
	return d.ids, nil
}

// kjv returns the KJV's training, validation and test sequences of length
// t (byte tokens; data.KJVSplit says which books).
func (d *datasets) kjv(t int) (kjvSplit, error) {
	if p, ok := d.packed[t]; ok {
		return p, nil
	}
	ids, err := d.kjvTokens()
	if err != nil {
		return kjvSplit{}, err
	}
	var p kjvSplit
	for _, part := range []struct {
		name string
		ids  []int
		dst  *data.Sequences
	}{{"training", ids.train, &p.train}, {"validation", ids.valid, &p.valid}, {"test", ids.test, &p.test}} {
		if *part.dst, err = data.Pack(part.ids, t); err != nil {
			return p, errors.Wrapf(err, "kjv %s books", part.name)
		}
	}
	d.packed[t] = p
	return p, nil
}

// prepare gives run its data and, for tasks measured after training, its
// Measure.
func (d *datasets) prepare(run *train.Run, a Arm, seed int) error {
	t := a.Train.SeqLen
	switch a.Task {
	case TaskLM:
		p, err := d.kjv(t)
		run.Train, run.Valid, run.Test = p.train, p.valid, p.test
		return err
	case TaskMQAR:
		q := a.MQAR
		tr, err := data.NewMQARSet(t, q.Vocab, q.Pairs, q.TrainExamples, mqarTrainSeed+int64(seed))
		if err != nil {
			return err
		}
		va, err := data.NewMQARSet(t, q.Vocab, q.Pairs, q.TestExamples, mqarValidSeed)
		if err != nil {
			return err
		}
		te, err := data.NewMQARSet(t, q.Vocab, q.Pairs, q.TestExamples, mqarTestSeed)
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
	case TaskExtrapolation:
		return d.prepareExtrapolation(run, a, seed)
	}
	return errors.Errorf("task %q does not train", a.Task)
}

// prepareExtrapolation trains on KJV plus a share of passkey sequences and
// measures perplexity and passkey accuracy at each factor of the length.
func (d *datasets) prepareExtrapolation(run *train.Run, a Arm, seed int) error {
	t, e := a.Train.SeqLen, a.Extrapolation
	p, err := d.kjv(t)
	if err != nil {
		return err
	}
	n := int(float64(p.train.Len()) * e.PasskeyShare / (1 - e.PasskeyShare))
	if n < 1 {
		run.Train = p.train
	} else {
		pk, err := data.NewPasskeySet(t, n, passkeyTrainSeed+int64(seed), data.ByteTokenizer{})
		if err != nil {
			return err
		}
		if run.Train, err = data.NewConcat(p.train, pk); err != nil {
			return err
		}
	}
	run.Valid, run.Test = p.valid, p.test
	maxLen := t * e.Factors[len(e.Factors)-1]
	stream := d.ids.test
	if need := maxLen + 4*e.Stride + 1; len(stream) > need {
		stream = stream[:need]
	}
	if len(stream) < maxLen+1 {
		return errors.Errorf("extrapolation: the test books have %d tokens, fewer than the longest window %d", len(stream), maxLen)
	}
	run.Measure = func(m *graph.Model) (map[string]float64, error) {
		out := map[string]float64{}
		for _, f := range e.Factors {
			L := f * t
			ppl, err := eval.SlidingWindowPPL(m, stream, L, e.Stride)
			if err != nil {
				return nil, err
			}
			r := rand.New(rand.NewSource(passkeyTestSeed + int64(L)))
			var exs []data.PasskeyExample
			for i := 0; i < e.Passkeys; i++ {
				ex, err := data.Passkey(r, L-data.PasskeySlack)
				if err != nil {
					return nil, err
				}
				exs = append(exs, ex)
			}
			acc, err := eval.PasskeyAccuracy(m, data.ByteTokenizer{}, exs)
			if err != nil {
				return nil, err
			}
			out[fmt.Sprintf("ppl@%d", L)], out[fmt.Sprintf("passkey@%d", L)] = ppl, acc
		}
		return out, nil
	}
	return nil
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

// checkData finds, before any work, the data settings that would fail
// mid-sweep: an MQAR length or vocabulary that cannot hold its pairs, a
// passkey prompt that does not fit the training or an evaluation length.
func (a Arm) checkData() error {
	t := a.Train.SeqLen
	switch a.Task {
	case TaskMQAR:
		q := a.MQAR
		if q.TrainExamples < 1 || q.TestExamples < 1 {
			return errors.Errorf("mqar: %d training and %d test examples, need at least 1 of each", q.TrainExamples, q.TestExamples)
		}
		_, err := data.NewMQARSet(t, q.Vocab, q.Pairs, 1, 0)
		return err
	case TaskExtrapolation:
		e := a.Extrapolation
		if len(e.Factors) == 0 || e.Stride < 1 || e.Stride > t || e.PasskeyShare < 0 || e.PasskeyShare >= 1 || e.Passkeys < 1 {
			return errors.Errorf("extrapolation: factors %v, stride %d (need 1..%d), passkey share %v (need [0, 1)) and %d passkeys (need >= 1)", e.Factors, e.Stride, t, e.PasskeyShare, e.Passkeys)
		}
		if _, err := data.NewPasskeySet(t, 1, 0, data.ByteTokenizer{}); err != nil {
			return err
		}
		for i, f := range e.Factors {
			if f < 1 || (i > 0 && f <= e.Factors[i-1]) {
				return errors.Errorf("extrapolation: factors %v must be >= 1 and increasing", e.Factors)
			}
		}
	case TaskThroughput:
		if len(a.Throughput.SeqLens) == 0 || a.Throughput.Tokens < 1 || a.Throughput.Reps < 1 {
			return errors.Errorf("throughput: sequence lengths %v, %d tokens and %d reps: need lengths and both >= 1", a.Throughput.SeqLens, a.Throughput.Tokens, a.Throughput.Reps)
		}
	}
	return nil
}
