package main

import (
	"flag"
	"fmt"
	"io"

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
	if !flagSet(fs, "vocab") {
		if err := fs.Set("vocab", fmt.Sprint(data.ByteVocab)); err != nil {
			return fail(2, err)
		}
	}
	cfg, err := config()
	if err != nil {
		return fail(2, err)
	}
	if cfg.Vocab < data.ByteVocab {
		return fail(2, errors.Errorf("config.vocab: %d is smaller than the byte tokenizer's %d", cfg.Vocab, data.ByteVocab))
	}
	tc := train.Config{Steps: *steps, Batch: *batch, SeqLen: *seqLen, LR: *lr, Seed: *seed, EvalEvery: *evalEvery, CkptEvery: *ckptEvery}.Resolved()
	if err := tc.Validate(); err != nil {
		return fail(2, err)
	}
	trainText, validText, name, err := loadText(*corpus)
	if err != nil {
		return fail(2, err)
	}
	tok := data.ByteTokenizer{}
	trSeq, err := data.Pack(data.Encode(tok, trainText), tc.SeqLen)
	if err != nil {
		return fail(2, errors.Wrap(err, "training text"))
	}
	vaSeq, err := data.Pack(data.Encode(tok, validText), tc.SeqLen)
	if err != nil {
		return fail(2, errors.Wrap(err, "validation text"))
	}
	fmt.Fprintf(stdout, "corpus %s: %d training and %d validation sequences of %d byte tokens\n", name, trSeq.Len(), vaSeq.Len(), tc.SeqLen)
	run := &train.Run{Dir: *out, Config: train.RunConfig{Model: cfg, Train: tc, Data: name + "/byte"},
		Train: trSeq, Valid: vaSeq, Progress: stdout}
	res, err := run.Start(*resume)
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
		t, v, err := data.KJVSplit()
		return []string{t}, []string{v}, data.KJVName, err
	}
	docs, err := data.LoadCorpus(path)
	if err != nil {
		return nil, nil, "", err
	}
	train, valid = data.SplitDocuments(docs)
	return train, valid, path, nil
}
