package train

import (
	"math/rand"
	"time"

	"github.com/pkg/errors"
	"gorgonia.org/tensor"

	"github.com/wonderful-matrices/wonderful-matrices-go/graph"
	"github.com/wonderful-matrices/wonderful-matrices-go/ops"
)

// Throughput is what MeasureThroughput found, in tokens per second.
type Throughput struct {
	// Train is forward + backward + the AdamW update.
	Train float64 `json:"train_tokens_per_s"`
	// Eval is the forward pass and the loss only.
	Eval float64 `json:"eval_tokens_per_s"`
	// TrainGemmFLOPs and EvalGemmFLOPs are the matrix-product work of one
	// step (ops.GemmFLOPs).
	TrainGemmFLOPs float64 `json:"train_gemm_flops"`
	EvalGemmFLOPs  float64 `json:"eval_gemm_flops"`
	// TrainGemmShapes and EvalGemmShapes are the products of one more
	// step, run untimed after the timed ones and recorded
	// (ops.RecordGemmShapes), for ops.ReplayGemmShapes to time alone.
	TrainGemmShapes ops.GemmShapes `json:"-"`
	EvalGemmShapes  ops.GemmShapes `json:"-"`
	// TrainBLASTime and EvalBLASTime are the core time the same recorded
	// step's products took where they ran (ops.GemmRecording.BLASTime), and
	// TrainRecorded and EvalRecorded that step's own time.
	TrainBLASTime, TrainRecorded time.Duration `json:"-"`
	EvalBLASTime, EvalRecorded   time.Duration `json:"-"`
}

// MeasureThroughput times reps training steps and reps evaluation passes
// of a freshly initialised model on random tokens of [batch, seqLen], after
// one untimed warm-up of each (Wonderful Matrices Figure 6 and TransXSSM
// Figure 4 time the same two paths). It uses float32, like training.
func MeasureThroughput(cfg graph.Config, batch, seqLen, reps int, seed int64) (Throughput, error) {
	return measureThroughput(cfg, batch, seqLen, reps, Layout{Shards: 1}, seed, false)
}

// MeasureThroughputLayout is MeasureThroughput with each batch split over
// l.Shards graphs run at once (Config.Shards, data parallelism on one
// machine; l.Shards must divide batch), their ops' loops on at most
// l.ShardThreads goroutines each when it is above 0 (Config.ShardThreads). It also runs one more untimed step of
// each path and records its products (TrainGemmShapes, EvalGemmShapes) and
// their time in that step (TrainBLASTime, EvalBLASTime) and the step's
// (TrainRecorded, EvalRecorded), as `wm bench` needs for its ceilings.
func MeasureThroughputLayout(cfg graph.Config, batch, seqLen, reps int, l Layout, seed int64) (Throughput, error) {
	return measureThroughput(cfg, batch, seqLen, reps, l, seed, true)
}

func measureThroughput(cfg graph.Config, batch, seqLen, reps int, l Layout, seed int64, record bool) (Throughput, error) {
	if batch < 1 || seqLen < 1 || reps < 1 {
		return Throughput{}, errors.Errorf("throughput: batch %d, seq_len %d and reps %d must be >= 1", batch, seqLen, reps)
	}
	m, ids, targets, err := benchModel(cfg, batch, seqLen, l.Shards, seed)
	if err != nil {
		return Throughput{}, errors.Wrap(err, "throughput")
	}
	var out Throughput
	for _, withGrad := range []bool{true, false} {
		s, err := newTimedStep(m, batch, seqLen, l, withGrad)
		if err != nil {
			return Throughput{}, err
		}
		var elapsed time.Duration
		var flops int64
		for i := 0; i <= reps; i++ {
			if i == 1 {
				flops = ops.GemmFLOPs()
			}
			t0 := time.Now()
			if err := s.run(ids, targets); err != nil {
				return Throughput{}, errors.Wrap(err, "throughput")
			}
			if i > 0 {
				elapsed += time.Since(t0)
			}
		}
		tps := float64(batch*seqLen*reps) / elapsed.Seconds()
		perStep := float64(ops.GemmFLOPs()-flops) / float64(reps)
		var rec ops.GemmRecording
		if record {
			if rec, err = ops.RecordGemm(func() error { return s.run(ids, targets) }); err != nil {
				return Throughput{}, errors.Wrap(err, "throughput: recording a step's products")
			}
		}
		if withGrad {
			out.Train, out.TrainGemmFLOPs, out.TrainGemmShapes, out.TrainBLASTime, out.TrainRecorded = tps, perStep, rec.Shapes, rec.BLASTime, rec.Wall
		} else {
			out.Eval, out.EvalGemmFLOPs, out.EvalGemmShapes, out.EvalBLASTime, out.EvalRecorded = tps, perStep, rec.Shapes, rec.BLASTime, rec.Wall
		}
	}
	return out, nil
}

// benchModel is what a measurement of steps starts from: the model of cfg
// with float32 parameters from seed, and a batch of random tokens of
// [batch, seqLen] from the same seed. shards must divide the batch.
func benchModel(cfg graph.Config, batch, seqLen, shards int, seed int64) (m *graph.Model, ids, targets [][]int, err error) {
	if shards < 1 || batch%shards != 0 {
		return nil, nil, nil, errors.Errorf("%d shards must divide the batch of %d", shards, batch)
	}
	if m, err = graph.New(cfg); err != nil {
		return nil, nil, nil, err
	}
	if err := m.Init(tensor.Float32, seed); err != nil {
		return nil, nil, nil, err
	}
	ids, targets = randomBatch(rand.New(rand.NewSource(seed)), batch, seqLen, m.Config.Vocab)
	return m, ids, targets, nil
}

// randomBatch draws batch rows of seqLen token ids and targets below vocab.
func randomBatch(r *rand.Rand, batch, seqLen, vocab int) (ids, targets [][]int) {
	ids, targets = make([][]int, batch), make([][]int, batch)
	for i := range ids {
		ids[i], targets[i] = make([]int, seqLen), make([]int, seqLen)
		for j := range ids[i] {
			ids[i][j], targets[i][j] = r.Intn(vocab), r.Intn(vocab)
		}
	}
	return ids, targets
}

// timedStep is what a throughput measurement times: the compiled program
// and, for training, the AdamW update after each run.
type timedStep struct {
	p        *program
	opt      *AdamW
	withGrad bool
}

func newTimedStep(m *graph.Model, batch, seqLen int, l Layout, withGrad bool) (*timedStep, error) {
	p, err := compileShards(m, batch, seqLen, withGrad, l)
	if err != nil {
		return nil, err
	}
	return &timedStep{p: p, opt: NewAdamW(m.Params(), 0.01), withGrad: withGrad}, nil
}

// run is one step: forward (and backward and update when training).
func (s *timedStep) run(ids, targets [][]int) error {
	if _, _, err := s.p.run(ids, targets); err != nil {
		return err
	}
	if s.withGrad {
		s.opt.Update(s.p.params, s.p.gradients(), 1, 1e-4)
	}
	s.p.reset()
	return nil
}
