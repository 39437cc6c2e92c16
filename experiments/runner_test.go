package experiments_test

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wonderful-matrices/wonderful-matrices-go/experiments"
	"github.com/wonderful-matrices/wonderful-matrices-go/experiments/data"
	"github.com/wonderful-matrices/wonderful-matrices-go/experiments/train"
	"github.com/wonderful-matrices/wonderful-matrices-go/graph"
)

func TestLookupAndPresetErrors(t *testing.T) {
	if _, err := experiments.Lookup("tabel1"); err == nil || !strings.Contains(err.Error(), "table1") {
		t.Errorf("unknown experiment: %v (should list the experiments)", err)
	}
	def, _ := experiments.Lookup("table3")
	_, err := experiments.Runner{Out: t.TempDir(), Preset: "huge"}.Run(def)
	if err == nil || !strings.Contains(err.Error(), "tiny, small, medium, paper") {
		t.Errorf("unknown preset: %v (should list the presets)", err)
	}
	_, err = experiments.Runner{Out: t.TempDir(), Preset: "tiny", Arms: []string{"nope"}}.Run(def)
	if err == nil || !strings.Contains(err.Error(), "cdmoe") {
		t.Errorf("unknown arm: %v (should list the arms)", err)
	}
	for _, p := range experiments.Presets {
		for _, n := range experiments.Names() {
			d, _ := experiments.Lookup(n)
			if _, err := d.Expand(p); err != nil {
				t.Errorf("%s at %s: %v", n, p, err)
			}
		}
	}
}

// snapshot is every file under dir with its bytes.
func snapshot(t *testing.T, dir string) map[string]string {
	files := map[string]string{}
	filepath.Walk(dir, func(p string, info os.FileInfo, err error) error {
		if err == nil && !info.IsDir() {
			b, _ := os.ReadFile(p)
			files[p] = string(b)
		}
		return nil
	})
	return files
}

