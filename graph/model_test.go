package graph_test

import (
	"math"
	"testing"

	"gorgonia.org/tensor"

	"github.com/wonderful-matrices/wonderful-matrices-go/graph"
)

// stacks are every named architecture and one single-letter stack per
// letter (with a norm on each side, the smallest model of that letter).
func stacks() map[string]graph.Config {
	out := map[string]graph.Config{}
	for _, a := range graph.ArchNames() {
		out["arch "+a] = tinyConfig(a, "")
	}
	for _, k := range graph.Kinds() {
		out["letter "+string(k.Letter)] = tinyConfig("", string(k.Letter))
	}
	return out
}

// TestOverfit: forty Adam steps on one fixed batch drive the loss of every
// architecture and every letter well down (from about ln 32 = 3.47).
func TestOverfit(t *testing.T) {
	steps := 40
	if testing.Short() {
		steps = 25
	}
	for name, cfg := range stacks() {
		t.Run(name, func(t *testing.T) {
			m := newModel(t, cfg, tensor.Float32, 1)
			ids, targets := fixedBatch(2, 16, cfg.Vocab)
			tr := newTrainer(t, m, ids, targets)
			first := tr.Step(t, 1e-2)
			var last float64
			for i := 1; i < steps; i++ {
				last = tr.Step(t, 1e-2)
			}
			if math.IsNaN(last) || !(last < 0.5*first) {
				t.Errorf("loss %.3f → %.3f after %d steps: want below half", first, last, steps)
			}
		})
	}
}

// TestDecodeMatchesForward: feeding the tokens one at a time (after a
// prompt of 5 in one step) through states and caches gives the logits of the
// full-sequence forward, for every architecture and letter.
func TestDecodeMatchesForward(t *testing.T) {
	for name, cfg := range stacks() {
		t.Run(name, func(t *testing.T) {
			m := newModel(t, cfg, tensor.Float32, 2)
			// Train a few steps so that masks, gates and decays are not at
			// their initial values.
			ids, targets := fixedBatch(2, 13, cfg.Vocab)
			tr := newTrainer(t, m, ids, targets)
			for i := 0; i < 5; i++ {
				tr.Step(t, 1e-2)
			}
			full, err := m.Logits(ids)
			if err != nil {
				t.Fatalf("%+v", err)
			}
			V, T := cfg.Vocab, len(ids[0])
			st := m.NewDecodeState()
			var got [][]float64 // per position, [b][V]
			prompt := [][]int{ids[0][:5], ids[1][:5]}
			out, err := m.Step(st, prompt)
			if err != nil {
				t.Fatalf("prefill: %+v", err)
			}
			for j := 0; j < 5; j++ {
				got = append(got, pick(out, 5, V, j))
			}
			for j := 5; j < T; j++ {
				out, err := m.Step(st, [][]int{{ids[0][j]}, {ids[1][j]}})
				if err != nil {
					t.Fatalf("step %d: %+v", j, err)
				}
				got = append(got, pick(out, 1, V, 0))
			}
			if st.Pos != T {
				t.Errorf("state position %d after %d tokens", st.Pos, T)
			}
			worst := 0.0
			for j := 0; j < T; j++ {
				want := pick(full, T, V, j)
				for i := range want {
					worst = math.Max(worst, math.Abs(got[j][i]-want[i])/(1e-3+math.Abs(want[i])))
				}
			}
			if worst > 1e-3 {
				t.Errorf("decoded logits differ from the full forward: worst relative error %.2g", worst)
			}
		})
	}
}

// pick returns the logits [b][V] of position j of a [b,t,V] buffer, rows
// concatenated.
func pick(buf []float64, t, V, j int) []float64 {
	b := len(buf) / (t * V)
	var out []float64
	for i := 0; i < b; i++ {
		out = append(out, buf[(i*t+j)*V:(i*t+j+1)*V]...)
	}
	return out
}
