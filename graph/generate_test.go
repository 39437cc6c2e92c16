package graph_test

import (
	"reflect"
	"strings"
	"testing"

	"gorgonia.org/tensor"

	"github.com/wonderful-matrices/wonderful-matrices-go/graph"
)

// trained returns a model of arch after a few steps on the fixed batch, so
// that its logits are not near-uniform.
func trained(t *testing.T, arch string) *graph.Model {
	cfg := tinyConfig(arch, "")
	m := newModel(t, cfg, tensor.Float32, 5)
	ids, targets := fixedBatch(2, 16, cfg.Vocab)
	tr := newTrainer(t, m, ids, targets)
	for i := 0; i < 30; i++ {
		tr.Step(t, 1e-2)
	}
	return m
}

// TestGreedyIsArgmaxPath: each greedily generated token is the argmax of the
// full-sequence forward over the prompt and the tokens before it.
func TestGreedyIsArgmaxPath(t *testing.T) {
	for _, arch := range graph.ArchNames() {
		t.Run(arch, func(t *testing.T) {
			m := trained(t, arch)
			prompt := []int{1, 4, 13}
			gen, err := graph.Generate(m, prompt, 12, graph.Sampling{}, nil)
			if err != nil {
				t.Fatalf("%+v", err)
			}
			seq := append(append([]int(nil), prompt...), gen...)
			logits, err := m.Logits([][]int{seq[:len(seq)-1]})
			if err != nil {
				t.Fatal(err)
			}
			V := m.Config.Vocab
			for i, tok := range gen {
				pos := len(prompt) - 1 + i
				if want := graph.Argmax(logits[pos*V : (pos+1)*V]); tok != want {
					t.Fatalf("token %d: generated %d, argmax of the full forward %d (sequence %v)", i, tok, want, seq)
				}
			}
		})
	}
}

func TestSampling(t *testing.T) {
	m := trained(t, "llama")
	prompt := []int{2, 3}
	greedy, _ := graph.Generate(m, prompt, 8, graph.Sampling{}, nil)
	top1, err := graph.Generate(m, prompt, 8, graph.Sampling{Temperature: 1, TopK: 1, Seed: 9}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(greedy, top1) {
		t.Errorf("top-1 sampling %v differs from greedy %v", top1, greedy)
	}
	s := graph.Sampling{Temperature: 5, Seed: 11}
	a, _ := graph.Generate(m, prompt, 16, s, nil)
	b, _ := graph.Generate(m, prompt, 16, s, nil)
	if !reflect.DeepEqual(a, b) {
		t.Errorf("the same seed gave %v and %v", a, b)
	}
	s.Seed = 12
	c, _ := graph.Generate(m, prompt, 16, s, nil)
	if reflect.DeepEqual(a, c) {
		t.Errorf("seeds 11 and 12 at temperature 5 gave the same 16 tokens %v", a)
	}
	for _, bad := range []graph.Sampling{{Temperature: -1}, {TopK: -2}} {
		if _, err := graph.Generate(m, prompt, 2, bad, nil); err == nil {
			t.Errorf("%+v accepted", bad)
		}
	}
	if _, err := graph.Generate(m, []int{99}, 2, graph.Sampling{}, nil); err == nil {
		t.Error("a prompt token outside the vocabulary was accepted")
	}
}

// TestDecodePastMaxPosition: the paper dynamic mask has max_position
// entries; decoding past it is an error that says so, and the state stays
// usable for the tokens before.
func TestDecodePastMaxPosition(t *testing.T) {
	cfg := tinyConfig("cheems", "")
	cfg.MaxPosition = 6
	m := newModel(t, cfg, tensor.Float32, 1)
	st := m.NewDecodeState()
	if _, err := m.Step(st, [][]int{{1, 2, 3, 4, 5, 6}}); err != nil {
		t.Fatalf("%+v", err)
	}
	_, err := m.Step(st, [][]int{{7}})
	if err == nil || !strings.Contains(err.Error(), "max_position 6") {
		t.Fatalf("error %v, want one about max_position 6", err)
	}
	if st.Pos != 6 {
		t.Errorf("a failed step moved the state to %d", st.Pos)
	}
}
