package ops

import (
	"fmt"
	"math/rand"
	"strings"
	"testing"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// threeReaders is a pre-norm block whose h is read by three projections,
// as attention's is: x + ((h Wq) ⊙ (h Wk) + h Wv) Wo. With gorgoniaReader,
// a fourth reader is a Gorgonia op: + h ⊙ h before Wo.
func threeReaders(in []*G.Node, gorgoniaReader bool) (*G.Node, error) {
	x, w, wq, wk, wv, wo := in[0], in[1], in[2], in[3], in[4], in[5]
	h, r, err := PreNorm(x, w, DefaultRMSNormEps)
	if err != nil {
		return nil, err
	}
	var p [3]*G.Node
	for i, wi := range []*G.Node{wq, wk, wv} {
		if p[i], err = Linear(h, wi); err != nil {
			return nil, err
		}
	}
	qk, err := G.HadamardProd(p[0], p[1])
	if err != nil {
		return nil, err
	}
	a, err := G.Add(qk, p[2])
	if err != nil {
		return nil, err
	}
	if gorgoniaReader {
		hh, err := G.HadamardProd(h, h)
		if err != nil {
			return nil, err
		}
		if a, err = G.Add(a, hh); err != nil {
			return nil, err
		}
	}
	return r.Linear(a, wo)
}

// threeReadersInputs: 2 × 37 tokens, one full block of the norm's 64 rows
// and a part of another, of d_model 8.
func threeReadersInputs(frozenK bool) []fdInput {
	return threeReadersInputsOf([]int{2, 37}, 8, frozenK)
}

// threeReadersInputsOf is threeReaders' inputs over rows of d.
func threeReadersInputsOf(rows []int, d int, frozenK bool) []fdInput {
	return []fdInput{
		{name: "x", shape: append(append([]int{}, rows...), d)},
		{name: "w", shape: []int{d}, gen: uniformIn(0.5, 1.5)},
		{name: "Wq", shape: []int{d, d}},
		{name: "Wk", shape: []int{d, d}, noGrad: frozenK},
		{name: "Wv", shape: []int{d, d}},
		{name: "Wo", shape: []int{d, d}},
	}
}

// BenchmarkGradFold times the forward and backward of threeReaders (h
// read by three projections, as attention's), its gradients taken by
// Grad (folded: the norm sums h's three gradients) and by G.Grad (summed:
// two of Gorgonia's adds), at the benchmark rows' two sizes. Unplanned
// buffers, so it times the passes, not the memory the plan then saves.
func BenchmarkGradFold(b *testing.B) {
	for _, s := range []struct{ batch, t, d int }{{8, 256, 64}, {4, 1024, 256}} {
		inputs := threeReadersInputsOf([]int{s.batch, s.t}, s.d, false)
		build := func(in []*G.Node) (*G.Node, error) { return threeReaders(in, false) }
		for _, fold := range []bool{true, false} {
			how, grad := "folded", gradFunc(Grad)
			if !fold {
				how, grad = "summed", G.Grad
			}
			b.Run(fmt.Sprintf("d%d/%s", s.d, how), func(b *testing.B) {
				benchOpBy(b, s.batch*s.t, inputs, true, build, grad)
			})
		}
	}
}

// hSums counts Gorgonia's sums of gradients of h's size [2, 37, 8] in g:
// adds that read a fused op's gradient.
func hSums(g *G.ExprGraph) int {
	n := 0
	for _, nd := range g.AllNodes() {
		if op := nd.Op(); op == nil || !strings.HasPrefix(op.String(), "+") || nd.Shape().TotalSize() != 2*37*8 {
			continue
		}
		for it := g.From(nd.ID()); it.Next(); {
			if _, ok := it.Node().(*G.Node).Op().(unpackOp); ok {
				n++
				break
			}
		}
	}
	return n
}

// Grad's gradients, with h's three gradients summed in the norm's
// backward, match central finite differences in float64; so do they when
// a reader's weight is not differentiated (the block then keeps
// Gorgonia's sum: that reader would otherwise never hand its gradient on)
// and when a Gorgonia op reads h too (likewise).
func TestGradFoldGradFD(t *testing.T) {
	for _, c := range []struct {
		name            string
		frozenK, gorgon bool
	}{{"folded", false, false}, {"a reader's weight not differentiated", true, false}, {"a Gorgonia op reads h", false, true}} {
		t.Run(c.name, func(t *testing.T) {
			checkGradFDBy(t, 41, threeReadersInputs(c.frozenK), func(in []*G.Node) (*G.Node, error) {
				return threeReaders(in, c.gorgon)
			}, func(cost *G.Node, wrt ...*G.Node) (G.Nodes, error) {
				grads, err := Grad(cost, wrt...)
				if err == nil {
					if n := hSums(cost.Graph()); (n == 0) != (!c.frozenK && !c.gorgon) {
						t.Errorf("%d of Gorgonia's sums of h's gradients left", n)
					}
				}
				return grads, err
			})
		})
	}
}

// Grad's output and gradients are G.Grad's to the bit (the same IEEE adds
// in the same order), in float32 and float64, and its graph has none of
// Gorgonia's sums of h's gradients left, where G.Grad's has two.
func TestGradFoldSameBits(t *testing.T) {
	inputs := threeReadersInputs(false)
	build := func(n []*G.Node) (*G.Node, error) { return threeReaders(n, false) }
	for _, dt := range []tensor.Dtype{tensor.Float32, tensor.Float64} {
		r := rand.New(rand.NewSource(42))
		data := drawInputs(r, inputs)
		upstream := randData(r, 2*37*8, nil)
		sums := func(want int) func(y *G.Node) {
			return func(y *G.Node) {
				if n := hSums(y.Graph()); n != want {
					t.Errorf("%v: %d of Gorgonia's sums of h's gradients, want %d", dt, n, want)
				}
			}
		}
		got := blockValuesBy(t, dt.String(), dt, inputs, data, upstream, build, sums(0), Grad)
		want := blockValuesBy(t, dt.String(), dt, inputs, data, upstream, build, sums(2), G.Grad)
		for i, what := range []string{"output", "dx", "dw", "dWq", "dWk", "dWv", "dWo"} {
			assertSameBits(t, dt.String()+" "+what, got[i], want[i])
		}
	}
}
