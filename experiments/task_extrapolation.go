package experiments

import (
	"fmt"
	"math/rand"

	"github.com/pkg/errors"

	"github.com/wonderful-matrices/wonderful-matrices-go/experiments/data"
	"github.com/wonderful-matrices/wonderful-matrices-go/experiments/eval"
	"github.com/wonderful-matrices/wonderful-matrices-go/experiments/train"
	"github.com/wonderful-matrices/wonderful-matrices-go/graph"
)

// ExtrapolationTask trains on the KJV (bytes) mixed with passkey prompts at
// the training length, then measures sliding-window perplexity over the
// test books and passkey accuracy at multiples of that length (CoCA
// §4.1–4.2).
type ExtrapolationTask struct {
	// Factors multiply the training length to give the evaluation lengths.
	Factors []int `json:"factors"`
	// Stride of the sliding window (CoCA: 512, the training length).
	Stride int `json:"stride"`
	// Passkeys is the number of passkey prompts per length.
	Passkeys int `json:"passkeys"`
	// PasskeyShare of the training sequences are passkey prompts.
	PasskeyShare float64 `json:"passkey_share"`
}

// Name is "extrapolation".
func (ExtrapolationTask) Name() string { return "extrapolation" }

// Measures add ppl@L and passkey@L at every evaluation length L.
func (ExtrapolationTask) Measures() (keys, prefixes []string) {
	return trainingMeasures, []string{"ppl", "passkey"}
}

// Data names the passkey share and the evaluation.
func (e ExtrapolationTask) Data(Arm) string {
	return fmt.Sprintf("kjv/byte + passkey share=%g; eval factors=%v stride=%d passkeys=%d", e.PasskeyShare, e.Factors, e.Stride, e.Passkeys)
}

// Check refuses factors that are not increasing, a stride outside the
// training length, a share outside [0, 1), and a passkey prompt that does
// not fit the training length.
func (e ExtrapolationTask) Check(a Arm) error {
	t := a.Train.SeqLen
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
	return nil
}

// Prepare mixes passkey sequences into the KJV training split and measures
// the trained model at every factor.
func (e ExtrapolationTask) Prepare(run *train.Run, a Arm, seed int, cache *Cache) error {
	t := a.Train.SeqLen
	p, err := TaskLM.packed(cache, t)
	if err != nil {
		return err
	}
	run.Train, run.Valid, run.Test = p.train, p.valid, p.test
	if n := int(float64(p.train.Len()) * e.PasskeyShare / (1 - e.PasskeyShare)); n >= 1 {
		pk, err := data.NewPasskeySet(t, n, passkeyTrainSeed+int64(seed), data.ByteTokenizer{})
		if err != nil {
			return err
		}
		if run.Train, err = data.NewConcat(p.train, pk); err != nil {
			return err
		}
	}
	ids, err := TaskLM.tokens(cache)
	if err != nil {
		return err
	}
	maxLen := t * e.Factors[len(e.Factors)-1]
	stream := ids.test
	if need := maxLen + 4*e.Stride + 1; len(stream) > need {
		stream = stream[:need]
	}
	if len(stream) < maxLen+1 {
		return errors.Errorf("extrapolation: the test books have %d tokens, fewer than the longest window %d", len(stream), maxLen)
	}
	run.Measure = func(m *graph.Model) (map[string]float64, error) { return e.measure(m, stream, t) }
	return nil
}

// measure is the sliding-window perplexity of stream and the passkey
// accuracy at each factor of the training length t.
func (e ExtrapolationTask) measure(m *graph.Model, stream []int, t int) (map[string]float64, error) {
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
