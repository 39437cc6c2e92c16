package ops

import (
	"fmt"
	"strings"
	"testing"

	G "gorgonia.org/gorgonia"
)

// residualSwiGLUPlusWithBlock is Residual.SwiGLUPlus with SwiGLU's blocks
// of rows set by hand (as residualSwiGLUWithBlock): x + (SwiGLU(h) +
// other), other = h Wo (in[5]) when fromH, else other the input in[5]
// itself, whose gradient is then the upstream gradient alone.
func residualSwiGLUPlusWithBlock(blk int, fromH bool) func(in []*G.Node) (*G.Node, error) {
	return func(in []*G.Node) (*G.Node, error) {
		h, r, err := PreNorm(in[0], in[1], DefaultRMSNormEps)
		if err != nil {
			return nil, err
		}
		other := in[5]
		if fromH {
			if other, err = Linear(h, in[5]); err != nil {
				return nil, err
			}
		}
		ws := in[2].Shape()
		if err := r.close(in[0].Shape()); err != nil {
			return nil, err
		}
		k := swigluKernel{x: h.Shape().Clone(), d: ws[0], f: ws[1], blk: blk, saved: &swigluSaved{}, res: r.link, plus: true}
		return apply(k, h, in[2], in[3], in[4], in[0], other)
	}
}

// MoE-SEI's block closed by its shared experts (x + (SwiGLU(RMSNorm(x)) +
// other)) against central finite differences in float64, whole and by
// blocks of rows with a short last block; other computed from h, and other
// an input of its own.
func TestResidualSwiGLUPlusGradFD(t *testing.T) {
	const d = 4
	for _, blk := range []int{0, 3, 4} {
		for _, fromH := range []bool{true, false} {
			t.Run(fmt.Sprintf("blk=%d fromH=%v", blk, fromH), func(t *testing.T) {
				other := fdInput{name: "other", shape: []int{2, 5, d}}
				if fromH {
					other = fdInput{name: "Wo", shape: []int{d, d}}
				}
				checkGradFD(t, 36, append(residualSwiGLUInputs([]int{2, 5}, d, 6), other), residualSwiGLUPlusWithBlock(blk, fromH))
			})
		}
	}
}

// SwiGLUPlus refuses an addend that is missing or not of x's shape and
// dtype, and a block closed already, saying which.
func TestResidualSwiGLUPlusEdges(t *testing.T) {
	g := G.NewGraph()
	x := G.NewTensor(g, G.Float64, 3, G.WithShape(2, 3, 4), G.WithName("x"), G.WithInit(G.GlorotU(1)))
	w := G.NewVector(g, G.Float64, G.WithShape(4), G.WithName("w"), G.WithInit(G.Ones()))
	w1 := G.NewMatrix(g, G.Float64, G.WithShape(4, 6), G.WithName("W1"), G.WithInit(G.GlorotU(1)))
	w3 := G.NewMatrix(g, G.Float64, G.WithShape(4, 6), G.WithName("W3"), G.WithInit(G.GlorotU(1)))
	w2 := G.NewMatrix(g, G.Float64, G.WithShape(6, 4), G.WithName("W2"), G.WithInit(G.GlorotU(1)))
	short := G.NewTensor(g, G.Float64, 3, G.WithShape(2, 3, 3), G.WithName("short"), G.WithInit(G.Zeroes()))
	other32 := G.NewTensor(g, G.Float32, 3, G.WithShape(2, 3, 4), G.WithName("other32"), G.WithInit(G.Zeroes()))
	_, r, err := PreNorm(x, w, DefaultRMSNormEps)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		other *G.Node
		want  string
	}{
		{nil, "the addend is nil"},
		{short, "the addend short is (2, 3, 3) float64, the block's x is (2, 3, 4) float64"},
		{other32, "the addend other32 is (2, 3, 4) float32"},
	} {
		if _, err := r.SwiGLUPlus(w1, w3, w2, c.other); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("SwiGLUPlus(%v): err %v, want it to say %q", c.other, err, c.want)
		}
	}
	if _, err := r.SwiGLUPlus(w1, w3, w2, x); err != nil {
		t.Fatalf("SwiGLUPlus with x as the addend: %v", err)
	}
	if _, err := r.SwiGLUPlus(w1, w3, w2, x); err == nil || !strings.Contains(err.Error(), "closed already") {
		t.Errorf("a second close: err %v, want it to say the block is closed already", err)
	}
}
