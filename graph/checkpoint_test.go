package graph_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gorgonia.org/tensor"

	"github.com/wonderful-matrices/wonderful-matrices-go/graph"
)

// TestCheckpointRoundTrip: save → load → forward gives the same logits to
// the bit, with the metadata, for a float32 and a float64 model.
func TestCheckpointRoundTrip(t *testing.T) {
	for _, dtype := range []tensor.Dtype{tensor.Float32, tensor.Float64} {
		cfg := tinyConfig("cheems", "")
		m := newModel(t, cfg, dtype, 3)
		dir := filepath.Join(t.TempDir(), "ckpt")
		if err := graph.Save(dir, m, map[string]string{"step": "42"}); err != nil {
			t.Fatalf("%+v", err)
		}
		back, meta, err := graph.Load(dir)
		if err != nil {
			t.Fatalf("%+v", err)
		}
		if meta["step"] != "42" || back.Dtype() != dtype {
			t.Errorf("metadata %v, dtype %v; want step 42 and %v", meta, back.Dtype(), dtype)
		}
		ids, _ := fixedBatch(2, 9, cfg.Vocab)
		want, err := m.Logits(ids)
		if err != nil {
			t.Fatal(err)
		}
		got, err := back.Logits(ids)
		if err != nil {
			t.Fatal(err)
		}
		for i := range want {
			if got[i] != want[i] {
				t.Fatalf("%v: logit %d differs after load: %v vs %v", dtype, i, got[i], want[i])
			}
		}
		if _, err := os.Stat(filepath.Join(dir, graph.ConfigFile)); err != nil {
			t.Errorf("no %s beside the weights: %v", graph.ConfigFile, err)
		}
	}
}

// TestCheckpointCorruption: a file cut off anywhere, or with one byte
// changed, is rejected with an error naming the file; a temporary file left
// by a crash mid-write does not affect the checkpoint beside it.
func TestCheckpointCorruption(t *testing.T) {
	m := newModel(t, tinyConfig("llama", ""), tensor.Float32, 4)
	dir := t.TempDir()
	if err := graph.Save(dir, m, nil); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, graph.WeightsFile)
	good, _ := os.ReadFile(path)

	// A crash while writing the next checkpoint leaves a partial temp file.
	stray := filepath.Join(dir, "."+graph.WeightsFile+".tmp-123")
	if err := os.WriteFile(stray, good[:len(good)/2], 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, err := graph.Load(dir); err != nil {
		t.Fatalf("the previous checkpoint no longer loads beside a stray temp file: %+v", err)
	}

	for _, cut := range []int{0, 5, 8, 40, len(good) / 2, len(good) - 1} {
		if err := os.WriteFile(path, good[:cut], 0o644); err != nil {
			t.Fatal(err)
		}
		_, _, err := graph.Load(dir)
		if err == nil || !strings.Contains(err.Error(), path) {
			t.Errorf("cut at %d of %d bytes: error %v, want one naming %s", cut, len(good), err, path)
		}
	}
	flipped := bytes.Clone(good)
	flipped[len(flipped)-3] ^= 0x40
	_ = os.WriteFile(path, flipped, 0o644)
	if _, _, err := graph.Load(dir); err == nil || !strings.Contains(err.Error(), "SHA-256") {
		t.Errorf("flipped byte: error %v, want a SHA-256 mismatch", err)
	}
	if _, _, err := graph.Load(filepath.Join(dir, "missing")); err == nil {
		t.Error("a missing folder loaded")
	}
}
