package train

import (
	"fmt"
	"math"

	"github.com/pkg/errors"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/wonderful-matrices/wonderful-matrices-go/graph"
	"github.com/wonderful-matrices/wonderful-matrices-go/layers"
)

// program is a compiled graph over a fixed batch shape whose token inputs
// are refilled in place before each run.
type program struct {
	graph        *G.ExprGraph
	vm           G.VM
	ids, targets *tensor.Dense
	loss, ce     *G.Node
	params       layers.Params
	grads        G.Nodes
	// batch and seqLen are the input shape the program was compiled for.
	batch, seqLen int
}

// compile builds the loss graph of m for [batch, seqLen] inputs, with the
// gradients of every parameter when withGrad is set.
func compile(m *graph.Model, batch, seqLen int, withGrad bool) (*program, error) {
	b := layers.NewBuilder(m.Dtype())
	p := &program{batch: batch, seqLen: seqLen}
	zeros := make([]float64, batch*seqLen)
	if err := b.Run("compile", func() {
		idsN, tgtN := b.Input("ids", zeros, batch, seqLen), b.Input("targets", zeros, batch, seqLen)
		p.ids, p.targets = idsN.Value().(*tensor.Dense), tgtN.Value().(*tensor.Dense)
		p.loss, p.ce = m.Loss(b, idsN, tgtN)
	}); err != nil {
		return nil, err
	}
	if withGrad {
		var nodes []*G.Node
		p.params, nodes = b.ParamNodes()
		grads, err := G.Grad(p.loss, nodes...)
		if err != nil {
			return nil, errors.Wrap(err, "compile: gradients")
		}
		p.grads = grads
	}
	p.graph, p.vm = b.G, G.NewTapeMachine(b.G)
	return p, nil
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

// run computes the program on a batch; it returns the total loss and the
// cross-entropy. The caller reads gradients and then calls reset.
func (p *program) run(ids, targets [][]int) (loss, ce float64, err error) {
	fill(p.ids, ids)
	fill(p.targets, targets)
	if err := p.vm.RunAll(); err != nil {
		return 0, 0, errors.Wrap(err, "run")
	}
	return scalar(p.loss), scalar(p.ce), nil
}

func (p *program) reset() { p.vm.Reset() }

func scalar(n *G.Node) float64 {
	switch v := n.Value().Data().(type) {
	case float32:
		return float64(v)
	case float64:
		return v
	}
	panic(fmt.Sprintf("train: scalar of %T", n.Value().Data()))
}

// gradNorm is the global L2 norm of the gradients, summed in parameter order
// in float64; first names the first parameter whose gradient is not finite.
func gradNorm(grads []any, params layers.Params) (norm float64, first string) {
	var s float64
	for i, g := range grads {
		var ps float64
		switch d := g.(type) {
		case []float32:
			for _, v := range d {
				ps += float64(v) * float64(v)
			}
		case []float64:
			for _, v := range d {
				ps += v * v
			}
		}
		if first == "" && (math.IsNaN(ps) || math.IsInf(ps, 0)) {
			first = params[i].Name
		}
		s += ps
	}
	return math.Sqrt(s), first
}
