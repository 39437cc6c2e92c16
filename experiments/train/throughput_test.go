package train

import (
	"testing"

	"github.com/wonderful-matrices/wonderful-matrices-go/graph"
	"github.com/wonderful-matrices/wonderful-matrices-go/layers"
)

// The products MeasureThroughputLayout records from its extra step are
// those of the timed steps: their work equals the work GemmFLOPs counted
// per timed step, for training and evaluation, with and without shards,
// and their BLAS calls were timed; MeasureThroughput records none.
func TestThroughputRecordsProducts(t *testing.T) {
	cfg := graph.Config{Pattern: "S M A E", Vocab: 50, DModel: 16, Heads: 2, MaxPosition: 32,
		CDMoE: layers.CDMoEConfig{Experts: 64}}
	for _, l := range []Layout{{Shards: 1}, {Shards: 2}, {Shards: 2, ShardThreads: 1}} {
		shards := l
		tp, err := MeasureThroughputLayout(cfg, 2, 32, 2, l, 1)
		if err != nil {
			t.Fatal(err)
		}
		if got := float64(tp.TrainGemmShapes.FLOPs()); got != tp.TrainGemmFLOPs || got == 0 {
			t.Errorf("%v shards: the recorded training step has %g FLOPs of products, a timed step %g", shards, got, tp.TrainGemmFLOPs)
		}
		if got := float64(tp.EvalGemmShapes.FLOPs()); got != tp.EvalGemmFLOPs || got == 0 {
			t.Errorf("%v shards: the recorded evaluation step has %g FLOPs of products, a timed step %g", shards, got, tp.EvalGemmFLOPs)
		}
		if tp.TrainBLASTime <= 0 || tp.EvalBLASTime <= 0 || tp.TrainRecorded <= 0 || tp.EvalRecorded <= 0 {
			t.Errorf("%v shards: the recorded steps' products took %v (training) and %v (evaluation), the steps %v and %v; want times above 0", shards, tp.TrainBLASTime, tp.EvalBLASTime, tp.TrainRecorded, tp.EvalRecorded)
		}
	}
	tp, err := MeasureThroughput(cfg, 2, 32, 1, 1)
	if err != nil {
		t.Fatal(err)
	}
	if tp.TrainGemmShapes != nil || tp.EvalGemmShapes != nil || tp.TrainBLASTime != 0 || tp.EvalBLASTime != 0 || tp.TrainRecorded != 0 || tp.EvalRecorded != 0 {
		t.Error("MeasureThroughput recorded products it was not asked for")
	}
}
