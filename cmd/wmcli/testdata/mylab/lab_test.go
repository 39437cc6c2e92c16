package mylab

import (
	"strings"
	"testing"

	"github.com/wonderful-matrices/wonderful-matrices-go/graph"
	"github.com/wonderful-matrices/wonderful-matrices-go/layers"
	"github.com/wonderful-matrices/wonderful-matrices-go/layers/layertest"
)

// The lab's mixer passes the framework's own gradient check: every
// parameter and the input against central differences in float64.
func TestGConvGradient(t *testing.T) {
	l := NewGConv("g", GConvConfig{Kernel: 3, Expand: 2}, layers.Shape{DModel: 6, NLayers: 2})
	bad, err := layertest.CheckGradients(l, layertest.Settings{DModel: 6})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range bad {
		t.Error(m)
	}
}

// The letter G is the framework's now: a pattern with it parses, its
// section gets its defaults in the config JSON, and the model builds.
func TestLetterG(t *testing.T) {
	c := graph.Config{Pattern: "(GM)2", Vocab: 260, DModel: 16, Heads: 2}
	m, err := graph.New(c)
	if err != nil {
		t.Fatal(err)
	}
	if m.Blocks[0].Layer.Kind() != "gconv" {
		t.Errorf("block 0 is %s", m.Blocks[0].Layer.Kind())
	}
	b, _ := m.Config.MarshalIndent()
	if !strings.Contains(string(b), `"gconv": {`) || !strings.Contains(string(b), `"kernel": 4`) {
		t.Errorf("the config lacks the gconv section with its defaults:\n%s", b)
	}
	c.Pattern = "(GM)2 X"
	if _, err := graph.New(c); err == nil || !strings.Contains(err.Error(), "G") {
		t.Errorf("an unknown letter: %v (the valid letters should include G)", err)
	}
}

func TestSumsSplit(t *testing.T) {
	tr, va, te := sumsSplit()
	if len(tr) != 2400 || len(va) != 300 || len(te) != 300 {
		t.Fatalf("split %d/%d/%d, want 2400/300/300", len(tr), len(va), len(te))
	}
	if !strings.Contains(te[0], "=") {
		t.Errorf("a test line %q", te[0])
	}
}
