package graph_test

import (
	"math"
	"strings"
	"testing"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/wonderful-matrices/wonderful-matrices-go/graph"
	"github.com/wonderful-matrices/wonderful-matrices-go/ops"
)

// foldedStep is one forward and backward of a model on a batch, its
// gradients taken by G.Grad (Gorgonia sums each block's gradient of h) or
// by ops.Grad (the block's norm sums them).
type foldedStep struct {
	loss  *G.Node
	grads G.Nodes
	g     *G.ExprGraph
}

func buildFoldedStep(t *testing.T, m *graph.Model, ids, targets [][]int, fold bool) foldedStep {
	t.Helper()
	b, loss := buildLoss(t, m, ids, targets)
	_, nodes := b.ParamNodes()
	grad := G.Grad
	if fold {
		grad = ops.Grad
	}
	grads, err := grad(loss, nodes...)
	if err != nil {
		t.Fatalf("grad (fold %v): %+v", fold, err)
	}
	vm := ops.NewTapeMachine(b.G)
	defer vm.Close()
	if err := vm.RunAll(); err != nil {
		t.Fatalf("run (fold %v): %+v", fold, err)
	}
	return foldedStep{loss: loss, grads: grads, g: b.G}
}

// streamSums counts the adds of [tokens, d_model] in a graph: Gorgonia's
// sums of a block's gradients of h (the residual stream's own adds are
// inside the blocks' ops).
func streamSums(g *G.ExprGraph, rows, d int) int {
	n := 0
	for _, nd := range g.AllNodes() {
		if nd.Op() != nil && strings.HasPrefix(nd.Op().String(), "+") && nd.Shape().TotalSize() == rows*d {
			n++
		}
	}
	return n
}

// TestGradFoldSameBits: ops.Grad's gradients, with every block's gradient
// of h summed in its norm's backward, are G.Grad's to the bit, on every
// built-in sublayer, in float32 and float64, over 3 × 45 tokens (two full
// blocks of the norm's 64 rows and a part of one); and no sum of
// Gorgonia's is left where G.Grad builds some.
func TestGradFoldSameBits(t *testing.T) {
	const bs, tt = 3, 45
	for _, pattern := range []string{"(SM)2", "AM", "IE", "KR", "BH", "AH", "SE"} {
		for _, dt := range []tensor.Dtype{tensor.Float32, tensor.Float64} {
			t.Run(pattern+"/"+dt.String(), func(t *testing.T) {
				cfg := tinyConfig("", pattern)
				ids, targets := fixedBatch(bs, tt, cfg.Vocab)
				summed := buildFoldedStep(t, newModel(t, cfg, dt, 3), ids, targets, false)
				folded := buildFoldedStep(t, newModel(t, cfg, dt, 3), ids, targets, true)
				if a, b := toF64(summed.loss.Value().Data()), toF64(folded.loss.Value().Data()); a[0] != b[0] {
					t.Fatalf("loss %v, folded %v", a[0], b[0])
				}
				for i := range summed.grads {
					a, b := toF64(summed.grads[i].Value().Data()), toF64(folded.grads[i].Value().Data())
					for j := range a {
						if math.Float64bits(a[j]) != math.Float64bits(b[j]) {
							t.Fatalf("gradient %d (%s) [%d]: %v, folded %v", i, summed.grads[i].Name(), j, a[j], b[j])
						}
					}
				}
				before, after := streamSums(summed.g, bs*tt, cfg.DModel), streamSums(folded.g, bs*tt, cfg.DModel)
				if before == 0 || after != 0 {
					t.Errorf("adds of [tokens, d_model]: %d with G.Grad, %d with ops.Grad (want some, then none)", before, after)
				}
			})
		}
	}
}
