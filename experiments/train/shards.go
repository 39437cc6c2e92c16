package train

import (
	"fmt"
	"sync"

	"github.com/pkg/errors"
	"gorgonia.org/tensor"

	"github.com/wonderful-matrices/wonderful-matrices-go/experiments/data"
	"github.com/wonderful-matrices/wonderful-matrices-go/graph"
	"github.com/wonderful-matrices/wonderful-matrices-go/layers"
	"github.com/wonderful-matrices/wonderful-matrices-go/ops"
)

// Data parallelism on one machine. Gorgonia's tape machine runs one node at
// a time, so a small model leaves all but one core idle. With n shards the
// batch's rows are split into n equal, contiguous parts; each part runs on
// a graph of its own (its own goroutine), all bound to the same parameter
// values, which no shard writes. The step then combines, in shard order:
//
//	loss = Σ_k w_k loss_k,   ∇ = Σ_k w_k ∇_k,   w_k = n_k / Σ_j n_j
//
// where n_k counts shard k's labelled targets (those not data.Ignore).
// Since the cross-entropy is a mean over labelled targets, this is the
// full batch's mean and gradient, up to the order of floating-point sums.
// An auxiliary loss (the MoE load-balancing loss of SPEC §3) is computed
// over each shard's tokens and averaged with the same weights, as it is on
// each device of a data-parallel run in the papers' frameworks.
//
// The sums run in a fixed order whatever finishes first, so a seed gives
// the same metrics to the bit for a given number of shards; one shard is
// the unsharded program itself. Different shard counts agree to rounding.

// Layout is how a step uses the cores: Shards graphs at once, each on
// batch/Shards rows (Config.Shards), and, when ShardThreads is above 0 and
// there are several shards, each op's loops on at most that many
// goroutines while they run (Config.ShardThreads, ops.SetLoopThreads; one
// graph runs its loops uncapped).
type Layout struct {
	Shards, ShardThreads int
}

// String names the layout as `wm bench` prints it: "2" for two shards, "2×1"
// for two shards of one thread each.
func (l Layout) String() string {
	if l.ShardThreads > 0 {
		return fmt.Sprintf("%d×%d", l.Shards, l.ShardThreads)
	}
	return fmt.Sprint(l.Shards)
}

// compileShards compiles m's loss for [batch, seqLen] batches as l.Shards
// shards of batch/l.Shards rows each.
func compileShards(m *graph.Model, batch, seqLen int, withGrad bool, l Layout) (*program, error) {
	n := l.Shards
	if n < 1 || batch%n != 0 {
		return nil, errors.Errorf("compile: %d shards must divide the batch of %d rows", n, batch)
	}
	if l.ShardThreads < 0 {
		return nil, errors.Errorf("compile: %d threads a shard; must be >= 0 (0: GOMAXPROCS)", l.ShardThreads)
	}
	p := &program{batch: batch, seqLen: seqLen, shardThreads: l.ShardThreads}
	for k := 0; k < n; k++ {
		s, params, err := compileShard(m, batch/n, seqLen, withGrad)
		if err != nil {
			return nil, errors.Wrapf(err, "shard %d of %d", k, n)
		}
		if k == 0 {
			p.params = params
		} else if err := sameParams(p.params, params); err != nil {
			return nil, errors.Wrapf(err, "shard %d of %d", k, n)
		}
		p.shards = append(p.shards, s)
	}
	if withGrad && n > 1 {
		p.combined = make([]any, len(p.params))
		for i, prm := range p.params {
			if m.Dtype() == tensor.Float32 {
				p.combined[i] = make([]float32, prm.Size())
			} else {
				p.combined[i] = make([]float64, prm.Size())
			}
		}
	}
	return p, nil
}

// sameParams checks that two shards list the same parameters in the same
// order (they are built by the same code, so a difference is a bug).
func sameParams(a, b layers.Params) error {
	if len(a) != len(b) {
		return errors.Errorf("%d parameters with gradients, shard 0 has %d", len(b), len(a))
	}
	for i := range a {
		if a[i] != b[i] {
			return errors.Errorf("parameter %d is %s, shard 0 has %s", i, b[i].Name, a[i].Name)
		}
	}
	return nil
}

