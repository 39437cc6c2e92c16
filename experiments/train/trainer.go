package train

import (
	"fmt"

	"github.com/pkg/errors"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/wonderful-matrices/wonderful-matrices-go/graph"
	"github.com/wonderful-matrices/wonderful-matrices-go/layers"
	"github.com/wonderful-matrices/wonderful-matrices-go/ops"
)

// shard is one compiled graph over a fixed [rows, seqLen] input whose token
// inputs are refilled in place before each run.
type shard struct {
	graph        *G.ExprGraph
	vm           G.VM
	ids, targets *tensor.Dense
	loss, ce     *G.Node
	grads        G.Nodes
}

// program runs the loss of a model on [batch, seqLen] batches: one shard,
// or with data parallelism the batch split row-wise over several shards
// that run at once, each a graph of its own bound to the same parameter
// values (see shards.go for how their losses and gradients combine).
type program struct {
	shards []*shard
	// params are the parameters with gradients, in the graphs' order.
	params layers.Params
	// combined holds the summed gradients when there are several shards.
	combined []any
	// batch and seqLen are the input shape the program was compiled for.
	batch, seqLen int
	// shardThreads caps each op's goroutines while the shards run (0: no
	// cap; Layout.ShardThreads).
	shardThreads int
	// plans is what ops.PlanBuffers did to the shards' buffers on the
	// first run, nil until then.
	plans []ops.BufferPlan
}

// compile builds the loss graph of m for [batch, seqLen] inputs, with the
// gradients of every parameter when withGrad is set, as one shard.
func compile(m *graph.Model, batch, seqLen int, withGrad bool) (*program, error) {
	return compileShards(m, batch, seqLen, withGrad, Layout{Shards: 1})
}

// compileShard builds one shard over [rows, seqLen]; it returns the
// parameters in the order of their gradients.
func compileShard(m *graph.Model, rows, seqLen int, withGrad bool) (*shard, layers.Params, error) {
	b := layers.NewBuilder(m.Dtype())
	s := &shard{}
	zeros := make([]float64, rows*seqLen)
	if err := b.Run("compile", func() {
		idsN, tgtN := b.Input("ids", zeros, rows, seqLen), b.Input("targets", zeros, rows, seqLen)
		s.ids, s.targets = idsN.Value().(*tensor.Dense), tgtN.Value().(*tensor.Dense)
		s.loss, s.ce = m.Loss(b, idsN, tgtN)
	}); err != nil {
		return nil, nil, err
	}
	var params layers.Params
	if withGrad {
		var nodes []*G.Node
		params, nodes = b.ParamNodes()
		grads, err := ops.Grad(s.loss, nodes...)
		if err != nil {
			return nil, nil, errors.Wrap(err, "compile: gradients")
		}
		s.grads = grads
	}
	s.graph, s.vm = b.G, ops.NewTapeMachine(b.G)
	return s, params, nil
}

// fill copies a batch into a dense input in place.
func fill(dst *tensor.Dense, rows [][]int) {
	switch d := dst.Data().(type) {
	case []float32:
		fillRows(d, rows)
	case []float64:
		fillRows(d, rows)
	}
}

func fillRows[T float32 | float64](dst []T, rows [][]int) {
	i := 0
	for _, r := range rows {
		for _, v := range r {
			dst[i] = T(v)
			i++
		}
	}
}

// run computes the shard on its rows of a batch.
func (s *shard) run(ids, targets [][]int) error {
	fill(s.ids, ids)
	fill(s.targets, targets)
	return errors.Wrap(s.vm.RunAll(), "run")
}

// run computes the program on a batch; it returns the total loss and the
// cross-entropy. The caller reads gradients (gradients) and then calls
// reset.
func (p *program) run(ids, targets [][]int) (loss, ce float64, err error) {
	if len(ids) != p.batch || len(targets) != p.batch {
		return 0, 0, errors.Errorf("run: a batch of %d ids and %d targets rows, the program takes %d", len(ids), len(targets), p.batch)
	}
	if p.plans == nil {
		// Before the first run, a dry run (ops.PlanBuffersDry: no kernel
		// computes) records the order of the ops, so that the shards'
		// output buffers are shared from the first real run on. A recorded
		// run that computed would hold every op's own buffer at once, and
		// set the process's peak memory.
		var keep G.Nodes
		graphs := make([]*G.ExprGraph, len(p.shards))
		for k, s := range p.shards {
			keep = append(append(keep, s.loss, s.ce), s.grads...)
			graphs[k] = s.graph
		}
		var runErr error
		p.plans, err = ops.PlanBuffersDry(func() error {
			// One shard at a time: a dry run's ops share buffers.
			rows := p.batch / len(p.shards)
			for k, s := range p.shards {
				if runErr = s.run(ids[k*rows:(k+1)*rows], targets[k*rows:(k+1)*rows]); runErr != nil {
					return errors.Wrapf(runErr, "shard %d of %d", k, len(p.shards))
				}
			}
			return nil
		}, keep, graphs...)
		p.reset() // the dry run's values mean nothing
		switch {
		case runErr != nil:
			return 0, 0, err
		case err == ops.ErrPlanBusy:
			// Another program is recording its plan: run unplanned and
			// plan on a later run.
		case err != nil:
			return 0, 0, err
		}
	}
	return p.runAll(ids, targets)
}

// runAll is run on a batch of the right shape.
func (p *program) runAll(ids, targets [][]int) (loss, ce float64, err error) {
	if len(p.shards) == 1 {
		s := p.shards[0]
		if err := s.run(ids, targets); err != nil {
			return 0, 0, err
		}
		return scalar(s.loss), scalar(s.ce), nil
	}
	return p.runShards(ids, targets)
}

// gradients are the gradient buffers ([]float32 or []float64), in the
// order of params, of the last run.
func (p *program) gradients() []any {
	if len(p.shards) == 1 {
		out := make([]any, len(p.params))
		for i, g := range p.shards[0].grads {
			out[i] = g.Value().Data()
		}
		return out
	}
	return p.combined
}

// reset readies the program for the next run.
func (p *program) reset() {
	for _, s := range p.shards {
		s.vm.Reset()
	}
}

// release drops the kept output buffers of every shard's graph
// (ops.ReleaseBuffers).
func (p *program) release() {
	for _, s := range p.shards {
		ops.ReleaseBuffers(s.graph)
	}
}

func scalar(n *G.Node) float64 {
	switch v := n.Value().Data().(type) {
	case float32:
		return float64(v)
	case float64:
		return v
	}
	panic(fmt.Sprintf("train: scalar of %T", n.Value().Data()))
}
