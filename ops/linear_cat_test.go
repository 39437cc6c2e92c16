package ops

import (
	"math/rand"
	"strings"
	"testing"

	G "gorgonia.org/gorgonia"
)

func TestLinearCatGradFD(t *testing.T) {
	for _, shape := range [][]int{{2, 3, 5}, {1, 4}} {
		din := shape[len(shape)-1]
		checkGradFD(t, 21, []fdInput{{name: "x", shape: shape}, {name: "w1", shape: []int{din, 3}},
			{name: "w2", shape: []int{din, 1}}, {name: "w3", shape: []int{din, 2}}},
			func(in []*G.Node) (*G.Node, error) { return LinearCat(in[0], in[1], in[2], in[3]) })
	}
}

func TestColumnsGradFD(t *testing.T) {
	for _, c := range [][2]int{{0, 2}, {2, 5}, {4, 6}, {0, 6}} {
		checkGradFD(t, 22, []fdInput{{name: "x", shape: []int{2, 3, 6}}},
			func(in []*G.Node) (*G.Node, error) { return Columns(in[0], c[0], c[1]) })
	}
}

// The way SSD uses them: one LinearCat taken apart by three Columns, each
// part feeding the output; the gradients reach x and every weight.
func TestLinearCatColumnsGradFD(t *testing.T) {
	checkGradFD(t, 23, []fdInput{{name: "x", shape: []int{2, 4, 5}}, {name: "wb", shape: []int{5, 3}},
		{name: "wc", shape: []int{5, 3}}, {name: "wdt", shape: []int{5, 3}}},
		func(in []*G.Node) (*G.Node, error) {
			y, err := LinearCat(in[0], in[1], in[2], in[3])
			if err != nil {
				return nil, err
			}
			b, c, dt := must(Columns(y, 0, 3)), must(Columns(y, 3, 6)), must(Columns(y, 6, 9))
			return Add(must(Mul(b, c)), must(Softplus(dt)))
		})
}

// Each part of LinearCat's output is Linear of its own weight, to rounding;
// Columns gives back each part.
func TestLinearCatMatchesLinear(t *testing.T) {
	r := rand.New(rand.NewSource(24))
	x, w1, w2 := randData(r, 2*7*6, nil), randData(r, 6*4, nil), randData(r, 6*3, nil)
	g := G.NewGraph()
	xn := tensorNode(g, "x", x, 2, 7, 6)
	w1n, w2n := tensorNode(g, "w1", w1, 6, 4), tensorNode(g, "w2", w2, 6, 3)
	y, err := LinearCat(xn, w1n, w2n)
	if err != nil {
		t.Fatal(err)
	}
	p1, p2 := must(Columns(y, 0, 4)), must(Columns(y, 4, 7))
	l1, l2 := must(Linear(xn, w1n)), must(Linear(xn, w2n))
	got := evaluate(t, g, p1, p2, l1, l2)
	assertClose(t, "first part", got[0], got[2], 1e-12, 1e-12)
	assertClose(t, "second part", got[1], got[3], 1e-12, 1e-12)
}

func TestLinearCatColumnsErrors(t *testing.T) {
	g := G.NewGraph()
	x := tensorNode(g, "x", make([]float64, 12), 2, 6)
	for _, c := range []struct {
		build func() error
		want  string
	}{
		{func() error { _, err := LinearCat(x); return err }, "at least one weight"},
		{func() error { _, err := LinearCat(x, tensorNode(g, "w", make([]float64, 10), 5, 2)); return err }, "weight 0 (w) (5, 2) must be [din, dout]"},
		{func() error { _, err := Columns(x, 4, 7); return err }, "[4, 7) is not a non-empty range"},
		{func() error { _, err := Columns(x, 3, 3); return err }, "[3, 3) is not a non-empty range"},
	} {
		if err := c.build(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("got %v, want an error containing %q", err, c.want)
		}
	}
}

func must(n *G.Node, err error) *G.Node {
	if err != nil {
		panic(err)
	}
	return n
}
