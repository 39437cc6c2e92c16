package eval_test

import (
	"math"
	"math/rand"
	"strings"
	"testing"

	"gorgonia.org/tensor"

	"github.com/wonderful-matrices/wonderful-matrices-go/experiments/eval"
	"github.com/wonderful-matrices/wonderful-matrices-go/graph"
)

func TestNLL(t *testing.T) {
	// softmax([0, ln 3]) = [1/4, 3/4]
	if got, want := eval.NLL([]float64{0, math.Log(3)}, 1), -math.Log(0.75); math.Abs(got-want) > 1e-12 {
		t.Errorf("NLL = %v, want %v", got, want)
	}
	if got := eval.NLL([]float64{1000, 0}, 0); math.Abs(got) > 1e-12 {
		t.Errorf("NLL of a dominant logit = %v, want 0 (and no overflow)", got)
	}
}

func model(t *testing.T) *graph.Model {
	m, err := graph.New(graph.Config{Pattern: "AM", Vocab: 11, DModel: 8, Heads: 2})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Init(tensor.Float64, 3); err != nil {
		t.Fatal(err)
	}
	return m
}

// With the stride equal to the window the windows are disjoint chunks: the
// perplexity is exp of the mean NLL of every chunk's full forward. With a
// window as long as the stream there is one window whatever the stride.
func TestSlidingWindowPPL(t *testing.T) {
	m := model(t)
	r := rand.New(rand.NewSource(1))
	stream := make([]int, 49)
	for i := range stream {
		stream[i] = r.Intn(11)
	}
	var nll float64
	for s := 0; s+16+1 <= len(stream); s += 16 {
		logits, err := m.Logits([][]int{stream[s : s+16]})
		if err != nil {
			t.Fatal(err)
		}
		for p := 0; p < 16; p++ {
			nll += eval.NLL(logits[p*11:(p+1)*11], stream[s+p+1])
		}
	}
	want := math.Exp(nll / 48)
	got, err := eval.SlidingWindowPPL(m, stream, 16, 16)
	if err != nil || math.Abs(got-want) > 1e-9*want {
		t.Errorf("stride = window: %v (err %v), want %v", got, err, want)
	}
	full, _ := eval.SlidingWindowPPL(m, stream, 48, 48)
	one, _ := eval.SlidingWindowPPL(m, stream, 48, 5)
	if full != one {
		t.Errorf("one window: %v with stride 48, %v with stride 5", full, one)
	}
	for _, c := range []struct{ w, s int }{{1, 1}, {16, 0}, {16, 17}, {60, 4}} {
		if _, err := eval.SlidingWindowPPL(m, stream, c.w, c.s); err == nil || !strings.Contains(err.Error(), "sliding-window") {
			t.Errorf("window %d stride %d: %v", c.w, c.s, err)
		}
	}
}
