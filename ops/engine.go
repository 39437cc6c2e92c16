package ops

import (
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// Engine is Gorgonia's standard CPU engine with its float32 sums of whole
// tensors run by this package's add kernel (C, eight values at a time,
// under the openblas build). The VMs that run a model's graphs use it
// (G.WithEngine(ops.Engine{}), see NewTapeMachine): Gorgonia's own Add
// nodes, above all the sums it builds for the gradient of a node read by
// several others (the residual stream x, read by a block's norm and its
// residual add), were about 3% of a d_model-64 training step in Gorgonia's
// loop of one value at a time. Each value is the one IEEE float32 add
// Gorgonia's loop does, so results are the same bits; any other case
// (float64, views, broadcasting, an increment) goes to Gorgonia's engine.
type Engine struct{ G.StandardEngine }

// Add is a + b elementwise, as tensor.StdEng.Add, with the float32 case
// of same-length contiguous dense tensors written into the reuse tensor
// or, unsafe, into a, in one pass of addVec.
func (e Engine) Add(a, b tensor.Tensor, opts ...tensor.FuncOpt) (tensor.Tensor, error) {
	if y, ok := addDense32(a, b, opts); ok {
		return y, nil
	}
	return e.StandardEngine.Add(a, b, opts...)
}

// addDense32 is Engine.Add's fast case; ok is false when it does not apply.
func addDense32(a, b tensor.Tensor, opts []tensor.FuncOpt) (tensor.Tensor, bool) {
	av, bv := plainFloat32(a), plainFloat32(b)
	if av == nil || bv == nil || len(av) != len(bv) || !a.Shape().Eq(b.Shape()) {
		return nil, false
	}
	fo := tensor.ParseFuncOpts(opts...)
	if _, incr := fo.IncrReuse(); incr {
		return nil, false
	}
	var dst tensor.Tensor
	switch {
	case fo.Reuse() != nil:
		dst = fo.Reuse()
	case !fo.Safe():
		dst = a
	default:
		return nil, false
	}
	yv := plainFloat32(dst)
	if yv == nil || len(yv) != len(av) {
		return nil, false
	}
	addVec(yv, av, bv)
	return dst, true
}

// plainFloat32 is t's values when t is a float32 *tensor.Dense laid out
// row-major without gaps (so its i-th value is its i-th element), else nil.
func plainFloat32(t tensor.Tensor) []float32 {
	d, ok := t.(*tensor.Dense)
	if !ok || d.Dtype() != tensor.Float32 || d.RequiresIterator() || !d.DataOrder().IsRowMajor() {
		return nil
	}
	v, _ := d.Data().([]float32)
	if len(v) != d.Shape().TotalSize() {
		return nil
	}
	return v
}

// NewTapeMachine is G.NewTapeMachine with Engine as the VM's engine: the
// machine this module's trainers and model runners use.
func NewTapeMachine(g *G.ExprGraph, opts ...G.VMOpt) G.VM {
	return G.NewTapeMachine(g, append([]G.VMOpt{G.WithEngine(Engine{})}, opts...)...)
}
