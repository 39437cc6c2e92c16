package ops

import (
	"fmt"
	"math/rand"
	"strings"
	"testing"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// cdmoeBlock is x + CDMoE(RMSNorm(x; w), …), the CDMoE sublayer's block,
// from x, w and CDMoE's six weights: closed by Residual.CDMoE (fold) or by
// Add.
func cdmoeBlock(cfg CDMoEConfig, fold bool) func(in []*G.Node) (*G.Node, error) {
	return func(in []*G.Node) (*G.Node, error) {
		ws := CDMoEInputs{Wup: in[2], Wdown: in[3], Wq: in[4], Keys: in[5], Edown: in[6], Eup: in[7]}
		if fold {
			_, r, err := PreNorm(in[0], in[1], DefaultRMSNormEps)
			if err != nil {
				return nil, err
			}
			return r.CDMoE(ws, cfg)
		}
		h, err := RMSNorm(in[0], in[1], DefaultRMSNormEps)
		if err != nil {
			return nil, err
		}
		ws.X = h
		y, err := CDMoE(ws, cfg)
		if err != nil {
			return nil, err
		}
		return Add(in[0], y)
	}
}

// cdmoeBlockInputs are cdmoeBlock's inputs (CDMoE's with the norm's weight
// after x).
func cdmoeBlockInputs(b, t, dm, dff, heads, nk, half int) []fdInput {
	in := cdmoeFDInputs(b, t, dm, dff, heads, nk, half)
	return append([]fdInput{in[0], {name: "w", shape: []int{dm}, gen: uniformIn(0.5, 1.5)}}, in[1:]...)
}

// A block closed by CDMoE (the residual added after each block of tokens'
// experts) against central finite differences in float64.
func TestResidualCDMoEGradFD(t *testing.T) {
	checkGradFD(t, 45, cdmoeBlockInputs(2, 3, 6, 5, 2, 3, 2), cdmoeBlock(CDMoEConfig{Heads: 2, K: 2}, true))
}

// Residual.CDMoE gives the values and gradients of RMSNorm, CDMoE and Add,
// bit for bit, in float32 (the C kernels, with SiLU) and float64, and with
// GELU (the Go loops): over more tokens than one block of rows and a part
// of one, and over a few.
func TestResidualCDMoESameBits(t *testing.T) {
	for _, tokens := range [][2]int{{2, 3*residualRowBlock/2 + 5}, {1, 3}} {
		for _, act := range []string{"silu", "gelu"} {
			for _, dt := range []tensor.Dtype{tensor.Float32, tensor.Float64} {
				name := fmt.Sprintf("tokens %v %s %v", tokens, act, dt)
				cfg := CDMoEConfig{Heads: 2, K: 2, Act: act}
				inputs := cdmoeBlockInputs(tokens[0], tokens[1], 16, 24, 2, 4, 4)
				r := rand.New(rand.NewSource(38))
				data := drawInputs(r, inputs)
				upstream := randData(r, len(data[0]), nil)
				got := blockValues(t, name, dt, inputs, data, upstream, cdmoeBlock(cfg, true), closedBy(t, name, "cdmoe"))
				want := blockValues(t, name, dt, inputs, data, upstream, cdmoeBlock(cfg, false), nil)
				for i, what := range []string{"y", "dx", "dw", "dWup", "dWdown", "dWq", "dkeys", "dEdown", "dEup"} {
					assertSameBits(t, name+" "+what, got[i], want[i])
				}
			}
		}
	}
}

// Residual.CDMoE's input must be the block's h, and a block closes once.
func TestResidualCDMoEEdges(t *testing.T) {
	g := G.NewGraph()
	inputs := cdmoeBlockInputs(1, 2, 4, 3, 1, 2, 1)
	n := make([]*G.Node, len(inputs))
	for i, s := range inputs {
		n[i] = G.NewTensor(g, tensor.Float64, len(s.shape), G.WithShape(s.shape...), G.WithName(s.name), G.WithInit(G.Ones()))
	}
	cfg := CDMoEConfig{Heads: 1, K: 1}
	_, r, err := PreNorm(n[0], n[1], DefaultRMSNormEps)
	if err != nil {
		t.Fatal(err)
	}
	ws := CDMoEInputs{X: n[0], Wup: n[2], Wdown: n[3], Wq: n[4], Keys: n[5], Edown: n[6], Eup: n[7]}
	if _, err := r.CDMoE(ws, cfg); err == nil || !strings.Contains(err.Error(), "not the block's h") {
		t.Fatalf("x as the input: %v, want an error that names the block's h", err)
	}
	ws.X = nil
	if _, err := r.CDMoE(ws, cfg); err != nil {
		t.Fatal(err)
	}
	if _, err := r.CDMoE(ws, cfg); err == nil || !strings.Contains(err.Error(), "closed already") {
		t.Fatalf("a second close: %v, want an error that says the block is closed", err)
	}
}

// BenchmarkResidualCDMoE times a pre-norm CDMoE block, x +
// CDMoE(RMSNorm(x)), at the bench's d_model 64 and 256 sizes (the layer's
// defaults: 1024 experts, 4 heads of top 8, ret_dim 64, d_ff as SwiGLU's),
// forward alone and forward and backward: folded (Residual.CDMoE, the
// residual added after each block of tokens' experts) and summed (Add
// after CDMoE).
func BenchmarkResidualCDMoE(b *testing.B) {
	cfg := CDMoEConfig{Heads: 4, K: 8}
	for _, s := range []struct{ batch, t, d, f int }{{8, 256, 64, 176}, {4, 1024, 256, 688}} {
		block := func(fold bool) func(in []*G.Node) (*G.Node, error) { return cdmoeBlock(cfg, fold) }
		benchFoldedAndSummed(b, s.d, s.batch*s.t, cdmoeBlockInputs(s.batch, s.t, s.d, s.f, cfg.Heads, 32, 32), block)
	}
}
