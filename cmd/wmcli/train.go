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
	"github.com/wonderful-matrices/wonderful-matrices-go/graph"
)

// runTrain is `wm train`: one model on the embedded KJV or a user's corpus,
// byte-level tokens, into --out, resumable.
func runTrain(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("wm train", flag.ContinueOnError)
	fs.SetOutput(stderr)
	config := modelFlags(fs)
	f := newTrainFlags(fs)
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
	if *f.out == "" {
		return fail(2, errors.New("--out is required"))
	}
	cfg, tc, d, err := f.prepare(fs, config, stdout)
	if err != nil {
		return fail(2, err)
	}
	stop, release := stopOnSignal(stderr)
	defer release()
	run := &train.Run{Dir: *f.out, Config: train.RunConfig{Model: cfg, Train: tc, Data: d.name + "/" + d.tok.Name()},
		Train: d.train, Valid: d.valid, Progress: stdout, Files: d.files, Stop: stop}
	res, err := run.Start(*f.resume)
	var stopped *train.StoppedError
	if errors.As(err, &stopped) {
		fmt.Fprintf(stderr, "wm train: %v\nto resume: %s\n", err, resumeLine(append([]string{"train"}, args...)))
		return ExitStopped
	}
	if err != nil {
		return fail(1, err)
	}
	fmt.Fprintf(stdout, "done: %d steps, train loss %.4f, validation perplexity %.3f, %.0f tokens/s; results in %s\n",
		res.Steps, res.TrainLoss, res.ValPPL, res.TokensPerS, *f.out)
	return 0
}

// trainFlags are wm train's flags beside the model's.
type trainFlags struct {
	corpus, out, tokenizer                     *string
	steps, batch, seqLen, evalEvery, ckptEvery *int
	shards, shardThreads                       *int
	seed                                       *int64
	lr                                         *float64
	resume                                     *bool
}

func newTrainFlags(fs *flag.FlagSet) trainFlags {
	return trainFlags{
		corpus:       fs.String("corpus", "", "corpus: a .txt, .txt.gz, .jsonl file or a folder (default: the embedded KJV)"),
		out:          fs.String("out", "", "run folder (required)"),
		steps:        fs.Int("steps", 0, "optimiser steps (required)"),
		seed:         fs.Int64("seed", 0, "seed of weights and batch order"),
		batch:        fs.Int("batch", 8, "sequences per step"),
		seqLen:       fs.Int("seq-len", 128, "tokens per sequence"),
		lr:           fs.Float64("lr", 1e-3, "peak learning rate"),
		evalEvery:    fs.Int("eval-every", 0, "steps between validation perplexities (0: ten per run)"),
		ckptEvery:    fs.Int("ckpt-every", 0, "steps between checkpoints (0: five per run)"),
		resume:       fs.Bool("resume", false, "continue the run in --out from its last checkpoint"),
		shards:       fs.Int("shards", 0, "split each batch over this many graphs run at once (data parallelism on several cores; must divide --batch)"),
		shardThreads: fs.Int("shard-threads", 0, "with --shards, run each shard's loops on at most this many goroutines (0: GOMAXPROCS; 1 with as many shards as cores is faster for small models; the same results either way)"),
		tokenizer:    fs.String("tokenizer", "byte", "byte, or bpe:N to train a byte-level BPE of N tokens on the training text (saved as tokenizer.json)"),
	}
}

// prepare reads the model and training configs and the data the flags
// name: the vocabulary follows the tokenizer unless --vocab is given, and
// may not be smaller than it.
func (f trainFlags) prepare(fs *flag.FlagSet, config func() (graph.Config, error), stdout io.Writer) (graph.Config, train.Config, trainData, error) {
	bpeSize, err := parseTokenizer(*f.tokenizer)
	if err != nil {
		return graph.Config{}, train.Config{}, trainData{}, err
	}
	vocab := data.ByteVocab
	if bpeSize > 0 {
		vocab = bpeSize
	}
	if !flagSet(fs, "vocab") {
		if err := fs.Set("vocab", fmt.Sprint(vocab)); err != nil {
			return graph.Config{}, train.Config{}, trainData{}, err
		}
	}
	cfg, err := config()
	if err != nil {
		return cfg, train.Config{}, trainData{}, err
	}
	tc := f.config()
	if err := tc.Validate(); err != nil {
		return cfg, tc, trainData{}, err
	}
	d, err := prepareTrainData(*f.corpus, bpeSize, tc.SeqLen, stdout)
	if err != nil {
		return cfg, tc, d, err
	}
	if !flagSet(fs, "vocab") && bpeSize > 0 {
		cfg.Vocab = d.tok.VocabSize()
	}
	if cfg.Vocab < d.tok.VocabSize() {
		return cfg, tc, d, errors.Errorf("config.vocab: %d is smaller than the %s tokenizer's %d", cfg.Vocab, d.tok.Name(), d.tok.VocabSize())
	}
	return cfg, tc, d, nil
}

// config is the training config the flags give, defaults filled in.
func (f trainFlags) config() train.Config {
	return train.Config{Steps: *f.steps, Batch: *f.batch, SeqLen: *f.seqLen, LR: *f.lr, Seed: *f.seed, EvalEvery: *f.evalEvery, CkptEvery: *f.ckptEvery, Shards: *f.shards, ShardThreads: *f.shardThreads}.Resolved()
}

// trainData is wm train's data: the corpus's two splits packed into
// sequences, its tokenizer and the files the run keeps (tokenizer.json).
type trainData struct {
	train, valid data.Sequences
	tok          data.Tokenizer
	files        map[string][]byte
	name         string
}

// prepareTrainData loads the corpus (the KJV when path is ""), trains a
// BPE of bpeSize tokens on its training text when bpeSize > 0, and packs
// both splits into sequences of seqLen tokens.
func prepareTrainData(path string, bpeSize, seqLen int, stdout io.Writer) (trainData, error) {
	trainText, validText, name, err := loadText(path)
	if err != nil {
		return trainData{}, err
	}
	d := trainData{tok: data.ByteTokenizer{}, files: map[string][]byte{}, name: name}
	if bpeSize > 0 {
		fmt.Fprintf(stdout, "training a BPE tokenizer of %d tokens on the training text\n", bpeSize)
		bpe, err := data.TrainBPE(trainText, bpeSize)
		if err != nil {
			return d, err
		}
		if d.files[data.TokenizerFile], err = bpe.JSON(); err != nil {
			return d, err
		}
		d.tok = bpe
		if bpe.VocabSize() < bpeSize {
			fmt.Fprintf(stdout, "the BPE stopped at %d tokens: no pair of tokens occurs twice more in the training text\n", bpe.VocabSize())
		}
	}
	if d.train, err = data.Pack(data.Encode(d.tok, trainText), seqLen); err != nil {
		return d, errors.Wrap(err, "training text")
	}
	if d.valid, err = data.Pack(data.Encode(d.tok, validText), seqLen); err != nil {
		return d, errors.Wrap(err, "validation text")
	}
	fmt.Fprintf(stdout, "corpus %s: %d training and %d validation sequences of %d %s tokens\n", name, d.train.Len(), d.valid.Len(), seqLen, d.tok.Name())
	return d, nil
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
