package ops

import (
	"math/rand"
	"testing"

	G "gorgonia.org/gorgonia"
)

// Only graphs that take the gradient keep a routed MoE's expert
// activations or CDMoE's shared activations after a forward; an evaluation
// graph hands them back to the pools when its forward is done, and
// ReleaseBuffers drops what a training graph kept.
func TestMoEsSaveOnlyForGradient(t *testing.T) {
	type kept func(y *G.Node) bool
	for _, c := range []struct {
		name   string
		inputs []fdInput
		build  func([]*G.Node) (*G.Node, error)
		kept   kept
	}{
		{"routed experts", []fdInput{
			{name: "x", shape: []int{2, 3, 4}},
			{name: "gates", shape: []int{2, 3, 3}, gen: uniformIn(0.1, 1)},
			{name: "W1", shape: []int{3, 4, 5}},
			{name: "W3", shape: []int{3, 4, 5}},
			{name: "W2", shape: []int{3, 5, 4}},
		}, func(in []*G.Node) (*G.Node, error) { return MoEExperts(in[0], in[1], in[2], in[3], in[4]) },
			func(y *G.Node) bool { return y.Op().(fusedOp).k.(moeKernel).saved.experts != nil }},
		{"cdmoe", cdmoeFDInputs(2, 3, 6, 5, 2, 3, 2),
			func(in []*G.Node) (*G.Node, error) { return cdmoeFromNodes(in, CDMoEConfig{Heads: 2, K: 2}) },
			func(y *G.Node) bool { return y.Op().(fusedOp).k.(cdmoeKernel).saved.act != nil }},
	} {
		for _, withGrad := range []bool{false, true} {
			g := G.NewGraph()
			r := rand.New(rand.NewSource(5))
			var nodes G.Nodes
			for _, in := range c.inputs {
				n := 1
				for _, s := range in.shape {
					n *= s
				}
				data := make([]float64, n)
				for i := range data {
					if in.gen != nil {
						data[i] = in.gen(r)
					} else {
						data[i] = r.NormFloat64()
					}
				}
				nodes = append(nodes, tensorNode(g, in.name, data, in.shape...))
			}
			y, err := c.build(nodes)
			if err != nil {
				t.Fatal(err)
			}
			if withGrad {
				if _, err := G.Grad(G.Must(G.Sum(y)), nodes...); err != nil {
					t.Fatal(err)
				}
			}
			vm := G.NewTapeMachine(g)
			if err := vm.RunAll(); err != nil {
				t.Fatal(err)
			}
			vm.Close()
			// A training graph's backward used its save and dropped it, so
			// run the forward's subgraph once more to see what it keeps.
			fwd := G.NewTapeMachine(g.SubgraphRoots(y))
			if err := fwd.RunAll(); err != nil {
				t.Fatal(err)
			}
			fwd.Close()
			if got := c.kept(y); got != withGrad {
				t.Errorf("%s with the gradient %v: activations kept after a forward %v", c.name, withGrad, got)
			}
			ReleaseBuffers(g)
			if c.kept(y) {
				t.Errorf("%s with the gradient %v: ReleaseBuffers left the activations", c.name, withGrad)
			}
		}
	}
}
