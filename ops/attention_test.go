package ops

import (
	"math/rand"
	"testing"

	G "gorgonia.org/gorgonia"
)

func TestAttentionGradFD(t *testing.T) {
	for _, c := range []struct {
		name             string
		b, tq, tk, h, hk int
		d, dv            int
		mask             MaskKind
		logn             int
	}{
		{"plain", 2, 5, 5, 2, 2, 4, 3, MaskNone, 0},
		{"paper mask", 1, 6, 6, 2, 2, 4, 4, MaskPaper, 0},
		{"doge bias", 2, 4, 4, 2, 1, 4, 2, MaskDoge, 0},
		{"logn", 1, 7, 7, 1, 1, 4, 4, MaskNone, 3},
		{"gqa", 1, 5, 5, 4, 2, 2, 3, MaskPaper, 0},
		{"one token", 1, 1, 1, 1, 1, 2, 2, MaskPaper, 0},
		{"decode from cache", 2, 2, 6, 2, 2, 4, 3, MaskDoge, 4},
		// longer than one row block (attnBlock): several blocks, the last partial
		{"three row blocks", 1, 2*attnBlock + 5, 2*attnBlock + 5, 1, 1, 2, 2, MaskPaper, 0},
		{"row blocks from cache", 1, attnBlock + 3, attnBlock + 9, 2, 1, 2, 1, MaskDoge, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			in := []fdInput{
				{name: "q", shape: []int{c.b, c.tq, c.h, c.d}},
				{name: "k", shape: []int{c.b, c.tk, c.hk, c.d}},
				{name: "v", shape: []int{c.b, c.tk, c.hk, c.dv}},
			}
			switch c.mask {
			case MaskPaper:
				in = append(in, fdInput{name: "l", shape: []int{c.h, c.tk + 3}, gen: uniformIn(0.2, 1.5)})
			case MaskDoge:
				in = append(in, fdInput{name: "bias", shape: []int{c.b, c.tk, c.h}, gen: uniformIn(0, 2)})
			}
			checkGradFD(t, 30, in, func(n []*G.Node) (*G.Node, error) {
				var m *G.Node
				if len(n) > 3 {
					m = n[3]
				}
				return Attention(n[0], n[1], n[2], m, AttentionConfig{Mask: c.mask, LogNTrainLen: c.logn})
			})
		})
	}
}

// TestAttentionPaperMaskOnesIsPlain: with l = 1 the dynamic mask changes nothing.
func TestAttentionPaperMaskOnesIsPlain(t *testing.T) {
	r := rand.New(rand.NewSource(3))
	const b, tt, h, d = 2, 6, 3, 4
	g := G.NewGraph()
	q := tensorNode(g, "q", randData(r, b*tt*h*d, nil), b, tt, h, d)
	k := tensorNode(g, "k", randData(r, b*tt*h*d, nil), b, tt, h, d)
	v := tensorNode(g, "v", randData(r, b*tt*h*d, nil), b, tt, h, d)
	ones := make([]float64, h*9)
	for i := range ones {
		ones[i] = 1
	}
	l := tensorNode(g, "l", ones, h, 9)
	plain, err := Attention(q, k, v, nil, AttentionConfig{})
	if err != nil {
		t.Fatal(err)
	}
	masked, err := Attention(q, k, v, l, AttentionConfig{Mask: MaskPaper})
	if err != nil {
		t.Fatal(err)
	}
	got := evaluate(t, g, plain, masked)
	assertClose(t, "paper mask of ones", got[1], got[0], 0, 1e-15)
}

// TestAttentionDecodeMatchesFull: the last query attending over all keys (a
// KV cache) equals the last row of the full causal attention.
func TestAttentionDecodeMatchesFull(t *testing.T) {
	r := rand.New(rand.NewSource(4))
	const b, tt, h, d = 2, 7, 2, 4
	qd, kd, vd := randData(r, b*tt*h*d, nil), randData(r, b*tt*h*d, nil), randData(r, b*tt*h*d, nil)
	lastQ := make([]float64, b*h*d)
	for bi := 0; bi < b; bi++ {
		copy(lastQ[bi*h*d:], qd[((bi*tt)+tt-1)*h*d:(bi*tt+tt)*h*d])
	}
	g := G.NewGraph()
	k, v := tensorNode(g, "k", kd, b, tt, h, d), tensorNode(g, "v", vd, b, tt, h, d)
	full, err := Attention(tensorNode(g, "q", qd, b, tt, h, d), k, v, nil, AttentionConfig{LogNTrainLen: 3})
	if err != nil {
		t.Fatal(err)
	}
	step, err := Attention(tensorNode(g, "q1", lastQ, b, 1, h, d), k, v, nil, AttentionConfig{LogNTrainLen: 3})
	if err != nil {
		t.Fatal(err)
	}
	got := evaluate(t, g, full, step)
	want := make([]float64, b*h*d)
	for bi := 0; bi < b; bi++ {
		copy(want[bi*h*d:], got[0][((bi*tt)+tt-1)*h*d:(bi*tt+tt)*h*d])
	}
	assertClose(t, "decoded last token", got[1], want, 1e-13, 1e-15)
}

func TestAttentionRejectsBadInput(t *testing.T) {
	g := G.NewGraph()
	q := tensorNode(g, "q", make([]float64, 2*4*3*2), 2, 4, 3, 2)
	k2 := tensorNode(g, "k", make([]float64, 2*4*2*2), 2, 4, 2, 2)
	if _, err := Attention(q, k2, k2, nil, AttentionConfig{}); err == nil {
		t.Error("2 kv heads for 3 query heads was accepted")
	}
	k := tensorNode(g, "k3", make([]float64, 2*4*3*2), 2, 4, 3, 2)
	short := tensorNode(g, "l", make([]float64, 3*3), 3, 3)
	if _, err := Attention(q, k, k, short, AttentionConfig{Mask: MaskPaper}); err == nil {
		t.Error("a paper mask shorter than the sequence was accepted")
	}
	if _, err := Attention(q, k, k, nil, AttentionConfig{Mask: "sideways"}); err == nil {
		t.Error("an unknown mask kind was accepted")
	}
}
