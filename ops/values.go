package ops

import (
	"github.com/pkg/errors"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// floats are the element types every op computes in.
type floats interface{ ~float32 | ~float64 }

// b2i is 1 for true and 0 for false. Go compiles it to a flag set, without
// a branch, which the routing's masks (topKGates, moeTokens) rely on: their
// choices are unpredictable.
func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// newBuffer returns a zeroed []float32 or []float64 of length n.
func newBuffer(dt tensor.Dtype, n int) any {
	if dt == tensor.Float32 {
		return make([]float32, n)
	}
	return make([]float64, n)
}

// sliceBuffer returns buf[lo:hi] for either element type.
func sliceBuffer(buf any, lo, hi int) any {
	switch b := buf.(type) {
	case []float32:
		return b[lo:hi]
	case []float64:
		return b[lo:hi]
	}
	panic("ops: sliceBuffer of a non-float buffer")
}

// valueOf wraps a buffer as a Gorgonia value: a scalar for an empty shape,
// a dense tensor otherwise.
func valueOf(buf any, s tensor.Shape) G.Value {
	if s.IsScalar() {
		switch b := buf.(type) {
		case []float32:
			return G.NewF32(b[0])
		case []float64:
			return G.NewF64(b[0])
		}
	}
	return tensor.New(tensor.WithShape(s.Clone()...), tensor.WithBacking(buf))
}

// bufferOf returns a value's data as a flat row-major buffer of dtype dt,
// materialising views so that the kernel can index it directly.
func bufferOf(v G.Value, dt tensor.Dtype) (any, error) {
	if v.Dtype() != dt {
		return nil, errors.Errorf("dtype %v, want %v", v.Dtype(), dt)
	}
	switch x := v.(type) {
	case *G.F32:
		return []float32{float32(*x)}, nil
	case *G.F64:
		return []float64{float64(*x)}, nil
	case *tensor.Dense:
		if x.IsView() || !x.DataOrder().IsRowMajor() {
			m := x.Materialize()
			d, ok := m.(*tensor.Dense)
			if !ok {
				return nil, errors.Errorf("cannot materialise %T", m)
			}
			x = d
		}
		return x.Data(), nil
	case tensor.Tensor:
		return x.Data(), nil
	}
	return nil, errors.Errorf("unsupported value %T", v)
}

// buffersOf converts the inputs of a kernel and checks their shapes,
// through the op's cache c (nil allocates afresh): the list it returns is
// c's, rewritten on the op's next call.
func buffersOf(k kernel, vals []G.Value, c *opCalls) ([]any, tensor.Dtype, error) {
	if len(vals) == 0 {
		return nil, tensor.Float64, errors.Errorf("%s: no inputs", k.name())
	}
	dt := vals[0].Dtype()
	if dt != tensor.Float32 && dt != tensor.Float64 {
		return nil, dt, errors.Errorf("%s: dtype %v is not supported (float32 or float64)", k.name(), dt)
	}
	want := c.kernelInShapes(k)
	in := c.inputs(len(vals))
	for i, v := range vals {
		if !v.Shape().Eq(want[i]) && !(v.Shape().IsScalar() && want[i].IsScalar()) {
			return nil, dt, errors.Errorf("%s: input %d has shape %v, want %v", k.name(), i, v.Shape(), want[i])
		}
		b, err := c.bufferOf(i, v, dt)
		if err != nil {
			return nil, dt, errors.Wrapf(err, "%s: input %d", k.name(), i)
		}
		in[i] = b
	}
	return in, dt, nil
}

// as converts a list of buffers known to hold T.
func as[T floats](bufs []any) [][]T {
	r := make([][]T, len(bufs))
	for i, b := range bufs {
		if b != nil {
			r[i] = b.([]T)
		}
	}
	return r
}
