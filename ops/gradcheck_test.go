package ops

import (
	"math"
	"math/rand"
	"testing"

	"gonum.org/v1/gonum/diff/fd"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// fdInput describes one random input of a finite-difference check.
type fdInput struct {
	name  string
	shape []int
	// gen draws one element; nil draws from N(0,1).
	gen func(r *rand.Rand) float64
	// noGrad marks inputs the op does not differentiate (indices, targets).
	noGrad bool
}

func normal(r *rand.Rand) float64 { return r.NormFloat64() }

// uniformIn returns a generator of values uniform in [lo, hi).
func uniformIn(lo, hi float64) func(*rand.Rand) float64 {
	return func(r *rand.Rand) float64 { return lo + (hi-lo)*r.Float64() }
}

// drawInputs draws each input's values from its generator (N(0,1) when it
// has none), in order from one stream.
func drawInputs(r *rand.Rand, inputs []fdInput) [][]float64 {
	data := make([][]float64, len(inputs))
	for i, s := range inputs {
		gen := s.gen
		if gen == nil {
			gen = normal
		}
		data[i] = make([]float64, tensor.Shape(s.shape).TotalSize())
		for j := range data[i] {
			data[i][j] = gen(r)
		}
	}
	return data
}

// fdNodes makes one float64 input node in g for each input, named and
// shaped as it says and holding its values from data (drawInputs).
func fdNodes(g *G.ExprGraph, inputs []fdInput, data [][]float64) []*G.Node {
	nodes := make([]*G.Node, len(inputs))
	for i, s := range inputs {
		nodes[i] = tensorNode(g, s.name, data[i], s.shape...)
	}
	return nodes
}

// checkGradFD compares the symbolic gradient of sum(op(inputs) * w), w random,
// with central finite differences (gonum fd.Gradient) in float64.
func checkGradFD(t *testing.T, seed int64, inputs []fdInput, build func(in []*G.Node) (*G.Node, error)) {
	t.Helper()
	checkGradFDBy(t, seed, inputs, build, G.Grad)
}

// gradFunc takes the gradients of cost: G.Grad, or this package's Grad.
type gradFunc func(cost *G.Node, wrt ...*G.Node) (G.Nodes, error)

// checkGradFDBy is checkGradFD with the symbolic gradients taken by grad.
func checkGradFDBy(t *testing.T, seed int64, inputs []fdInput, build func(in []*G.Node) (*G.Node, error), grad gradFunc) {
	t.Helper()
	r := rand.New(rand.NewSource(seed))
	data := drawInputs(r, inputs)
	// graph builds op(inputs) and sum(y*w) with w drawn from the same stream.
	var w []float64
	graph := func() (*G.ExprGraph, []*G.Node, *G.Node) {
		g := G.NewGraph()
		nodes := fdNodes(g, inputs, data)
		y, err := build(nodes)
		if err != nil {
			t.Fatalf("build: %+v", err)
		}
		if w == nil {
			w = make([]float64, y.Shape().TotalSize())
			for j := range w {
				w[j] = r.NormFloat64()
			}
		}
		var wn *G.Node
		if y.IsScalar() {
			wn = G.NewScalar(g, tensor.Float64, G.WithName("w"), G.WithValue(w[0]))
		} else {
			wn = G.NewTensor(g, tensor.Float64, y.Dims(), G.WithName("w"),
				G.WithValue(tensor.New(tensor.WithShape(y.Shape().Clone()...), tensor.WithBacking(w))))
		}
		cost, err := weightedSum(y, wn)
		if err != nil {
			t.Fatal(err)
		}
		return g, nodes, cost
	}

	g, nodes, cost := graph()
	var wrt G.Nodes
	var idx []int
	for i, s := range inputs {
		if !s.noGrad {
			wrt = append(wrt, nodes[i])
			idx = append(idx, i)
		}
	}
	grads, err := grad(cost, wrt...)
	if err != nil {
		t.Fatalf("grad: %+v", err)
	}
	vm := G.NewTapeMachine(g)
	defer vm.Close()
	if err := vm.RunAll(); err != nil {
		t.Fatalf("run: %+v", err)
	}
	analytic := make([][]float64, len(grads))
	for k, gn := range grads {
		analytic[k] = append([]float64(nil), gn.Value().Data().([]float64)...)
	}

	fg, _, fcost := graph()
	fvm := G.NewTapeMachine(fg)
	defer fvm.Close()
	for k, i := range idx {
		orig := append([]float64(nil), data[i]...)
		f := func(x []float64) float64 {
			copy(data[i], x)
			fvm.Reset()
			if err := fvm.RunAll(); err != nil {
				t.Fatalf("run: %+v", err)
			}
			return fcost.Value().Data().(float64)
		}
		numeric := fd.Gradient(nil, f, orig, &fd.Settings{Formula: fd.Central, Step: 1e-6})
		copy(data[i], orig)
		bad := 0
		for j := range numeric {
			a, n := analytic[k][j], numeric[j]
			if d := math.Abs(a - n); !(d <= 1e-6+1e-5*math.Max(math.Abs(a), math.Abs(n))) {
				if bad < 5 {
					t.Errorf("d/d%s[%d]: symbolic %.10g, finite difference %.10g", inputs[i].name, j, a, n)
				}
				bad++
			}
		}
		if bad > 5 {
			t.Errorf("d/d%s: %d of %d elements differ", inputs[i].name, bad, len(numeric))
		}
	}
}
