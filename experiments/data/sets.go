package data

import (
	"math/rand"

	"github.com/pkg/errors"
)

// exampleSeed is the seed of example i of a generated set: distinct sets
// (train, test) use distinct seeds, and example i never depends on any other.
func exampleSeed(seed int64, i int) int64 { return seed*7_919_993 + int64(i) + 1 }

// MQARSet is a Dataset of n MQAR examples of length T over a vocabulary of
// V with Pairs key-value pairs (0: T/4), generated on demand: example i is MQAR drawn from a source seeded by
// (seed, i), so no example is held in memory and any one is reproducible.
type MQARSet struct {
	T, V, Pairs, N int
	Seed           int64
}

// NewMQARSet checks the sizes by drawing example 0.
func NewMQARSet(T, V, pairs, n int, seed int64) (MQARSet, error) {
	if n < 1 {
		return MQARSet{}, errors.Errorf("mqar set: %d examples, need at least 1", n)
	}
	s := MQARSet{T: T, V: V, Pairs: pairs, N: n, Seed: seed}
	if _, _, err := MQAR(rand.New(rand.NewSource(exampleSeed(seed, 0))), T, V, pairs); err != nil {
		return MQARSet{}, err
	}
	return s, nil
}

// Len is N.
func (s MQARSet) Len() int { return s.N }

// SeqLen is T.
func (s MQARSet) SeqLen() int { return s.T }

// At draws example i.
func (s MQARSet) At(i int) (ids, targets []int) {
	ids, targets, _ = MQAR(rand.New(rand.NewSource(exampleSeed(s.Seed, i))), s.T, s.V, s.Pairs) // sizes checked by NewMQARSet
	return ids, targets
}

// Examples draws every example into memory (for evaluation).
func (s MQARSet) Examples() Examples {
	e := Examples{IDs: make([][]int, s.N), Targets: make([][]int, s.N)}
	for i := range e.IDs {
		e.IDs[i], e.Targets[i] = s.At(i)
	}
	return e
}

// PasskeySet is a Dataset of n passkey sequences of T tokens: BOS, the
// prompt, the answer prefix and the key (CoCA appendix B.1), padded with
// PAD whose targets are ignored; example i is drawn from (seed, i).
type PasskeySet struct {
	T, N int
	Seed int64
	Tok  Tokenizer
}

// PasskeySlack is the room a passkey prompt of length T−PasskeySlack
// leaves in T tokens for BOS, the answer prefix, the key and a period.
const PasskeySlack = 32

// NewPasskeySet checks that a passkey prompt fits in T tokens.
func NewPasskeySet(T, n int, seed int64, tok Tokenizer) (PasskeySet, error) {
	if n < 1 {
		return PasskeySet{}, errors.Errorf("passkey set: %d examples, need at least 1", n)
	}
	if _, err := Passkey(rand.New(rand.NewSource(0)), T-PasskeySlack); err != nil {
		return PasskeySet{}, errors.Wrapf(err, "passkey set of %d tokens", T)
	}
	return PasskeySet{T: T, N: n, Seed: seed, Tok: tok}, nil
}

// Len is N.
func (s PasskeySet) Len() int { return s.N }

// SeqLen is T.
func (s PasskeySet) SeqLen() int { return s.T }

// At draws example i.
func (s PasskeySet) At(i int) (ids, targets []int) {
	ex, _ := Passkey(rand.New(rand.NewSource(exampleSeed(s.Seed, i))), s.T-PasskeySlack) // length checked by NewPasskeySet
	stream := append([]int{BOS}, s.Tok.Encode(ex.Text())...)
	stream = append(stream, EOS)
	ids, targets = make([]int, s.T), make([]int, s.T)
	for p := 0; p < s.T; p++ {
		ids[p], targets[p] = PAD, Ignore
		if p < len(stream) {
			ids[p] = stream[p]
		}
		if p+1 < len(stream) {
			targets[p] = stream[p+1]
		}
	}
	return ids, targets
}

// Concat is the Dataset of its parts one after another; they must share a
// sequence length.
type Concat []Dataset

// NewConcat checks that the parts share a length and are not all empty.
func NewConcat(parts ...Dataset) (Concat, error) {
	n := 0
	for i, p := range parts {
		if p.SeqLen() != parts[0].SeqLen() {
			return nil, errors.Errorf("concat: part %d has sequences of %d, part 0 of %d", i, p.SeqLen(), parts[0].SeqLen())
		}
		n += p.Len()
	}
	if n == 0 {
		return nil, errors.New("concat: no examples")
	}
	return Concat(parts), nil
}

// Len is the sum of the parts' lengths.
func (c Concat) Len() int {
	n := 0
	for _, p := range c {
		n += p.Len()
	}
	return n
}

// SeqLen is the parts' length.
func (c Concat) SeqLen() int { return c[0].SeqLen() }

// At returns example i counting through the parts in order.
func (c Concat) At(i int) (ids, targets []int) {
	for _, p := range c {
		if i < p.Len() {
			return p.At(i)
		}
		i -= p.Len()
	}
	panic("concat: index out of range")
}
