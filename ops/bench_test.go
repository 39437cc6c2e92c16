package ops

import (
	"fmt"
	"math/rand"
	"testing"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// benchOp times one op in float32 on random inputs: forward only, or forward
// plus the backward of sum(y), on the machine the trainers use
// (NewTapeMachine). It reports tokens/s for the given token count.
func benchOp(b *testing.B, tokens int, inputs []fdInput, backward bool, build func(in []*G.Node) (*G.Node, error)) {
	benchOpBy(b, tokens, inputs, backward, build, G.Grad)
}

// benchOpBy is benchOp with the gradients taken by grad.
func benchOpBy(b *testing.B, tokens int, inputs []fdInput, backward bool, build func(in []*G.Node) (*G.Node, error), grad gradFunc) {
	// The package's tests fill scratchUninit's buffers with NaN
	// (poison_test.go); a benchmark times the kernels as a program runs them.
	defer func(p bool) { poisonUninitScratch = p }(poisonUninitScratch)
	poisonUninitScratch = false
	r := rand.New(rand.NewSource(1))
	g := G.NewGraph()
	nodes := make([]*G.Node, len(inputs))
	var wrt G.Nodes
	for i, s := range inputs {
		n := tensor.Shape(s.shape).TotalSize()
		gen := s.gen
		if gen == nil {
			gen = normal
		}
		data := make([]float32, n)
		for j := range data {
			data[j] = float32(gen(r))
		}
		val := tensor.New(tensor.WithShape(s.shape...), tensor.WithBacking(data))
		nodes[i] = G.NewTensor(g, tensor.Float32, len(s.shape), G.WithName(s.name), G.WithValue(val))
		if !s.noGrad {
			wrt = append(wrt, nodes[i])
		}
	}
	y, err := build(nodes)
	if err != nil {
		b.Fatal(err)
	}
	if backward {
		cost := y
		if !y.IsScalar() {
			if cost, err = G.Sum(y); err != nil {
				b.Fatal(err)
			}
		}
		if _, err := grad(cost, wrt...); err != nil {
			b.Fatal(err)
		}
	}
	vm := NewTapeMachine(g)
	defer vm.Close()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := vm.RunAll(); err != nil {
			b.Fatal(err)
		}
		vm.Reset()
	}
	b.ReportMetric(float64(tokens)*float64(b.N)/b.Elapsed().Seconds(), "tokens/s")
}

// Realistic sizes (ISSUE 2): b=8, t=512; 8 heads of 32; SSD p=32, n=64.
const (
	benchB, benchT, benchH, benchD = 8, 512, 8, 32
	benchModel                     = benchH * benchD
)

func benchBoth(b *testing.B, inputs []fdInput, build func(in []*G.Node) (*G.Node, error)) {
	b.Run("fwd", func(b *testing.B) { benchOp(b, benchB*benchT, inputs, false, build) })
	b.Run("fwdbwd", func(b *testing.B) { benchOp(b, benchB*benchT, inputs, true, build) })
}

func BenchmarkRope(b *testing.B) {
	benchBoth(b, []fdInput{{name: "x", shape: []int{benchB, benchT, benchH, benchD}}},
		func(n []*G.Node) (*G.Node, error) { return Rope(n[0], DefaultRope()) })
}

func BenchmarkLogN(b *testing.B) {
	benchBoth(b, []fdInput{{name: "x", shape: []int{benchB, benchT, benchH, benchD}}},
		func(n []*G.Node) (*G.Node, error) { return LogN(n[0], 256, 0) })
}

// ssdBenchInputs are x, dt, A, B, C (and D) with p=32, n=64.
func ssdBenchInputs(withD bool) []fdInput {
	const p, n = 32, 64
	in := []fdInput{
		{name: "x", shape: []int{benchB, benchT, benchH, p}},
		{name: "dt", shape: []int{benchB, benchT, benchH}, gen: uniformIn(0.001, 0.1)},
		{name: "A", shape: []int{benchH}, gen: uniformIn(-8, -1)},
		{name: "B", shape: []int{benchB, benchT, benchH, n}},
		{name: "C", shape: []int{benchB, benchT, benchH, n}},
	}
	if withD {
		in = append(in, fdInput{name: "D", shape: []int{benchH}})
	}
	return in
}

func BenchmarkSSD(b *testing.B) {
	benchBoth(b, ssdBenchInputs(true), func(in []*G.Node) (*G.Node, error) {
		return SSD(SSDInputs{X: in[0], DT: in[1], A: in[2], B: in[3], C: in[4], D: in[5]}, 64)
	})
}

