package experiments

import (
	"fmt"

	"github.com/pkg/errors"

	"github.com/wonderful-matrices/wonderful-matrices-go/experiments/data"
	"github.com/wonderful-matrices/wonderful-matrices-go/experiments/train"
)

// LMTask trains a language model and reports its perplexity on the test
// split, which no choice saw. The corpus is the embedded KJV by default
// (split by books: data.KJVSplit), or a file or folder of .txt, .txt.gz or
// .jsonl (data.LoadCorpus; the last 5% held out, half validation, half
// test: data.SplitHeldOut). Tokens are bytes, or a byte-level BPE trained
// on the training text.
type LMTask struct {
	// Corpus is the path of a user's corpus, "" for the embedded KJV.
	Corpus string
	// BPE, when > 0, is the vocabulary size of a BPE tokenizer trained on
	// the training split (the arm's model.vocab must be at least that); 0
	// uses bytes (data.ByteVocab).
	BPE int
}

// TaskLM is the language-model task on the KJV in bytes: table1, table2,
// table3 and ssdlong.
var TaskLM = LMTask{}

// Name is "lm".
func (LMTask) Name() string { return "lm" }

// Measures are the training measures.
func (LMTask) Measures() (keys, prefixes []string) { return trainingMeasures, nil }

// Data is "kjv/byte" for the default, else the corpus and tokenizer.
func (t LMTask) Data(Arm) string {
	corpus, tok := data.KJVName, "byte"
	if t.Corpus != "" {
		corpus = t.Corpus
	}
	if t.BPE > 0 {
		tok = fmt.Sprintf("bpe:%d", t.BPE)
	}
	return corpus + "/" + tok
}

// Check refuses a model vocabulary smaller than the tokenizer's, and a
// corpus that does not load.
func (t LMTask) Check(a Arm) error {
	want := data.ByteVocab
	if t.BPE > 0 {
		if t.BPE < data.ByteVocab {
			return errors.Errorf("lm: a BPE of %d tokens is smaller than the %d bytes and specials", t.BPE, data.ByteVocab)
		}
		want = t.BPE
	}
	if a.Model.Vocab < want {
		return errors.Errorf("lm: model.vocab %d is smaller than the %s tokenizer's %d", a.Model.Vocab, t.Data(a), want)
	}
	if t.Corpus != "" {
		if _, err := data.LoadCorpus(t.Corpus); err != nil {
			return errors.Wrap(err, "lm")
		}
	}
	return nil
}

// lmTokens are a corpus's three splits as token ids, and the tokenizer.
type lmTokens struct {
	train, valid, test []int
	tok                data.Tokenizer
}

// tokens reads, splits and tokenizes the corpus once per sweep.
func (t LMTask) tokens(cache *Cache) (*lmTokens, error) {
	v, err := cache.Get("lm tokens "+t.Data(Arm{}), func() (any, error) {
		var tr, va, te []string
		if t.Corpus == "" {
			a, b, c, err := data.KJVSplit()
			if err != nil {
				return nil, err
			}
			tr, va, te = []string{a}, []string{b}, []string{c}
		} else {
			docs, err := data.LoadCorpus(t.Corpus)
			if err != nil {
				return nil, err
			}
			tr, va, te = data.SplitHeldOut(docs)
		}
		var tok data.Tokenizer = data.ByteTokenizer{}
		if t.BPE > 0 {
			bpe, err := data.TrainBPE(tr, t.BPE)
			if err != nil {
				return nil, err
			}
			tok = bpe
		}
		return &lmTokens{data.Encode(tok, tr), data.Encode(tok, va), data.Encode(tok, te), tok}, nil
	})
	if err != nil {
		return nil, errors.Wrapf(err, "lm data %s", t.Data(Arm{}))
	}
	return v.(*lmTokens), nil
}

// lmSplit is a corpus packed into sequences of one length.
type lmSplit struct{ train, valid, test data.Sequences }

// packed returns the three splits as sequences of seqLen tokens.
func (t LMTask) packed(cache *Cache, seqLen int) (lmSplit, error) {
	v, err := cache.Get(fmt.Sprintf("lm packed %s %d", t.Data(Arm{}), seqLen), func() (any, error) {
		ids, err := t.tokens(cache)
		if err != nil {
			return nil, err
		}
		var p lmSplit
		for _, part := range []struct {
			name string
			ids  []int
			dst  *data.Sequences
		}{{"training", ids.train, &p.train}, {"validation", ids.valid, &p.valid}, {"test", ids.test, &p.test}} {
			if *part.dst, err = data.Pack(part.ids, seqLen); err != nil {
				return nil, errors.Wrapf(err, "%s split of %s", part.name, t.Data(Arm{}))
			}
		}
		return p, nil
	})
	if err != nil {
		return lmSplit{}, err
	}
	return v.(lmSplit), nil
}

// Prepare gives the run the three splits at the arm's sequence length.
// A trained BPE is saved in the run folder as tokenizer.json.
func (t LMTask) Prepare(run *train.Run, a Arm, _ int, cache *Cache) error {
	p, err := t.packed(cache, a.Train.SeqLen)
	if err != nil {
		return err
	}
	run.Train, run.Valid, run.Test = p.train, p.valid, p.test
	ids, _ := t.tokens(cache)
	if bpe, ok := ids.tok.(*data.BPE); ok {
		j, err := bpe.JSON()
		if err != nil {
			return err
		}
		run.Files = map[string][]byte{data.TokenizerFile: j}
	}
	return nil
}
