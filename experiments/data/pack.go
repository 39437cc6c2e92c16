package data

import (
	"math/rand"

	"github.com/pkg/errors"
)

// Encode tokenizes texts into one stream, each text framed by BOS and EOS.
func Encode(tok Tokenizer, texts []string) []int {
	var ids []int
	for _, t := range texts {
		ids = append(ids, BOS)
		ids = append(ids, tok.Encode(t)...)
		ids = append(ids, EOS)
	}
	return ids
}

// Sequences are fixed-length training examples cut from a token stream:
// example i is stream[i·T : i·T+T+1], inputs its first T tokens and targets
// its last T (the next token of each).
type Sequences struct {
	stream []int
	T      int
}

// Pack cuts stream into non-overlapping sequences of seqLen (+1 for the last
// target). A stream too short for one sequence is an error.
func Pack(stream []int, seqLen int) (Sequences, error) {
	if seqLen < 1 {
		return Sequences{}, errors.Errorf("pack: sequence length must be >= 1, got %d", seqLen)
	}
	if len(stream) < seqLen+1 {
		return Sequences{}, errors.Errorf("pack: %d tokens, too few for one sequence of %d", len(stream), seqLen)
	}
	return Sequences{stream: stream, T: seqLen}, nil
}

// Len is the number of sequences.
func (s Sequences) Len() int { return (len(s.stream) - 1) / s.T }

// Tokens is the number of tokens in the stream.
func (s Sequences) Tokens() int { return len(s.stream) }

// At returns the inputs and targets of sequence i.
func (s Sequences) At(i int) (ids, targets []int) {
	w := s.stream[i*s.T : i*s.T+s.T+1]
	return w[:s.T], w[1:]
}

// Batcher draws training batches as a pure function of the step: example j
// of step s is sequence perm_e[(s·B+j) mod n] with e = (s·B+j) div n and
// perm_e a permutation seeded by (seed, e). A run resumed at step s sees the
// batches an uninterrupted run would, without saving any data state.
type Batcher struct {
	seqs  Sequences
	batch int
	seed  int64
	epoch int
	perm  []int
}

// NewBatcher returns a batcher of batch sequences per step.
func NewBatcher(seqs Sequences, batch int, seed int64) (*Batcher, error) {
	if batch < 1 {
		return nil, errors.Errorf("batcher: batch must be >= 1, got %d", batch)
	}
	return &Batcher{seqs: seqs, batch: batch, seed: seed, epoch: -1}, nil
}

// Batch returns the ids and targets [batch][T] of step.
func (b *Batcher) Batch(step int) (ids, targets [][]int) {
	n := b.seqs.Len()
	for j := 0; j < b.batch; j++ {
		g := step*b.batch + j
		if e := g / n; e != b.epoch {
			b.epoch = e
			b.perm = rand.New(rand.NewSource(b.seed*1_000_003 + int64(e))).Perm(n)
		}
		x, y := b.seqs.At(b.perm[g%n])
		ids, targets = append(ids, x), append(targets, y)
	}
	return ids, targets
}