// BenchmarkSSDModel times the scan at the shapes of the SSD mixer in `wm
// bench`'s rows (4 heads, d_state 16, one group of B and C, chunk 64):
// d_model 64 (head dim 16, 8×256 tokens) and 256 (head dim 64, 4×1024,
// and 2×1024 as each of two shards runs it).
func BenchmarkSSDModel(b *testing.B) {
	for _, z := range []struct{ bs, t, p int }{{8, 256, 16}, {4, 1024, 64}, {2, 1024, 64}} {
		const h, n = 4, 16
		in := []fdInput{
			{name: "x", shape: []int{z.bs, z.t, h, z.p}},
			{name: "dt", shape: []int{z.bs, z.t, h}, gen: uniformIn(0.001, 0.1)},
			{name: "A", shape: []int{h}, gen: uniformIn(-8, -1)},
			{name: "B", shape: []int{z.bs, z.t, 1, n}},
			{name: "C", shape: []int{z.bs, z.t, 1, n}},
			{name: "D", shape: []int{h}},
		}
		build := func(in []*G.Node) (*G.Node, error) {
			return SSD(SSDInputs{X: in[0], DT: in[1], A: in[2], B: in[3], C: in[4], D: in[5]}, 64)
		}
		b.Run(fmt.Sprintf("d%d/b%d", h*z.p, z.bs), func(b *testing.B) {
			b.Run("fwd", func(b *testing.B) { benchOp(b, z.bs*z.t, in, false, build) })
			b.Run("fwdbwd", func(b *testing.B) { benchOp(b, z.bs*z.t, in, true, build) })
		})
	}
}

func BenchmarkConv1DCausal(b *testing.B) {
	benchBoth(b, []fdInput{{name: "x", shape: []int{benchB, benchT, benchModel}}, {name: "w", shape: []int{benchModel, 4}},
		{name: "bias", shape: []int{benchModel}}},
		func(n []*G.Node) (*G.Node, error) { return Conv1DCausal(n[0], n[1], n[2]) })
}

func benchAttention(b *testing.B, mask MaskKind) {
	in := []fdInput{
		{name: "q", shape: []int{benchB, benchT, benchH, benchD}},
		{name: "k", shape: []int{benchB, benchT, benchH, benchD}},
		{name: "v", shape: []int{benchB, benchT, benchH, benchD}},
	}
	switch mask {
	case MaskPaper:
		in = append(in, fdInput{name: "l", shape: []int{benchH, benchT}, gen: uniformIn(0.5, 1)})
	case MaskDoge:
		in = append(in, fdInput{name: "bias", shape: []int{benchB, benchT, benchH}, gen: uniformIn(0, 1)})
	}
	benchBoth(b, in, func(n []*G.Node) (*G.Node, error) {
		var m *G.Node
		if len(n) > 3 {
			m = n[3]
		}
		return Attention(n[0], n[1], n[2], m, AttentionConfig{Mask: mask})
	})
}

func BenchmarkAttention(b *testing.B)          { benchAttention(b, MaskNone) }
func BenchmarkAttentionPaperMask(b *testing.B) { benchAttention(b, MaskPaper) }
func BenchmarkAttentionDogeMask(b *testing.B)  { benchAttention(b, MaskDoge) }

func BenchmarkInnerFuncValue(b *testing.B) {
	const nv, dret = 4, 64
	benchBoth(b, []fdInput{
		{name: "x", shape: []int{benchB, benchT, benchModel}}, {name: "Wq", shape: []int{benchModel, dret}},
		{name: "Kv", shape: []int{nv, dret}}, {name: "E", shape: []int{nv, benchModel}},
	}, func(n []*G.Node) (*G.Node, error) { return InnerFuncValue(n[0], n[1], n[2], n[3], 1) })
}

func BenchmarkCocaScores(b *testing.B) {
	benchBoth(b, []fdInput{
		{name: "q", shape: []int{benchB, benchT, benchH, benchD}},
		{name: "t", shape: []int{benchB, benchT, benchH, benchD / 2}},
	}, func(n []*G.Node) (*G.Node, error) { return CocaScores(n[0], n[1], DefaultRope()) })
}