func same(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// Earlier results are never overwritten: a second run without --resume
// and a folder holding another config's run are errors before any work,
// and leave every file as it was; --resume reuses finished arms; seeds give
// mean ± sd; wm report rebuilds the same table from the files alone.
func TestRunnerGuardsSeedsAndReport(t *testing.T) {
	out := t.TempDir()
	def, _ := experiments.Lookup("table3")
	r := experiments.Runner{Out: out, Preset: experiments.Tiny, Seeds: 2, Arms: []string{"cdmoe"}}
	rep, err := r.Run(def)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(rep.Markdown, " ± ") || !strings.Contains(rep.Markdown, "| 2 |") {
		t.Errorf("two seeds should give mean ± sd and a seed count of 2:\n%s", rep.Markdown)
	}
	before := snapshot(t, out)

	if _, err := r.Run(def); err == nil || !strings.Contains(err.Error(), "--resume") {
		t.Errorf("second run without resume: %v", err)
	}
	if !same(before, snapshot(t, out)) {
		t.Error("a refused run changed files")
	}

	cfg := filepath.Join(experiments.SeedDir(out, "table3", "tiny", "cdmoe", 1), "config.json")
	old, _ := os.ReadFile(cfg)
	os.WriteFile(cfg, []byte(strings.Replace(string(old), `"steps": 30`, `"steps": 31`, 1)), 0o644)
	edited := snapshot(t, out)
	r.Resume = true
	if _, err := r.Run(def); err == nil || !strings.Contains(err.Error(), "another config") {
		t.Errorf("folder of another config: %v", err)
	}
	if !same(edited, snapshot(t, out)) {
		t.Error("a refused run changed files")
	}
	os.WriteFile(cfg, old, 0o644)

	rep2, err := r.Run(def)
	if err != nil {
		t.Fatal(err)
	}
	if rep2.Markdown != rep.Markdown {
		t.Error("resuming finished arms changed the table")
	}
	os.Remove(rep.Table)
	os.RemoveAll(filepath.Join(rep.Dir, "plots"))
	rep3, err := experiments.WriteReport(out, def, experiments.Tiny)
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(rep3.Table); string(b) != rep.Markdown || len(rep3.Plots) == 0 {
		t.Error("the rebuilt report differs")
	}
}

// A closed Stop ends the sweep after the first step of the first arm: that
// arm is checkpointed, no other arm starts, the report is written, and the
// error is the arm's StoppedError; --resume then finishes every arm.
func TestRunnerStop(t *testing.T) {
	out := t.TempDir()
	def, _ := experiments.Lookup("table3")
	stop := make(chan struct{})
	close(stop)
	_, err := experiments.Runner{Out: out, Preset: experiments.Tiny, Stop: stop}.Run(def)
	var se *train.StoppedError
	if !errors.As(err, &se) || se.Step != 1 {
		t.Fatalf("Run with Stop closed: %v", err)
	}
	arms, _ := def.Expand(experiments.Tiny)
	for i, a := range arms {
		_, err := os.Stat(experiments.SeedDir(out, def.Name, experiments.Tiny, a.Name, 0))
		if (i == 0) != (err == nil) {
			t.Errorf("arm %s: folder exists %v after a stop in the first arm", a.Name, err == nil)
		}
	}
	if _, err := os.Stat(filepath.Join(out, def.Name, experiments.Tiny, "table.md")); err != nil {
		t.Errorf("no report after the stop: %v", err)
	}
	rep, err := experiments.Runner{Out: out, Preset: experiments.Tiny, Resume: true}.Run(def)
	if err != nil || len(rep.Missing) != 0 {
		t.Fatalf("resume: %v, missing %v", err, rep.Missing)
	}
}

// A learning-rate search through the runner: seed 0 at each rate of the
// grid (and past an edge), the choice in lr-choice.json, seed 1 at the
// chosen rate beside the trial, the table and seeds.csv naming the rate;
// a second run with Resume trains nothing and without it refuses.
func TestRunnerLRSearch(t *testing.T) {
	out := t.TempDir()
	def, _ := experiments.Lookup("table3")
	var log strings.Builder
	r := experiments.Runner{Out: out, Preset: experiments.Tiny, Seeds: 2, Arms: []string{"moe"}, LRGrid: []float64{1e-3, 1e-2}, Log: &log}
	rep, err := r.Run(def)
	if err != nil {
		t.Fatal(err)
	}
	armDir := experiments.ArmDir(out, "table3", experiments.Tiny, "moe")
	c, ok, err := experiments.ReadLRChoice(armDir)
	if err != nil || !ok {
		t.Fatalf("no lr-choice.json: %v", err)
	}
	if len(c.Trials) < 2 || len(c.Trials) > 2+experiments.MaxLRExtensions {
		t.Errorf("%d trials: %+v", len(c.Trials), c.Trials)
	}
	var best float64 = math.Inf(1)
	for _, tr := range c.Trials {
		if tr.Value != nil && *tr.Value < best {
			best = *tr.Value
		}
		if _, err := os.Stat(experiments.LRSeedDir(out, "table3", experiments.Tiny, "moe", tr.LR, 0)); err != nil {
			t.Errorf("trial at %g has no folder: %v", tr.LR, err)
		}
	}
	for _, tr := range c.Trials {
		if tr.LR == c.Chosen && (tr.Value == nil || *tr.Value != best) {
			t.Errorf("chose %g, not the lowest validation loss %v: %+v", c.Chosen, best, c.Trials)
		}
	}
	res, err := train.ReadResult(experiments.LRSeedDir(out, "table3", experiments.Tiny, "moe", c.Chosen, 1))
	if err != nil || res.TestPPL <= 0 {
		t.Fatalf("seed 1 at the chosen rate: %+v, %v", res, err)
	}
	all, _, err := experiments.Collect(out, def, experiments.Tiny)
	if err != nil || len(all) != 4 || len(all[0].Seeds) != 2 || all[0].LR == nil || all[0].Arm.Train.LR != c.Chosen {
		t.Fatalf("collect: %+v, %v", all, err)
	}
	if !strings.Contains(rep.Markdown, "| lr |") || !strings.Contains(rep.Markdown, c.Describe()) || !strings.Contains(rep.Markdown, "lr-choice.json") {
		t.Errorf("the table does not give the chosen rate %s:\n%s", c.Describe(), rep.Markdown)
	}
	seeds, err := os.ReadFile(rep.SeedsCSV)
	if err != nil || strings.Count(string(seeds), "\nmoe,") != 2 {
		t.Errorf("seeds.csv: %v\n%s", err, seeds)
	}
	log.Reset()
	r.Resume = true
	if _, err := r.Run(def); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(log.String(), "step ") {
		t.Errorf("a resumed finished search trained again:\n%s", log.String())
	}
	r.Resume = false
	if _, err := r.Run(def); err == nil || !strings.Contains(err.Error(), "--resume") {
		t.Errorf("a second run without resume: %v", err)
	}
}

// A cached value's make may get other keys (the extrapolation task's packed
// sequences are made from the language-model task's tokens).
func TestCacheNested(t *testing.T) {
	c := experiments.NewCache()
	done := make(chan error, 1)
	go func() {
		v, err := c.Get("outer", func() (any, error) {
			inner, err := c.Get("inner", func() (any, error) { return 2, nil })
			return inner.(int) + 1, err
		})
		if err == nil && v != 3 {
			err = errors.New("wrong value")
		}
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a nested Get deadlocked")
	}
}

// The language-model task on a corpus of one's own with a trained BPE: the
// corpus is held out three ways, the tokenizer is saved in the run's
// folder, and the run reports a test perplexity; a model vocabulary smaller
// than the tokenizer's is refused before any work.
func TestLMTaskOwnCorpusAndBPE(t *testing.T) {
	dir := t.TempDir()
	var text strings.Builder
	for i := 0; i < 400; i++ {
		fmt.Fprintf(&text, "line %d: the quick brown fox jumps over the lazy dog %d times.\n", i, i%7)
	}
	corpus := filepath.Join(dir, "corpus.txt")
	if err := os.WriteFile(corpus, []byte(text.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	task := experiments.LMTask{Corpus: corpus, BPE: 300}
	arm := func(vocab int) experiments.Arm {
		return experiments.Arm{Name: "a", Task: task,
			Model: graph.Config{Pattern: "SM", Vocab: vocab, DModel: 16, Heads: 2},
			Train: train.Config{Steps: 10, Batch: 2, SeqLen: 32, LR: 3e-3, EvalEvery: 5}}
	}
	def := &experiments.Definition{Name: "lm-own-corpus", Version: 1, Title: "t", Reference: "r",
		Arms:    func(string) ([]experiments.Arm, error) { return []experiments.Arm{arm(300)}, nil },
		Columns: []experiments.Column{{Title: "test ppl", Key: "test_ppl", Digits: 2}}}
	if err := def.Check(); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "results")
	if _, err := (experiments.Runner{Out: out, Preset: experiments.Tiny}).Run(def); err != nil {
		t.Fatal(err)
	}
	runDir := experiments.SeedDir(out, def.Name, experiments.Tiny, "a", 0)
	res, err := train.ReadResult(runDir)
	if err != nil || !(res.TestPPL > 1) || !(res.ValPPL > 1) {
		t.Fatalf("result %+v, %v", res, err)
	}
	cfg, _ := os.ReadFile(filepath.Join(runDir, "config.json"))
	if !strings.Contains(string(cfg), `"data": "`+corpus+`/bpe:300"`) {
		t.Errorf("config.json does not name the corpus and tokenizer:\n%s", cfg)
	}
	if _, err := os.Stat(filepath.Join(runDir, data.TokenizerFile)); err != nil {
		t.Errorf("the trained tokenizer was not saved: %v", err)
	}
	small := *def
	small.Name = "lm-own-corpus-small-vocab"
	small.Arms = func(string) ([]experiments.Arm, error) { return []experiments.Arm{arm(data.ByteVocab)}, nil }
	if _, err := small.Expand(experiments.Tiny); err == nil || !strings.Contains(err.Error(), "smaller than") {
		t.Errorf("a vocabulary below the BPE's: %v", err)
	}
}
