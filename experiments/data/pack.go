package data

import (
	"math"
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

// Dataset is a set of fixed-length training examples: the inputs and the
// target of each position (the next token; a negative target is ignored by
// the loss, as MQAR's unlabelled positions are).
type Dataset interface {
	// Len is the number of examples.
	Len() int
	// SeqLen is the tokens per example.
	SeqLen() int
	// At returns example i's inputs and targets, each SeqLen long.
	At(i int) (ids, targets []int)
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

// SeqLen is T.
func (s Sequences) SeqLen() int { return s.T }

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
	seqs  Dataset
	batch int
	seed  int64
	epoch int
	perm  []int
}

// NewBatcher returns a batcher of batch sequences per step.
func NewBatcher(seqs Dataset, batch int, seed int64) (*Batcher, error) {
	if batch < 1 {
		return nil, errors.Errorf("batcher: batch must be >= 1, got %d", batch)
	}
	if seqs.Len() < 1 {
		return nil, errors.New("batcher: the dataset is empty")
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

// Examples is a Dataset held as explicit rows, for synthetic tasks whose
// targets are not the shifted inputs (MQAR).
type Examples struct {
	IDs, Targets [][]int
}

// NewExamples checks that every row has the same length as the first and
// its targets; no rows is an error.
func NewExamples(ids, targets [][]int) (Examples, error) {
	if len(ids) == 0 || len(ids) != len(targets) {
		return Examples{}, errors.Errorf("examples: %d input rows and %d target rows (need the same, at least one)", len(ids), len(targets))
	}
	for i := range ids {
		if len(ids[i]) != len(ids[0]) || len(targets[i]) != len(ids[0]) {
			return Examples{}, errors.Errorf("examples: row %d has %d inputs and %d targets, row 0 has %d", i, len(ids[i]), len(targets[i]), len(ids[0]))
		}
	}
	return Examples{IDs: ids, Targets: targets}, nil
}

// Len is the number of rows.
func (e Examples) Len() int { return len(e.IDs) }

// SeqLen is the length of a row.
func (e Examples) SeqLen() int { return len(e.IDs[0]) }

// At returns row i.
func (e Examples) At(i int) (ids, targets []int) { return e.IDs[i], e.Targets[i] }

// UnigramPPL is the perplexity on valid of the unigram model of train
// (token frequencies with add-one smoothing over vocab): the baseline a
// language model must beat by learning any context at all.
func UnigramPPL(train, valid []int, vocab int) float64 {
	counts := make([]float64, vocab)
	for _, t := range train {
		if t >= 0 && t < vocab {
			counts[t]++
		}
	}
	total := float64(len(train) + vocab)
	var nll float64
	for _, t := range valid {
		c := 1.0
		if t >= 0 && t < vocab {
			c += counts[t]
		}
		nll -= math.Log(c / total)
	}
	return math.Exp(nll / float64(len(valid)))
}
