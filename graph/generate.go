package graph

import (
	"math"
	"math/rand"
	"sort"

	"github.com/pkg/errors"
)

// Sampling chooses each generated token (SPEC §5): greedy when Temperature
// is 0, otherwise a draw from softmax(logits/Temperature) over the TopK
// most likely tokens (0: all), from a source seeded with Seed.
type Sampling struct {
	Temperature float64
	TopK        int
	Seed        int64
}

// Validate checks the sampling settings.
func (s Sampling) Validate() error {
	switch {
	case s.Temperature < 0 || math.IsNaN(s.Temperature) || math.IsInf(s.Temperature, 0):
		return errors.Errorf("sampling: temperature must be >= 0 (0 = greedy), got %v", s.Temperature)
	case s.TopK < 0:
		return errors.Errorf("sampling: top-k must be >= 0 (0 = all tokens), got %d", s.TopK)
	}
	return nil
}

// Generate continues prompt by n tokens and returns them. The prompt is fed
// in one step, then each new token in a step of its own from the decoding
// state (SSD states, conv inputs, KV caches). onToken, if not nil, sees each
// token as it is made.
func Generate(m *Model, prompt []int, n int, s Sampling, onToken func(int)) ([]int, error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	if len(prompt) == 0 {
		return nil, errors.New("generate: the prompt is empty (give at least one token)")
	}
	if n < 0 {
		return nil, errors.Errorf("generate: n must be >= 0, got %d", n)
	}
	V := m.Config.Vocab
	r := rand.New(rand.NewSource(s.Seed))
	st := m.NewDecodeState()
	logits, err := m.Step(st, [][]int{prompt})
	if err != nil {
		return nil, errors.Wrap(err, "generate: prompt")
	}
	last := logits[len(logits)-V:]
	var out []int
	for i := 0; i < n; i++ {
		tok := s.pick(last, r)
		out = append(out, tok)
		if onToken != nil {
			onToken(tok)
		}
		if i == n-1 {
			break
		}
		if last, err = m.Step(st, [][]int{{tok}}); err != nil {
			return out, errors.Wrapf(err, "generate: token %d", i+1)
		}
	}
	return out, nil
}

// Argmax is the index of the largest logit (the first of ties).
func Argmax(logits []float64) int {
	best := 0
	for i, v := range logits {
		if v > logits[best] {
			best = i
		}
	}
	return best
}

func (s Sampling) pick(logits []float64, r *rand.Rand) int {
	if s.Temperature == 0 {
		return Argmax(logits)
	}
	idx := make([]int, len(logits))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return logits[idx[a]] > logits[idx[b]] })
	if s.TopK > 0 && s.TopK < len(idx) {
		idx = idx[:s.TopK]
	}
	p := make([]float64, len(idx))
	var z float64
	for i, j := range idx {
		p[i] = math.Exp((logits[j] - logits[idx[0]]) / s.Temperature)
		z += p[i]
	}
	u := r.Float64() * z
	for i, j := range idx {
		if u -= p[i]; u < 0 {
			return j
		}
	}
	return idx[len(idx)-1]
}
