package train

import (
	"fmt"
	"math/rand"
	"os"
	"testing"

	"gorgonia.org/tensor"

	"github.com/wonderful-matrices/wonderful-matrices-go/experiments/data"
	"github.com/wonderful-matrices/wonderful-matrices-go/graph"
	"github.com/wonderful-matrices/wonderful-matrices-go/layers"
	"github.com/wonderful-matrices/wonderful-matrices-go/ops"
)

// BenchmarkTrainStep times one training step (forward, backward, AdamW) of
// the patterns `wm bench` compares with the PyTorch peer, through the same
// compiled program the trainer runs; tokens/s and allocations are reported.
// Sizes are d_model x seq_len x batch. It also reports the matrix-product
// work of a step (ops.GemmFLOPs) and the rate the step achieves on it, to set
// against BenchmarkGemm's rate for this BLAS. Each size runs as one graph
// (shards=1) and split over two graphs at once (shards=2, data
// parallelism; shards=2x1 with each shard's loops on one goroutine,
// Config.ShardThreads: compare them with -cpu 2; at -cpu 1 the shards' BLAS
// calls still run on other cores, because cgo calls do not count against
// GOMAXPROCS, so pin the process with taskset to measure one core). Like
// wm's step commands, it runs under SCHED_BATCH (ops.SetSchedulingPolicy;
// WM_SCHED=normal keeps Linux's default). For a CPU profile of the timed
// steps alone, set WM_STEP_CPUPROFILE (see profileSteps) rather than
// passing -cpuprofile, whose profile also holds the set-up.
func BenchmarkTrainStep(b *testing.B) { benchStep(b, true) }

// BenchmarkEvalStep is BenchmarkTrainStep without gradients or update, on
// the model after evalWarmSteps training steps.
func BenchmarkEvalStep(b *testing.B) { benchStep(b, false) }

func benchStep(b *testing.B, withGrad bool) {
	if os.Getenv("WM_SCHED") != "normal" {
		if err := ops.SetSchedulingPolicy("batch"); err != nil {
			b.Logf("running under the default policy: %v", err)
		}
	}
	sizes := []stepSize{{64, 256, 8}, {256, 1024, 4}}
	for _, pattern := range []string{"(SM)4", "(SM)3 AM", "(SE)3 IE", "(SR)3 AR", "(SH)3 AH", "(AM)4"} {
		for _, z := range sizes {
			for _, l := range []Layout{{Shards: 1}, {Shards: 2}, {Shards: 2, ShardThreads: 1}} {
				benchOne(b, pattern, z, l, withGrad)
			}
		}
	}
}

// evalWarmSteps is how many training steps BenchmarkEvalStep takes before
// it times evaluation.
const evalWarmSteps = 3

// stepSize is a benchmark's d_model, seq_len and batch.
type stepSize struct{ d, t, bs int }

// benchOne times one pattern at one size and layout, named shards=2 for two
// shards and shards=2x1 for two of one thread each.
func benchOne(b *testing.B, pattern string, z stepSize, l Layout, withGrad bool) {
	name := fmt.Sprint(l.Shards)
	if l.ShardThreads > 0 {
		name = fmt.Sprintf("%dx%d", l.Shards, l.ShardThreads)
	}
	b.Run(fmt.Sprintf("%s/%dx%dx%d/shards=%s", pattern, z.d, z.t, z.bs, name), func(b *testing.B) {
		cfg := graph.Config{Pattern: pattern, Vocab: data.ByteVocab, DModel: z.d, Heads: 4, MaxPosition: z.t,
			CDMoE: layers.CDMoEConfig{Experts: 1024}}
		m, err := graph.New(cfg)
		if err != nil {
			b.Fatal(err)
		}
		if err := m.Init(tensor.Float32, 1); err != nil {
			b.Fatal(err)
		}
		ids, targets := randomBatch(rand.New(rand.NewSource(1)), z.bs, z.t, cfg.Vocab)
		if !withGrad {
			// Evaluate a model a few steps into training, as wm bench
			// does: at initialisation CDMoE's product keys are zero, every
			// similarity ties, and its search takes a path training never
			// sees again.
			tr, err := newTimedStep(m, z.bs, z.t, l, true)
			if err != nil {
				b.Fatal(err)
			}
			for range evalWarmSteps {
				if err := tr.run(ids, targets); err != nil {
					b.Fatal(err)
				}
			}
		}
		s, err := newTimedStep(m, z.bs, z.t, l, withGrad)
		if err != nil {
			b.Fatal(err)
		}
		step := func() {
			if err := s.run(ids, targets); err != nil {
				b.Fatal(err)
			}
		}
		step()
		stop := profileSteps(b)
		b.ReportAllocs()
		b.ResetTimer()
		f0 := ops.GemmFLOPs()
		for i := 0; i < b.N; i++ {
			step()
		}
		flops := float64(ops.GemmFLOPs() - f0)
		stop()
		b.ReportMetric(float64(z.bs*z.t*b.N)/b.Elapsed().Seconds(), "tok/s")
		b.ReportMetric(flops/float64(b.N)/1e9, "gemm-GFLOP/step")
		b.ReportMetric(flops/b.Elapsed().Seconds()/1e9, "gemm-GFLOP/s")
	})
}
