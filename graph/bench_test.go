package graph_test

import (
	"testing"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/wonderful-matrices/wonderful-matrices-go/graph"
	"github.com/wonderful-matrices/wonderful-matrices-go/layers"
)

// benchStacks are the named architectures cut to 8 sublayers each.
var benchStacks = []struct{ name, pattern string }{
	{"cheems", "(SE)3 IE"},
	{"transxssm", "(SM)3 AM"},
	{"llama", "(AH)4"},
	{"mamba2", "(BH)4"},
	{"jamba", "(BH)3 AH"},
	{"doge", "(I E E E)2"},
}

// benchConfig is d_model 128, 4 heads, byte vocabulary, 256 CDMoE experts.
func benchConfig(pattern string) graph.Config {
	return graph.Config{
		Pattern: pattern, Vocab: 260, DModel: 128, Heads: 4, MaxPosition: 512,
		CDMoE: layers.CDMoEConfig{Experts: 256},
		MoE:   layers.MoEConfig{Experts: 4},
	}
}

// BenchmarkModel measures forward and forward+backward of each stack at
// b=8, t=256 in float32 (tokens/s reported).
func BenchmarkModel(b *testing.B) {
	const bs, t = 8, 256
	for _, s := range benchStacks {
		for _, withGrad := range []bool{false, true} {
			name := s.name + "/fwd"
			if withGrad {
				name = s.name + "/fwdbwd"
			}
			b.Run(name, func(b *testing.B) {
				m := newModel(b, benchConfig(s.pattern), tensor.Float32, 1)
				ids, targets := fixedBatch(bs, t, 260)
				bld := layers.NewBuilder(tensor.Float32)
				var loss *G.Node
				if err := bld.Run("bench", func() {
					loss, _ = m.Loss(bld, bld.Input("ids", flatten(ids), bs, t), bld.Input("targets", flatten(targets), bs, t))
				}); err != nil {
					b.Fatal(err)
				}
				if withGrad {
					_, nodes := bld.ParamNodes()
					if _, err := G.Grad(loss, nodes...); err != nil {
						b.Fatal(err)
					}
				}
				vm := G.NewTapeMachine(bld.G)
				defer vm.Close()
				b.ReportAllocs()
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					if err := vm.RunAll(); err != nil {
						b.Fatal(err)
					}
					vm.Reset()
				}
				b.ReportMetric(float64(bs*t*b.N)/b.Elapsed().Seconds(), "tokens/s")
			})
		}
	}
}

// BenchmarkDecodeStep measures one generated token after a 64-token prompt.
func BenchmarkDecodeStep(b *testing.B) {
	for _, s := range benchStacks {
		b.Run(s.name, func(b *testing.B) {
			m := newModel(b, benchConfig(s.pattern), tensor.Float32, 1)
			prompt := make([]int, 64)
			for i := range prompt {
				prompt[i] = (i * 7) % 260
			}
			st := m.NewDecodeState()
			if _, err := m.Step(st, [][]int{prompt}); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, err := m.Step(st, [][]int{{i % 260}}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
