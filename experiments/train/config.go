package train

import "github.com/pkg/errors"

// Config is a training run's settings (SPEC §5). A zero field means its
// default.
type Config struct {
	// Steps is the number of optimiser steps (required).
	Steps int `json:"steps"`
	// Batch sequences per step (default 8).
	Batch int `json:"batch"`
	// SeqLen tokens per sequence (default 128).
	SeqLen int `json:"seq_len"`
	// LR is the peak learning rate (default 1e-3).
	LR float64 `json:"lr"`
	// WarmupFrac of the steps warm up linearly (default 0.1).
	WarmupFrac float64 `json:"warmup_frac"`
	// MinLRFrac is the final rate over the peak (default 0.1).
	MinLRFrac float64 `json:"min_lr_frac"`
	// WeightDecay of AdamW (default 0.01).
	WeightDecay float64 `json:"weight_decay"`
	// ClipNorm clips the global gradient norm (default 1.0).
	ClipNorm float64 `json:"clip_norm"`
	// Seed draws the weights and orders the batches.
	Seed int64 `json:"seed"`
	// EvalEvery steps the validation perplexity is measured (default: 10
	// times a run), and always after the last step.
	EvalEvery int `json:"eval_every"`
	// EvalBatches of validation data per evaluation (default 4).
	EvalBatches int `json:"eval_batches"`
	// FinalEvalBatches, when > 0, caps the final validation and test
	// evaluations at that many batches of each split (a smoke test's
	// shortcut); 0, the default, evaluates the whole splits.
	FinalEvalBatches int `json:"final_eval_batches,omitempty"`
	// Shards splits each batch row-wise over that many graphs run at once
	// (data parallelism on one machine, see shards.go); 0 or 1 runs the
	// batch as one graph. It must divide Batch. Results agree across shard
	// counts to rounding, and to the bit for one count.
	Shards int `json:"shards,omitempty"`
	// ShardThreads, with Shards above 1, caps the goroutines each op runs
	// its loops on while the shards run (ops.SetLoopThreads), except the
	// loops of large matrix products, which still take every core; 0, the
	// default, leaves every loop on up to GOMAXPROCS goroutines. With as
	// many shards as cores, 1 gives each shard its core alone for its small
	// loops, which is faster for small models (no loop's goroutines to
	// start and wait for); `wm bench` times both. Results are the same bits
	// whatever it is (the loops keep their split), so it is how a run
	// runs, not what it computes: config.json leaves it out, and a run may
	// resume with another value.
	ShardThreads int `json:"-"`
	// CkptEvery steps a checkpoint is written (default: 5 times a run), and
	// always after the last step.
	CkptEvery int `json:"ckpt_every"`
}

// Resolved fills in the defaults.
func (c Config) Resolved() Config {
	def := func(v *int, d int) {
		if *v == 0 {
			*v = d
		}
	}
	deff := func(v *float64, d float64) {
		if *v == 0 {
			*v = d
		}
	}
	def(&c.Batch, 8)
	def(&c.SeqLen, 128)
	deff(&c.LR, 1e-3)
	deff(&c.WarmupFrac, 0.1)
	deff(&c.MinLRFrac, 0.1)
	deff(&c.WeightDecay, 0.01)
	deff(&c.ClipNorm, 1.0)
	def(&c.EvalEvery, max(1, c.Steps/10))
	def(&c.EvalBatches, 4)
	def(&c.CkptEvery, max(1, c.Steps/5))
	return c
}

// Validate checks a resolved config; errors name the field.
func (c Config) Validate() error {
	switch {
	case c.Steps < 1:
		return errors.Errorf("train.steps: must be >= 1, got %d", c.Steps)
	case c.Batch < 1:
		return errors.Errorf("train.batch: must be >= 1, got %d", c.Batch)
	case c.SeqLen < 1:
		return errors.Errorf("train.seq_len: must be >= 1, got %d", c.SeqLen)
	case !(c.LR > 0):
		return errors.Errorf("train.lr: must be > 0, got %v", c.LR)
	case c.WarmupFrac < 0 || c.WarmupFrac >= 1:
		return errors.Errorf("train.warmup_frac: must be in [0, 1), got %v", c.WarmupFrac)
	case c.MinLRFrac < 0 || c.MinLRFrac > 1:
		return errors.Errorf("train.min_lr_frac: must be in [0, 1], got %v", c.MinLRFrac)
	case c.WeightDecay < 0:
		return errors.Errorf("train.weight_decay: must be >= 0, got %v", c.WeightDecay)
	case !(c.ClipNorm > 0):
		return errors.Errorf("train.clip_norm: must be > 0, got %v", c.ClipNorm)
	case c.Shards < 0 || (c.Shards > 1 && c.Batch%c.Shards != 0):
		return errors.Errorf("train.shards: must be >= 0 and divide train.batch (%d), got %d", c.Batch, c.Shards)
	case c.ShardThreads < 0 || (c.ShardThreads > 0 && c.shards() < 2):
		return errors.Errorf("train.shard_threads (--shard-threads): must be >= 0, and 0 unless train.shards is above 1 (it is %d), got %d", c.Shards, c.ShardThreads)
	case c.FinalEvalBatches < 0:
		return errors.Errorf("train.final_eval_batches: must be >= 0, got %d", c.FinalEvalBatches)
	case c.EvalEvery < 1 || c.EvalBatches < 1 || c.CkptEvery < 1:
		return errors.Errorf("train.eval_every, eval_batches, ckpt_every: must be >= 1, got %d, %d, %d", c.EvalEvery, c.EvalBatches, c.CkptEvery)
	}
	return nil
}

// shards is the number of graphs a batch is split over (at least 1).
func (c Config) shards() int { return max(1, c.Shards) }

// layout is how the config's steps use the cores.
func (c Config) layout() Layout { return Layout{Shards: c.shards(), ShardThreads: c.ShardThreads} }