// runShards runs every shard at once on its rows and combines the losses
// and gradients by the weights of shardWeights, in shard order.
func (p *program) runShards(ids, targets [][]int) (loss, ce float64, err error) {
	rows := p.batch / len(p.shards)
	errs := make([]error, len(p.shards))
	if p.shardThreads > 0 {
		// Process-wide while the shards run: another program running at
		// the same time in this process would be slowed or sped up by it,
		// never changed in its results.
		restore := ops.SetLoopThreads(p.shardThreads)
		defer ops.SetLoopThreads(restore)
	}
	var wg sync.WaitGroup
	for k, s := range p.shards {
		wg.Add(1)
		go func() {
			defer wg.Done()
			lo, hi := k*rows, (k+1)*rows
			errs[k] = s.run(ids[lo:hi], targets[lo:hi])
		}()
	}
	wg.Wait()
	for k, e := range errs {
		if e != nil {
			return 0, 0, errors.Wrapf(e, "shard %d of %d", k, len(p.shards))
		}
	}
	w := shardWeights(targets, len(p.shards))
	for k, s := range p.shards {
		if w[k] != 0 {
			loss += w[k] * scalar(s.loss)
			ce += w[k] * scalar(s.ce)
		}
	}
	if p.combined != nil {
		p.combineGradients(w)
	}
	return loss, ce, nil
}

// shardWeights are w_k = n_k / Σ n_j for n equal row-wise parts of targets,
// n_k counting the labelled targets of part k; all zero when nothing is
// labelled (the unsharded loss is then 0 too: CrossEntropy divides by at
// least 1).
func shardWeights(targets [][]int, n int) []float64 {
	rows := len(targets) / n
	counts := make([]float64, n)
	var total float64
	for i, row := range targets {
		for _, t := range row {
			if t != data.Ignore {
				counts[i/rows]++
				total++
			}
		}
	}
	if total > 0 {
		for k := range counts {
			counts[k] /= total
		}
	}
	return counts
}

// combineGradients sets p.combined[i] = Σ_k w_k ∇_k[i], summing in shard
// order. The parameters are shared out to GOMAXPROCS goroutines, largest
// first; each parameter's sum is made by one goroutine in shard order, so
// the values do not depend on the split.
func (p *program) combineGradients(w []float64) {
	largestFirst(len(p.combined), func(i int) int { return gradLen(p.combined[i]) }, func(i int) {
		switch d := p.combined[i].(type) {
		case []float32:
			combineInto(d, p, i, w)
		case []float64:
			combineInto(d, p, i, w)
		}
	})
}

// combineInto sets dst, the combined gradient of parameter i, to the sum of
// the shards' gradients of it weighted by w (shards of weight 0 left out).
func combineInto[T float32 | float64](dst []T, p *program, i int, w []float64) {
	srcs, ws := make([][]T, 0, len(p.shards)), make([]T, 0, len(p.shards))
	for k, s := range p.shards {
		if w[k] != 0 {
			srcs = append(srcs, s.grads[i].Value().Data().([]T))
			ws = append(ws, T(w[k]))
		}
	}
	if d32, ok := any(dst).([]float32); ok {
		combineWeighted32(d32, any(srcs).([][]float32), any(ws).([]float32))
		return
	}
	combineWeightedGo(dst, srcs, ws)
}

// combineWeightedGo sets dst = Σ_k ws[k]·srcs[k] in order of k, as
// 0 + ws[0]·srcs[0] (an add to a cleared dst, so -0 becomes +0, without
// the pass that clears it) plus each later term; zeros when there is no
// term (no shard has a labelled target).
func combineWeightedGo[T float32 | float64](dst []T, srcs [][]T, ws []T) {
	if len(srcs) == 0 {
		clear(dst)
		return
	}
	for j, v := range srcs[0][:len(dst)] {
		dst[j] = 0 + ws[0]*v
	}
	for k, src := range srcs[1:] {
		wk := ws[k+1]
		for j, v := range src[:len(dst)] {
			dst[j] += wk * v
		}
	}
}
