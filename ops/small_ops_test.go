package ops

import (
	"math/rand"
	"testing"

	G "gorgonia.org/gorgonia"
)

func TestRopeGradFD(t *testing.T) {
	for _, c := range []struct {
		name  string
		shape []int
		cfg   RopeConfig
	}{
		{"plain", []int{2, 5, 3, 8}, DefaultRope()},
		{"one token offset", []int{1, 1, 1, 4}, RopeConfig{Base: 10000, ScalingFactor: 1, Offset: 9}},
		{"ntk", []int{1, 12, 2, 6}, RopeConfig{Base: 500, MaxPosition: 4, ScalingFactor: 2}},
	} {
		t.Run(c.name, func(t *testing.T) {
			checkGradFD(t, 1, []fdInput{{name: "x", shape: c.shape}}, func(in []*G.Node) (*G.Node, error) {
				return Rope(in[0], c.cfg)
			})
		})
	}
}

func TestLogNGradFD(t *testing.T) {
	checkGradFD(t, 2, []fdInput{{name: "x", shape: []int{2, 9, 2, 3}}}, func(in []*G.Node) (*G.Node, error) {
		return LogN(in[0], 3, 1)
	})
}

func TestRMSNormGradFD(t *testing.T) {
	for _, shape := range [][]int{{2, 3, 7}, {1, 1}} {
		checkGradFD(t, 3, []fdInput{{name: "x", shape: shape}, {name: "w", shape: shape[len(shape)-1:]}},
			func(in []*G.Node) (*G.Node, error) { return RMSNorm(in[0], in[1], 1e-6) })
	}
}

func TestCrossEntropyGradFD(t *testing.T) {
	const V = 7
	targets := func(r *rand.Rand) float64 { return float64(r.Intn(V+1) - 1) } // -1 ignored
	for _, red := range []Reduction{ReduceMean, ReduceSum} {
		t.Run(string(red), func(t *testing.T) {
			checkGradFD(t, 4, []fdInput{
				{name: "logits", shape: []int{2, 5, V}, gen: func(r *rand.Rand) float64 { return 4 * r.NormFloat64() }},
				{name: "targets", shape: []int{2, 5}, gen: targets, noGrad: true},
			}, func(in []*G.Node) (*G.Node, error) { return CrossEntropy(in[0], in[1], red) })
		})
	}
}

func TestConv1DGradFD(t *testing.T) {
	for _, c := range []struct {
		name string
		t, k int
		bias bool
	}{{"bias", 7, 4, true}, {"no bias, shorter than kernel", 2, 4, false}, {"one token", 1, 3, true}} {
		t.Run(c.name, func(t *testing.T) {
			in := []fdInput{{name: "x", shape: []int{2, c.t, 3}}, {name: "w", shape: []int{3, c.k}}}
			if c.bias {
				in = append(in, fdInput{name: "bias", shape: []int{3}})
			}
			checkGradFD(t, 5, in, func(n []*G.Node) (*G.Node, error) {
				var b *G.Node
				if c.bias {
					b = n[2]
				}
				return Conv1DCausal(n[0], n[1], b)
			})
		})
	}
}

func TestElementwiseGradFD(t *testing.T) {
	for name, f := range map[string]func(*G.Node) (*G.Node, error){"silu": SiLU, "softplus": Softplus} {
		t.Run(name, func(t *testing.T) {
			checkGradFD(t, 6, []fdInput{{name: "x", shape: []int{3, 4}, gen: uniformIn(-30, 30)}}, func(in []*G.Node) (*G.Node, error) { return f(in[0]) })
		})
	}
}

func TestEmbeddingGradFD(t *testing.T) {
	checkGradFD(t, 7, []fdInput{
		{name: "table", shape: []int{5, 3}},
		{name: "ids", shape: []int{2, 4}, gen: func(r *rand.Rand) float64 { return float64(r.Intn(5)) }, noGrad: true},
	}, func(in []*G.Node) (*G.Node, error) { return Embedding(in[0], in[1]) })
}
