package ops

import (
	"math/rand"
	"testing"

	G "gorgonia.org/gorgonia"
)

// Only graphs that take the gradient keep a routed MoE's expert
// activations, SwiGLU's x W1 and x W3, CDMoE's shared activations, SSD's
// chunk states or RMSNorm's 1/rms of each row after a forward; an evaluation
// graph hands them back to the pools when its forward is done, and
// ReleaseBuffers drops what a training graph kept.
func TestMoEsSaveOnlyForGradient(t *testing.T) {
	for _, c := range []struct {
		name   string
		inputs []fdInput
		build  func([]*G.Node) (*G.Node, error)
		kept   func(y *G.Node) bool // the op's save holds activations
	}{
		{"routed experts", moeExpertsFDInputs(), moeExpertsFromNodes,
			func(y *G.Node) bool { return y.Op().(fusedOp).k.(moeKernel).saved.experts != nil }},
		{"swiglu", swigluFDInputs([]int{2, 5}, 4, 6), swigluWithBlock(3),
			func(y *G.Node) bool { return y.Op().(fusedOp).k.(swigluKernel).saved.h1 != nil }},
		{"cdmoe", cdmoeFDInputs(2, 3, 6, 5, 2, 3, 2),
			func(in []*G.Node) (*G.Node, error) { return cdmoeFromNodes(in, CDMoEConfig{Heads: 2, K: 2}) },
			func(y *G.Node) bool { return y.Op().(fusedOp).k.(cdmoeKernel).saved.act != nil }},
		{"ssd", ssdFDInputs(ssdEdgeCases[0], ssdEdgeCases[0].h),
			func(n []*G.Node) (*G.Node, error) { return ssdFromNodes(ssdEdgeCases[0], n, "y", false) },
			func(y *G.Node) bool { return y.Op().(fusedOp).k.(ssdKernel).saved.states != nil }},
		{"rmsnorm", []fdInput{{name: "x", shape: []int{2, 3, 7}}, {name: "w", shape: []int{7}}},
			func(n []*G.Node) (*G.Node, error) { return RMSNorm(n[0], n[1], 1e-6) },
			func(y *G.Node) bool { return y.Op().(fusedOp).k.(rmsnormKernel).saved.valid }},
	} {
		for _, withGrad := range []bool{false, true} {
			g := G.NewGraph()
			var nodes G.Nodes
			for i, data := range drawInputs(rand.New(rand.NewSource(5)), c.inputs) {
				nodes = append(nodes, tensorNode(g, c.inputs[i].name, data, c.inputs[i].shape...))
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
