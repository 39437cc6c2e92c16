package wmcli

import (
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/pkg/errors"

	"github.com/wonderful-matrices/wonderful-matrices-go/experiments/data"
	"github.com/wonderful-matrices/wonderful-matrices-go/experiments/train"
)

// runTrain is `wm train`: one model on the embedded KJV or a user's corpus,
// byte-level tokens, into --out, resumable.
func runTrain(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("wm train", flag.ContinueOnError)
	fs.SetOutput(stderr)
	config := modelFlags(fs)
	var (
		corpus    = fs.String("corpus", "", "corpus: a .txt, .txt.gz, .jsonl file or a folder (default: the embedded KJV)")
		out       = fs.String("out", "", "run folder (required)")
		steps     = fs.Int("steps", 0, "optimiser steps (required)")
		seed      = fs.Int64("seed", 0, "seed of weights and batch order")
		batch     = fs.Int("batch", 8, "sequences per step")
		seqLen    = fs.Int("seq-len", 128, "tokens per sequence")
		lr        = fs.Float64("lr", 1e-3, "peak learning rate")
		evalEvery = fs.Int("eval-every", 0, "steps between validation perplexities (0: ten per run)")
		ckptEvery = fs.Int("ckpt-every", 0, "steps between checkpoints (0: five per run)")
		resume    = fs.Bool("resume", false, "continue the run in --out from its last checkpoint")
		tokenizer = fs.String("tokenizer", "byte", "byte, or bpe:N to train a byte-level BPE of N tokens on the training text (saved as tokenizer.json)")
	)
	fs.Usage = func() {
		fmt.Fprintln(stderr, `usage: wm train (--arch NAME | --pattern "P") --steps N --out DIR [flags]`)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return 2
	}
	fail := func(code int, err error) int {
		fmt.Fprintf(stderr, "wm train: %v\n", err)
		return code
	}
	if *out == "" {
		return fail(2, errors.New("--out is required"))
	}
	bpeSize, err := parseTokenizer(*tokenizer)
	if err != nil {
		return fail(2, err)
	}
	vocab := data.ByteVocab
	if bpeSize > 0 {
		vocab = bpeSize
	}
	if !flagSet(fs, "vocab") {
		if err := fs.Set("vocab", fmt.Sprint(vocab)); err != nil {
			return fail(2, err)
		}
	}
	cfg, err := config()
	if err != nil {
		return fail(2, err)
	}
	tc := train.Config{Steps: *steps, Batch: *batch, SeqLen: *seqLen, LR: *lr, Seed: *seed, EvalEvery: *evalEvery, CkptEvery: *ckptEvery}.Resolved()
	if err := tc.Validate(); err != nil {
		return fail(2, err)
	}
	trainText, validText, name, err := loadText(*corpus)
	if err != nil {
		return fail(2, err)
	}
	var tok data.Tokenizer = data.ByteTokenizer{}
	files := map[string][]byte{}
	if bpeSize > 0 {
		fmt.Fprintf(stdout, "training a BPE tokenizer of %d tokens on the training text\n", bpeSize)
		bpe, err := data.TrainBPE(trainText, bpeSize)
		if err != nil {
			return fail(2, err)
		}
		if files[data.TokenizerFile], err = bpe.JSON(); err != nil {
			return fail(1, err)
		}
		tok = bpe
		if bpe.VocabSize() < bpeSize {
			fmt.Fprintf(stdout, "the BPE stopped at %d tokens: no pair of tokens occurs twice more in the training text\n", bpe.VocabSize())
		}
		if !flagSet(fs, "vocab") {
			cfg.Vocab = bpe.VocabSize()
		}
	}
	if cfg.Vocab < tok.VocabSize() {
		return fail(2, errors.Errorf("config.vocab: %d is smaller than the %s tokenizer's %d", cfg.Vocab, tok.Name(), tok.VocabSize()))
	}
	trSeq, err := data.Pack(data.Encode(tok, trainText), tc.SeqLen)
	if err != nil {
		return fail(2, errors.Wrap(err, "training text"))
	}
	vaSeq, err := data.Pack(data.Encode(tok, validText), tc.SeqLen)
	if err != nil {
		return fail(2, errors.Wrap(err, "validation text"))
	}
	fmt.Fprintf(stdout, "corpus %s: %d training and %d validation sequences of %d %s tokens\n", name, trSeq.Len(), vaSeq.Len(), tc.SeqLen, tok.Name())
	stop, release := stopOnSignal(stderr)
	defer release()
	run := &train.Run{Dir: *out, Config: train.RunConfig{Model: cfg, Train: tc, Data: name + "/" + tok.Name()},
		Train: trSeq, Valid: vaSeq, Progress: stdout, Files: files, Stop: stop}
	res, err := run.Start(*resume)
	var stopped *train.StoppedError
	if errors.As(err, &stopped) {
		fmt.Fprintf(stderr, "wm train: %v\nto resume: %s\n", err, resumeLine(append([]string{"train"}, args...)))
		return ExitStopped
	}
	if err != nil {
		return fail(1, err)
	}
	fmt.Fprintf(stdout, "done: %d steps, train loss %.4f, validation perplexity %.3f, %.0f tokens/s; results in %s\n",
		res.Steps, res.TrainLoss, res.ValPPL, res.TokensPerS, *out)
	return 0
}

// loadText returns the training and validation texts of a corpus path, or
// of the embedded KJV when path is empty, and the corpus's name.
func loadText(path string) (train, valid []string, name string, err error) {
	if path == "" {
		t, v, _, err := data.KJVSplit() // the test books are left for experiments' reported numbers
		return []string{t}, []string{v}, data.KJVName, err
	}
	docs, err := data.LoadCorpus(path)
	if err != nil {
		return nil, nil, "", err
	}
	train, valid = data.SplitDocuments(docs)
	return train, valid, path, nil
}

// parseTokenizer reads --tokenizer: "byte" is 0, "bpe:N" is N.
func parseTokenizer(s string) (int, error) {
	if s == "byte" {
		return 0, nil
	}
	if n, ok := strings.CutPrefix(s, "bpe:"); ok {
		v, err := strconv.Atoi(n)
		if err == nil && v > data.ByteVocab {
			return v, nil
		}
	}
	return 0, errors.Errorf("--tokenizer: %q is not \"byte\" or \"bpe:N\" with N > %d", s, data.ByteVocab)
}