func BenchmarkCDMoE(b *testing.B) {
	// d_model 256, d_ff 512, 1024 experts (32 keys a half), 4 heads of k=8.
	const dff, heads, nk, half = 512, 4, 32, 32
	benchBoth(b, cdmoeFDInputs(benchB, benchT, benchModel, dff, heads, nk, half),
		func(n []*G.Node) (*G.Node, error) { return cdmoeFromNodes(n, CDMoEConfig{Heads: heads, K: 8}) })
}

func BenchmarkRMSNorm(b *testing.B) {
	benchBoth(b, []fdInput{{name: "x", shape: []int{benchB, benchT, benchModel}}, {name: "w", shape: []int{benchModel}}},
		func(n []*G.Node) (*G.Node, error) { return RMSNorm(n[0], n[1], DefaultRMSNormEps) })
}

func BenchmarkCrossEntropy(b *testing.B) {
	const V = 4096
	benchBoth(b, []fdInput{
		{name: "logits", shape: []int{benchB, benchT, V}},
		{name: "targets", shape: []int{benchB, benchT}, gen: func(r *rand.Rand) float64 { return float64(r.Intn(V)) }, noGrad: true},
	}, func(n []*G.Node) (*G.Node, error) { return CrossEntropy(n[0], n[1], ReduceMean) })
}

func BenchmarkEmbedding(b *testing.B) {
	const V = 4096
	benchBoth(b, []fdInput{
		{name: "table", shape: []int{V, benchModel}},
		{name: "ids", shape: []int{benchB, benchT}, gen: func(r *rand.Rand) float64 { return float64(r.Intn(V)) }, noGrad: true},
	}, func(n []*G.Node) (*G.Node, error) { return Embedding(n[0], n[1]) })
}

func BenchmarkSiLU(b *testing.B) {
	benchBoth(b, []fdInput{{name: "x", shape: []int{benchB, benchT, 4 * benchModel}}},
		func(n []*G.Node) (*G.Node, error) { return SiLU(n[0]) })
}

func BenchmarkSSDFinalState(b *testing.B) {
	benchBoth(b, ssdBenchInputs(false), func(in []*G.Node) (*G.Node, error) {
		return SSDFinalState(SSDInputs{X: in[0], DT: in[1], A: in[2], B: in[3], C: in[4]}, 64)
	})
}

func BenchmarkCausalSoftmax(b *testing.B) {
	benchBoth(b, []fdInput{{name: "s", shape: []int{benchB, benchH, benchT, benchT}}},
		func(n []*G.Node) (*G.Node, error) { return CausalSoftmax(n[0]) })
}

func BenchmarkWeightedValues(b *testing.B) {
	benchBoth(b, []fdInput{{name: "P", shape: []int{benchB, benchH, benchT, benchT}}, {name: "v", shape: []int{benchB, benchT, benchH, benchD}}},
		func(n []*G.Node) (*G.Node, error) { return WeightedValues(n[0], n[1]) })
}

func BenchmarkSoftplus(b *testing.B) {
	benchBoth(b, []fdInput{{name: "x", shape: []int{benchB, benchT, benchH}}},
		func(n []*G.Node) (*G.Node, error) { return Softplus(n[0]) })
}

// BenchmarkLinearCrossEntropy times the LM head and its loss at the (SM)4
// d_model 64 benchmark's sizes (8 × 256 tokens, the byte vocabulary of
// 260): as one op, and as Linear then CrossEntropy.
func BenchmarkLinearCrossEntropy(b *testing.B) {
	const bs, t, d, v = 8, 256, 64, 260
	inputs := []fdInput{
		{name: "x", shape: []int{bs, t, d}},
		{name: "W", shape: []int{d, v}},
		{name: "targets", shape: []int{bs, t}, gen: func(r *rand.Rand) float64 { return float64(r.Intn(v)) }, noGrad: true},
	}
	for _, c := range []struct {
		name  string
		build func(n []*G.Node) (*G.Node, error)
	}{
		{"one-op", func(n []*G.Node) (*G.Node, error) { return LinearCrossEntropy(n[0], n[1], n[2], ReduceMean) }},
		{"two-nodes", func(n []*G.Node) (*G.Node, error) {
			logits, err := Linear(n[0], n[1])
			if err != nil {
				return nil, err
			}
			return CrossEntropy(logits, n[2], ReduceMean)
		}},
	} {
		b.Run(c.name+"/fwd", func(b *testing.B) { benchOp(b, bs*t, inputs, false, c.build) })
		b.Run(c.name+"/fwdbwd", func(b *testing.B) { benchOp(b, bs*t, inputs, true, c.build) })
	}
}
