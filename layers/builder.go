package layers

import (
	"fmt"
	"slices"

	"github.com/pkg/errors"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/wonderful-matrices/wonderful-matrices-go/ops"
)

// Builder puts layers into one expression graph: it turns parameters into
// graph nodes (once each), makes constants of the graph's dtype, gathers the
// auxiliary losses of MoE layers, and carries the first error.
type Builder struct {
	G      *G.ExprGraph
	Dtype  tensor.Dtype
	nodes  map[*Param]*G.Node
	order  Params
	aux    []*G.Node
	consts int
}

// NewBuilder returns a builder over a new graph of dtype (Float32 for
// models, Float64 for gradient checks).
func NewBuilder(dtype tensor.Dtype) *Builder {
	return &Builder{G: G.NewGraph(), Dtype: dtype, nodes: map[*Param]*G.Node{}}
}

// buildError is the private panic of Must, recovered by Run.
type buildError struct{ err error }

// Must returns n, or stops the build with err (Run recovers it).
func (b *Builder) Must(n *G.Node, err error) *G.Node {
	if err != nil {
		panic(buildError{err})
	}
	return n
}

// Fail stops the build with an error made from format and args.
func (b *Builder) Fail(format string, args ...any) {
	panic(buildError{errors.Errorf(format, args...)})
}

// Run calls build and returns the error that stopped it, if any, with what
// as context. Panics other than Must's and Fail's pass through.
func (b *Builder) Run(what string, build func()) (err error) {
	defer func() {
		if r := recover(); r != nil {
			be, ok := r.(buildError)
			if !ok {
				panic(r)
			}
			err = errors.Wrap(be.err, what)
		}
	}()
	build()
	return nil
}

// Node returns the graph node of p, bound to p's value (so an optimiser that
// updates the value in place updates the graph's input), creating it on
// first use.
func (b *Builder) Node(p *Param) *G.Node {
	if n, ok := b.nodes[p]; ok {
		return n
	}
	if p.Value == nil {
		b.Fail("parameter %s has no value: call Initialize first", p.Name)
	}
	if p.Value.Dtype() != b.Dtype {
		b.Fail("parameter %s is %v, the graph is %v", p.Name, p.Value.Dtype(), b.Dtype)
	}
	n := G.NewTensor(b.G, b.Dtype, p.Shape.Dims(), G.WithShape(p.Shape.Clone()...), G.WithName(p.Name), G.WithValue(p.Value))
	b.nodes[p] = n
	b.order = append(b.order, p)
	return n
}

// ParamNodes returns the parameters used so far, in first-use order, with
// their nodes.
func (b *Builder) ParamNodes() (Params, []*G.Node) {
	ns := make([]*G.Node, len(b.order))
	for i, p := range b.order {
		ns[i] = b.nodes[p]
	}
	return append(Params(nil), b.order...), ns
}

// Input makes a named input node of the graph's dtype holding a copy of data
// (float64, converted), e.g. token ids stored as floats. Two inputs made
// from one slice do not share their values.
func (b *Builder) Input(name string, data []float64, shape ...int) *G.Node {
	if b.Dtype == tensor.Float64 {
		data = slices.Clone(data)
	}
	v := denseOf(b.Dtype, data, tensor.Shape(shape))
	return G.NewTensor(b.G, b.Dtype, len(shape), G.WithShape(shape...), G.WithName(name), G.WithValue(v))
}

// Value makes an input node holding v (same dtype as the graph).
func (b *Builder) Value(name string, v *tensor.Dense) *G.Node {
	if v.Dtype() != b.Dtype {
		b.Fail("%s is %v, the graph is %v", name, v.Dtype(), b.Dtype)
	}
	return G.NewTensor(b.G, b.Dtype, v.Dims(), G.WithShape(v.Shape().Clone()...), G.WithName(name), G.WithValue(v))
}

// Scalar is a constant of the graph's dtype.
func (b *Builder) Scalar(v float64) *G.Node {
	b.consts++
	var val G.Value = G.NewF64(v)
	if b.Dtype == tensor.Float32 {
		val = G.NewF32(float32(v))
	}
	return G.NewScalar(b.G, b.Dtype, G.WithName(fmt.Sprintf("const%d", b.consts)), G.WithValue(val))
}

// AddAux registers an auxiliary loss (a scalar, already weighted) that the
// model adds to the training loss: the MoE load-balancing loss.
func (b *Builder) AddAux(n *G.Node) { b.aux = append(b.aux, n) }

// Aux returns the auxiliary losses registered so far.
func (b *Builder) Aux() []*G.Node { return b.aux }

// Reshape is G.Reshape under Must.
func (b *Builder) Reshape(x *G.Node, shape ...int) *G.Node {
	return b.Must(G.Reshape(x, tensor.Shape(shape)))
}

// Add is x + y (same shapes) under Must: ops.Add for tensors, Gorgonia's
// Add for scalars (the auxiliary losses).
func (b *Builder) Add(x, y *G.Node) *G.Node {
	if x.Shape().IsScalar() && y.Shape().IsScalar() {
		return b.Must(G.Add(x, y))
	}
	return b.Must(ops.Add(x, y))
}

// Mul is x ⊙ y (same shapes) under Must.
func (b *Builder) Mul(x, y *G.Node) *G.Node { return b.Must(ops.Mul(x, y)) }
