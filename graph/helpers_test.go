package graph_test

import (
	"math"
	"testing"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/wonderful-matrices/wonderful-matrices-go/graph"
	"github.com/wonderful-matrices/wonderful-matrices-go/layers"
)

// tinyConfig is a small model of arch or pattern: d_model 16, 2 heads.
func tinyConfig(arch, pattern string) graph.Config {
	return graph.Config{
		Arch: arch, Pattern: pattern, Vocab: 32, DModel: 16, Heads: 2, MaxPosition: 64,
		SSD:    layers.SSDConfig{DState: 8, ChunkLen: 4},
		Mamba2: layers.Mamba2Config{DState: 8, ChunkLen: 4},
		IFA:    layers.InnerFuncConfig{Values: 8, RetDim: 8},
		MLP:    layers.MLPConfig{DFF: 32},
		CDMoE:  layers.CDMoEConfig{DFF: 16, Experts: 16, Heads: 2, TopK: 2, RetDim: 8},
		MoE:    layers.MoEConfig{Experts: 4, TopK: 2, DFF: 16},
	}
}

// newModel makes and initialises a model or fails the test.
func newModel(t testing.TB, cfg graph.Config, dtype tensor.Dtype, seed int64) *graph.Model {
	t.Helper()
	m, err := graph.New(cfg)
	if err != nil {
		t.Fatalf("new: %+v", err)
	}
	if err := m.Init(dtype, seed); err != nil {
		t.Fatal(err)
	}
	return m
}

// fixedBatch is a deterministic batch of b sequences of t+1 tokens: ids are
// the first t, targets the next t.
func fixedBatch(b, t, vocab int) (ids, targets [][]int) {
	for i := 0; i < b; i++ {
		var row []int
		for j := 0; j <= t; j++ {
			row = append(row, (i*7+j*j*3+j)%vocab)
		}
		ids, targets = append(ids, row[:t]), append(targets, row[1:])
	}
	return ids, targets
}

func flatten(x [][]int) []float64 {
	var out []float64
	for _, r := range x {
		for _, v := range r {
			out = append(out, float64(v))
		}
	}
	return out
}

// trainer runs plain Adam on a fixed batch: just enough optimiser to show
// that a model can overfit (the real AdamW lives with the experiments).
type trainer struct {
	vm     G.VM
	params layers.Params
	grads  G.Nodes
	loss   *G.Node
	m, v   [][]float64
	step   int
}

// buildLoss builds the model's loss on a batch in a graph of its own.
func buildLoss(t testing.TB, model *graph.Model, ids, targets [][]int) (*layers.Builder, *G.Node) {
	t.Helper()
	b := layers.NewBuilder(model.Dtype())
	var loss *G.Node
	if err := b.Run("train", func() {
		bs, tt := len(ids), len(ids[0])
		loss, _ = model.Loss(b, b.Input("ids", flatten(ids), bs, tt), b.Input("targets", flatten(targets), bs, tt))
	}); err != nil {
		t.Fatalf("build: %+v", err)
	}
	return b, loss
}

func newTrainer(t testing.TB, model *graph.Model, ids, targets [][]int) *trainer {
	t.Helper()
	b, loss := buildLoss(t, model, ids, targets)
	params, nodes := b.ParamNodes()
	grads, err := G.Grad(loss, nodes...)
	if err != nil {
		t.Fatalf("grad: %+v", err)
	}
	tr := &trainer{vm: G.NewTapeMachine(b.G), params: params, grads: grads, loss: loss}
	for _, p := range params {
		tr.m, tr.v = append(tr.m, make([]float64, p.Size())), append(tr.v, make([]float64, p.Size()))
	}
	return tr
}

// Step runs one Adam step (lr) and returns the loss before it.
func (tr *trainer) Step(t testing.TB, lr float64) float64 {
	t.Helper()
	if err := tr.vm.RunAll(); err != nil {
		t.Fatalf("run: %+v", err)
	}
	loss := toF64(tr.loss.Value().Data())[0]
	tr.step++
	c1, c2 := 1-math.Pow(0.9, float64(tr.step)), 1-math.Pow(0.999, float64(tr.step))
	for i, p := range tr.params {
		g := toF64(tr.grads[i].Value().Data())
		for j := range g {
			tr.m[i][j] = 0.9*tr.m[i][j] + 0.1*g[j]
			tr.v[i][j] = 0.999*tr.v[i][j] + 0.001*g[j]*g[j]
			delta := lr * (tr.m[i][j] / c1) / (math.Sqrt(tr.v[i][j]/c2) + 1e-8)
			switch d := p.Data().(type) {
			case []float32:
				d[j] -= float32(delta)
			case []float64:
				d[j] -= delta
			}
		}
	}
	tr.vm.Reset()
	return loss
}

func toF64(data any) []float64 {
	switch d := data.(type) {
	case []float32:
		out := make([]float64, len(d))
		for i, v := range d {
			out[i] = float64(v)
		}
		return out
	case []float64:
		return d
	case float32:
		return []float64{float64(d)}
	case float64:
		return []float64{d}
	}
	panic("toF64")
}
