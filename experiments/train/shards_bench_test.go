package train

import (
	"math/rand"
	"testing"

	"gorgonia.org/tensor"

	"github.com/wonderful-matrices/wonderful-matrices-go/experiments/data"
	"github.com/wonderful-matrices/wonderful-matrices-go/graph"
)

// BenchmarkShardCombine times the sum of two shards' gradients
// (combineGradients) for (SM)4 at d_model 256, float32: 2.8M values per
// shard, and reports nanoseconds per value. Run it with -cpu 1,2: the
// parameters are shared out to GOMAXPROCS goroutines, and at -cpu 1 it is
// the serial sum.
func BenchmarkShardCombine(b *testing.B) {
	m, err := graph.New(graph.Config{Pattern: "(SM)4", Vocab: data.ByteVocab, DModel: 256, Heads: 4, MaxPosition: 64})
	if err != nil {
		b.Fatal(err)
	}
	if err := m.Init(tensor.Float32, 1); err != nil {
		b.Fatal(err)
	}
	p, err := compileShards(m, 2, 64, true, Layout{Shards: 2})
	if err != nil {
		b.Fatal(err)
	}
	ids, targets := randomBatch(rand.New(rand.NewSource(1)), 2, 64, data.ByteVocab)
	if _, _, err := p.run(ids, targets); err != nil {
		b.Fatal(err)
	}
	w := []float64{0.5, 0.5}
	values := 0
	for _, g := range p.combined {
		values += len(g.([]float32))
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		p.combineGradients(w)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(values), "ns/value")
}
