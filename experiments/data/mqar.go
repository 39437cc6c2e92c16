package data

import (
	"math"
	"math/rand"

	"github.com/pkg/errors"
)

// MQARVocab is the vocabulary of MQAR (SPEC §6).
const MQARVocab = 8192

// MQARPowerA is the a of the gap distribution p(i) ∝ a·i^(a-1) (Zoology's
// multiquery_ar power_a).
const MQARPowerA = 0.01

// Ignore marks a target that the loss and the accuracy skip.
const Ignore = -1

// MQAR draws one multi-query associative recall example of length T over a
// vocabulary of V (SPEC §6; Wonderful Matrices appendix C.1 after Zoology's
// multiquery_ar): pairs key-value pairs (0 means SPEC §6's T/4; Zoology's
// num_kv_pairs), keys from [1, V/2) and values from
// [V/2, V) without replacement, interleaved as the context (T/2 tokens);
// each key is queried once after it, at ctx + 2·gap, the gaps drawn without
// replacement from [0, (T-ctx)/2) with p(i) ∝ a·(i+1)^(a-1); the target at a
// query is its value and every other target is Ignore; the remaining
// positions hold random tokens (the harder variant).
func MQAR(r *rand.Rand, T, V, pairs int) (ids, targets []int, err error) {
	if pairs == 0 {
		pairs = T / 4
	}
	ctx := 2 * pairs
	space := (T - ctx) / 2
	switch {
	case T < 4:
		return nil, nil, errors.Errorf("mqar: length %d too short (need at least 4)", T)
	case pairs < 1 || pairs > space:
		return nil, nil, errors.Errorf("mqar: %d key-value pairs do not fit %d tokens (need 1 to %d: the context takes 2 a pair and each query 2 after it)", pairs, T, T/4)
	case V < 4 || pairs > V/2-1 || pairs > V-V/2:
		return nil, nil, errors.Errorf("mqar: vocabulary %d too small for %d distinct keys and values", V, pairs)
	}
	ids = make([]int, T)
	targets = make([]int, T)
	for i := range ids {
		ids[i] = r.Intn(V)
		targets[i] = Ignore
	}
	keys := sampleDistinct(r, 1, V/2, pairs)
	values := sampleDistinct(r, V/2, V, pairs)
	for i := 0; i < pairs; i++ {
		ids[2*i], ids[2*i+1] = keys[i], values[i]
	}
	weights := make([]float64, space)
	for i := range weights {
		weights[i] = MQARPowerA * math.Pow(float64(i+1), MQARPowerA-1)
	}
	for i, gap := range weightedDistinct(r, weights, pairs) {
		q := ctx + 2*gap
		ids[q] = keys[i]
		targets[q] = values[i]
	}
	return ids, targets, nil
}

// sampleDistinct draws n distinct ints from [lo, hi).
func sampleDistinct(r *rand.Rand, lo, hi, n int) []int {
	perm := r.Perm(hi - lo)[:n]
	for i := range perm {
		perm[i] += lo
	}
	return perm
}

// weightedDistinct draws n distinct indices with probabilities ∝ w, one at
// a time without replacement (numpy's choice(replace=False, p=w)).
func weightedDistinct(r *rand.Rand, w []float64, n int) []int {
	w = append([]float64(nil), w...)
	out := make([]int, 0, n)
	for len(out) < n {
		var z float64
		for _, v := range w {
			z += v
		}
		u := r.Float64() * z
		pick := -1
		for i, v := range w {
			if v == 0 {
				continue
			}
			pick = i
			if u -= v; u < 0 {
				break
			}
		}
		out = append(out, pick)
		w[pick] = 0
	}
	return out
}

// MQARAccuracy is the share of labelled positions where pred equals the
// target, for one example (SPEC §6: averaged per example by the caller).
func MQARAccuracy(pred, targets []int) float64 {
	right, n := 0, 0
	for i, t := range targets {
		if t == Ignore {
			continue
		}
		n++
		if pred[i] == t {
			right++
		}
	}
	if n == 0 {
		return 0
	}
	return float64(right) / float64(n)
}
