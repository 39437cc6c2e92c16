package wmcli

import (
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/pkg/errors"

	"github.com/wonderful-matrices/wonderful-matrices-go/experiments/data"
	"github.com/wonderful-matrices/wonderful-matrices-go/experiments/train"
	"github.com/wonderful-matrices/wonderful-matrices-go/graph"
)

// runGenerate is `wm generate`: continue a prompt with a trained model.
func runGenerate(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("wm generate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		ckpt   = fs.String("ckpt", "", "a run folder (its last checkpoint) or a checkpoint folder (required)")
		prompt = fs.String("prompt", "", "text to continue (required)")
		n      = fs.Int("n", 200, "tokens to generate")
		temp   = fs.Float64("temperature", 0, "sampling temperature (0: greedy)")
		topK   = fs.Int("top-k", 0, "sample among the k most likely tokens (0: all)")
		seed   = fs.Int64("seed", 0, "seed of the sampling")
	)
	if err := fs.Parse(args); err != nil {
		return 2
	}
	fail := func(code int, err error) int {
		fmt.Fprintf(stderr, "wm generate: %v\n", err)
		return code
	}
	if *ckpt == "" || *prompt == "" {
		return fail(2, errors.New("--ckpt and --prompt are required"))
	}
	dir := *ckpt
	if _, err := os.Stat(filepath.Join(dir, graph.WeightsFile)); err != nil {
		if dir, err = train.CheckpointDir(*ckpt); err != nil {
			return fail(2, err)
		}
	}
	m, _, err := graph.Load(dir)
	if err != nil {
		return fail(2, err)
	}
	tok, err := runTokenizer(*ckpt, dir)
	if err != nil {
		return fail(2, err)
	}
	ids := append([]int{data.BOS}, tok.Encode(*prompt)...)
	fmt.Fprint(stdout, *prompt)
	_, err = graph.Generate(m, ids, *n, graph.Sampling{Temperature: *temp, TopK: *topK, Seed: *seed}, func(id int) {
		if s, err := tok.Decode([]int{id}); err == nil {
			fmt.Fprint(stdout, s)
		}
	})
	fmt.Fprintln(stdout)
	if err != nil {
		return fail(1, err)
	}
	return 0
}

// runTokenizer is the run's tokenizer.json (a BPE trained by wm train) when
// the run folder or the checkpoint's parent has one, else the byte
// tokenizer.
func runTokenizer(ckpt, dir string) (data.Tokenizer, error) {
	for _, p := range []string{filepath.Join(ckpt, data.TokenizerFile), filepath.Join(filepath.Dir(dir), data.TokenizerFile)} {
		if _, err := os.Stat(p); err == nil {
			return data.LoadBPE(p)
		}
	}
	return data.ByteTokenizer{}, nil
}
