package train

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wonderful-matrices/wonderful-matrices-go/experiments/data"
	"github.com/wonderful-matrices/wonderful-matrices-go/graph"
	"github.com/wonderful-matrices/wonderful-matrices-go/layers"
)

// tinyRun is a small cheems-like model on the first 60 kB of the KJV.
func tinyRun(t *testing.T, dir string, steps int) *Run {
	t.Helper()
	train, valid, _, err := data.KJVSplit()
	if err != nil {
		t.Fatal(err)
	}
	tok := data.ByteTokenizer{}
	const T = 32
	tr, err := data.Pack(data.Encode(tok, []string{train[:60000]}), T)
	if err != nil {
		t.Fatal(err)
	}
	va, err := data.Pack(data.Encode(tok, []string{valid[:8000]}), T)
	if err != nil {
		t.Fatal(err)
	}
	return &Run{
		Dir: dir,
		Config: RunConfig{
			Model: graph.Config{Pattern: "SE IE", Vocab: data.ByteVocab, DModel: 32, Heads: 2, MaxPosition: 64,
				SSD: layers.SSDConfig{DState: 8, ChunkLen: 8}, IFA: layers.InnerFuncConfig{Values: 16, RetDim: 8},
				CDMoE: layers.CDMoEConfig{Experts: 16, Heads: 2, TopK: 2, RetDim: 8}},
			Train: Config{Steps: steps, Batch: 4, SeqLen: T, LR: 3e-3, Seed: 5, EvalEvery: 10, EvalBatches: 2, CkptEvery: 10},
			Data:  "kjv/byte (first 60 kB)",
		},
		Train: tr, Valid: va,
	}
}

func readMetrics(t *testing.T, dir string) []Metrics {
	t.Helper()
	f, err := os.Open(filepath.Join(dir, MetricsFile))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []Metrics
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var m Metrics
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("metrics line %q: %v", sc.Text(), err)
		}
		out = append(out, m)
	}
	return out
}

// TestTrainLossFallsAndRepeats: the loss falls; the same seed twice gives the
// same metrics to the bit; a run stopped mid-way (after a checkpoint, with
// steps past it logged) and resumed ends with the same metrics and result.
func TestTrainLossFallsAndRepeats(t *testing.T) {
	const steps = 40
	a, b, c := t.TempDir(), t.TempDir(), t.TempDir()
	resA, err := tinyRun(t, a, steps).Start(false)
	if err != nil {
		t.Fatalf("%+v", err)
	}
	ma := readMetrics(t, a)
	if len(ma) != steps {
		t.Fatalf("%d metrics lines, want %d", len(ma), steps)
	}
	if !(ma[steps-1].CE < ma[0].CE-1) {
		t.Errorf("loss %.3f → %.3f: did not fall by 1 nat", ma[0].CE, ma[steps-1].CE)
	}
	if !(resA.ValPPL < 60) {
		t.Errorf("validation perplexity %.1f, want well below the byte unigram's", resA.ValPPL)
	}
	resB, err := tinyRun(t, b, steps).Start(false)
	if err != nil {
		t.Fatal(err)
	}
	if resB.ValLoss != resA.ValLoss || resB.TrainLoss != resA.TrainLoss {
		t.Errorf("same seed: %v/%v vs %v/%v", resA.ValLoss, resA.TrainLoss, resB.ValLoss, resB.TrainLoss)
	}
	// Crash after 23 steps (checkpoint at 20), resume.
	r := tinyRun(t, c, steps)
	r.StopAfter = 23
	if _, err := r.Start(false); err == nil || !strings.Contains(err.Error(), "stopped after") {
		t.Fatalf("stop: %v", err)
	}
	if _, err := tinyRun(t, c, steps).Start(false); err == nil || !strings.Contains(err.Error(), "unfinished run") {
		t.Errorf("restart without --resume: %v", err)
	}
	resC, err := tinyRun(t, c, steps).Start(true)
	if err != nil {
		t.Fatalf("resume: %+v", err)
	}
	if resC.ValLoss != resA.ValLoss || resC.TrainLoss != resA.TrainLoss {
		t.Errorf("resumed: %v/%v, uninterrupted %v/%v", resC.ValLoss, resC.TrainLoss, resA.ValLoss, resA.TrainLoss)
	}
	mc := readMetrics(t, c)
	if len(mc) != steps {
		t.Fatalf("resumed metrics: %d lines, want %d", len(mc), steps)
	}
	for i := range ma {
		if ma[i].Loss != mc[i].Loss || ma[i].GradNorm != mc[i].GradNorm || ma[i].LR != mc[i].LR {
			t.Fatalf("step %d: resumed loss %v, uninterrupted %v", i+1, mc[i].Loss, ma[i].Loss)
		}
	}
}

// TestRunFolderGuards: a folder of another config is refused before any work
// and left as it was.
func TestRunFolderGuards(t *testing.T) {
	dir := t.TempDir()
	if _, err := tinyRun(t, dir, 3).Start(false); err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(filepath.Join(dir, MetricsFile))
	other := tinyRun(t, dir, 4)
	if _, err := other.Start(true); err == nil || !strings.Contains(err.Error(), "another config") {
		t.Errorf("other config: %v", err)
	}
	if _, err := tinyRun(t, dir, 3).Start(false); err == nil || !strings.Contains(err.Error(), "finished run") {
		t.Errorf("finished run without resume: %v", err)
	}
	after, _ := os.ReadFile(filepath.Join(dir, MetricsFile))
	if string(before) != string(after) {
		t.Error("a refused run changed the metrics")
	}
	bad := tinyRun(t, t.TempDir(), 0)
	if _, err := bad.Start(false); err == nil || !strings.Contains(err.Error(), "train.steps") {
		t.Errorf("zero steps: %v", err)
	}
}

func TestLRSchedule(t *testing.T) {
	const steps = 100
	if lr := LR(0, steps, 1, 0.1, 0.1); lr != 0.1 {
		t.Errorf("first step %v, want 0.1 (1/10 of warm-up)", lr)
	}
	if lr := LR(9, steps, 1, 0.1, 0.1); lr != 1 {
		t.Errorf("end of warm-up %v, want 1", lr)
	}
	if lr := LR(steps-1, steps, 1, 0.1, 0.1); lr < 0.0999 || lr > 0.1001 {
		t.Errorf("last step %v, want 0.1", lr)
	}
}
