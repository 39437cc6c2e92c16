package ops

import (
	"fmt"
	"math/rand"
	"strings"
	"testing"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// moeBlock is x + MoEExperts(h, TopKGates(h Wr, 2), W1, W3, W2) with h =
// RMSNorm(x; w), the routed MoE sublayer's block, from x, w, Wr, W1, W3,
// W2: closed by Residual.MoEExperts (fold) or by Add. With gatesIn, the
// third input is the gates themselves instead of the router's weight (every
// gate non-zero, for finite differences).
func moeBlock(fold, gatesIn bool) func(in []*G.Node) (*G.Node, error) {
	return func(in []*G.Node) (*G.Node, error) {
		var h *G.Node
		var r *Residual
		var err error
		if fold {
			h, r, err = PreNorm(in[0], in[1], DefaultRMSNormEps)
		} else {
			h, err = RMSNorm(in[0], in[1], DefaultRMSNormEps)
		}
		if err != nil {
			return nil, err
		}
		gates := in[2]
		if !gatesIn {
			logits, err := Linear(h, in[2])
			if err != nil {
				return nil, err
			}
			if gates, err = TopKGates(logits, 2); err != nil {
				return nil, err
			}
		}
		if fold {
			return r.MoEExperts(gates, in[3], in[4], in[5])
		}
		y, err := MoEExperts(h, gates, in[3], in[4], in[5])
		if err != nil {
			return nil, err
		}
		return Add(in[0], y)
	}
}

// moeBlockInputs are moeBlock's inputs for tokens (its leading axes) of d,
// n experts of width f; with gatesIn, the gates instead of Wr, every one
// non-zero.
func moeBlockInputs(tokens []int, d, n, f int, gatesIn bool) []fdInput {
	x := append(append([]int{}, tokens...), d)
	third := fdInput{name: "Wr", shape: []int{d, n}}
	if gatesIn {
		third = fdInput{name: "gates", shape: append(append([]int{}, tokens...), n), gen: uniformIn(0.1, 1)}
	}
	return []fdInput{
		{name: "x", shape: x},
		{name: "w", shape: []int{d}, gen: uniformIn(0.5, 1.5)},
		third,
		{name: "W1", shape: []int{n, d, f}},
		{name: "W3", shape: []int{n, d, f}},
		{name: "W2", shape: []int{n, f, d}},
	}
}

// A block closed by its routed experts (x + MoEExperts(RMSNorm(x), …), the
// residual added in the combine) against central finite differences in
// float64, every gate non-zero so that every expert computes every token.
func TestResidualMoEGradFD(t *testing.T) {
	checkGradFD(t, 36, moeBlockInputs([]int{2, 3}, 4, 3, 5, true), moeBlock(true, true))
}

// Residual.MoEExperts gives the values and gradients of RMSNorm, the
// router, MoEExperts and Add, bit for bit, in float32 and float64: over
// more tokens than one block of the combine and a part of one, and over a
// few.
func TestResidualMoESameBits(t *testing.T) {
	const d, n, f = 16, 4, 24
	for _, tokens := range [][]int{{2, 3*residualRowBlock/2 + 5}, {1, 3}} {
		for _, dt := range []tensor.Dtype{tensor.Float32, tensor.Float64} {
			name := fmt.Sprintf("tokens %v %v", tokens, dt)
			inputs := moeBlockInputs(tokens, d, n, f, false)
			r := rand.New(rand.NewSource(37))
			data := drawInputs(r, inputs)
			for _, i := range []int{3, 4, 5} { // weights at about 1/√fan-in
				for j := range data[i] {
					data[i][j] /= 4
				}
			}
			upstream := randData(r, len(data[0]), nil)
			got := blockValues(t, name, dt, inputs, data, upstream, moeBlock(true, false), closedBy(t, name, "moe_experts"))
			want := blockValues(t, name, dt, inputs, data, upstream, moeBlock(false, false), nil)
			for i, what := range []string{"y", "dx", "dw", "dWr", "dW1", "dW3", "dW2"} {
				assertSameBits(t, name+" "+what, got[i], want[i])
			}
		}
	}
}

// Closing a block twice, or with an op whose output is not x's shape,
// is an error that says so.
func TestResidualMoEEdges(t *testing.T) {
	g := G.NewGraph()
	x := G.NewTensor(g, tensor.Float64, 2, G.WithShape(5, 4), G.WithName("x"), G.WithInit(G.RangedFrom(0)))
	w := G.NewTensor(g, tensor.Float64, 1, G.WithShape(4), G.WithName("w"), G.WithInit(G.Ones()))
	gates := G.NewTensor(g, tensor.Float64, 2, G.WithShape(5, 3), G.WithName("gates"), G.WithInit(G.Ones()))
	W1 := G.NewTensor(g, tensor.Float64, 3, G.WithShape(3, 4, 2), G.WithName("W1"), G.WithInit(G.Ones()))
	W2 := G.NewTensor(g, tensor.Float64, 3, G.WithShape(3, 2, 4), G.WithName("W2"), G.WithInit(G.Ones()))
	_, r, err := PreNorm(x, w, DefaultRMSNormEps)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.MoEExperts(gates, W1, W1, W2); err != nil {
		t.Fatal(err)
	}
	if _, err := r.MoEExperts(gates, W1, W1, W2); err == nil || !strings.Contains(err.Error(), "closed already") {
		t.Fatalf("a second close: %v, want an error that says the block is closed", err)
	}
	var none *Residual
	if _, err := none.MoEExperts(gates, W1, W1, W2); err == nil || !strings.Contains(err.Error(), "not opened by PreNorm") {
		t.Fatalf("no block: %v, want an error that names PreNorm", err)
	}
}

// BenchmarkResidualMoE times a pre-norm routed MoE block, x +
// MoEExperts(RMSNorm(x), router), at the bench's d_model 64 and 256 sizes
// (8 experts, two chosen, d_ff as layers.MoEConfig's default), forward
// alone and forward and backward: folded (Residual.MoEExperts, the
// residual added in the combine) and summed (Add after the experts).
func BenchmarkResidualMoE(b *testing.B) {
	for _, s := range []struct{ batch, t, d, f int }{{8, 256, 64, 88}, {4, 1024, 256, 344}} {
		block := func(fold bool) func(in []*G.Node) (*G.Node, error) { return moeBlock(fold, false) }
		benchFoldedAndSummed(b, s.d, s.batch*s.t, moeBlockInputs([]int{s.batch, s.t}, s.d, 8, s.f, false), block)
	}
}
