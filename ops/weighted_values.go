package ops

import (
	"fmt"

	"github.com/pkg/errors"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// WeightedValues applies attention probabilities P [b,h,tq,tk] to values
// v [b,tk,h,dv]: y[b,i,h,:] = Σ_j P[b,h,i,j] v[b,j,h,:], the `M v` of
// attention for layers that form P themselves (CoCA).
func WeightedValues(P, v *G.Node) (*G.Node, error) {
	ps, vs := P.Shape(), v.Shape()
	if ps.Dims() != 4 || vs.Dims() != 4 || vs[0] != ps[0] || vs[2] != ps[1] || vs[1] != ps[3] {
		return nil, errors.Errorf("weighted_values: want P [b,h,tq,tk] and v [b,tk,h,dv], got %v and %v", ps, vs)
	}
	return apply(weightedValuesKernel{b: ps[0], h: ps[1], tq: ps[2], tk: ps[3], dv: vs[3]}, P, v)
}

type weightedValuesKernel struct{ b, h, tq, tk, dv int }

func (k weightedValuesKernel) name() string  { return "weighted_values" }
func (k weightedValuesKernel) attrs() string { return fmt.Sprintf("dv=%d", k.dv) }
func (k weightedValuesKernel) inShapes() []tensor.Shape {
	return []tensor.Shape{{k.b, k.h, k.tq, k.tk}, {k.b, k.tk, k.h, k.dv}}
}
func (k weightedValuesKernel) outShape() tensor.Shape { return tensor.Shape{k.b, k.tq, k.h, k.dv} }
func (k weightedValuesKernel) diffWRT() []bool        { return []bool{true, true} }

func (k weightedValuesKernel) forward(in []any, out any) error {
	switch y := out.(type) {
	case []float32:
		weightedValuesRun(k, as[float32](in), y, nil, nil)
	case []float64:
		weightedValuesRun(k, as[float64](in), y, nil, nil)
	}
	return nil
}

func (k weightedValuesKernel) backward(in []any, out, dOut any, dIn []any) error {
	switch g := dOut.(type) {
	case []float32:
		weightedValuesRun(k, as[float32](in), nil, g, as[float32](dIn))
	case []float64:
		weightedValuesRun(k, as[float64](in), nil, g, as[float64](dIn))
	}
	return nil
}

// weightedValuesRun: y = P v; backward dP = dy v^T, dv = P^T dy.
func weightedValuesRun[T floats](k weightedValuesKernel, in [][]T, y, g []T, d [][]T) {
	P, v := in[0], in[1]
	ld, ldy := k.h*k.dv, k.h*k.dv
	parallelFor(k.b*k.h, func(bh int) {
		bi, hh := bh/k.h, bh%k.h
		po, vo, yo := bh*k.tq*k.tk, bi*k.tk*ld+hh*k.dv, bi*k.tq*ldy+hh*k.dv
		if y != nil {
			gemm(false, false, k.tq, k.dv, k.tk, 1, P[po:], k.tk, v[vo:], ld, 0, y[yo:], ldy)
			return
		}
		gemm(false, true, k.tq, k.tk, k.dv, 1, g[yo:], ldy, v[vo:], ld, 0, d[0][po:], k.tk)
		gemm(true, false, k.tk, k.dv, k.tq, 1, P[po:], k.tk, g[yo:], ldy, 0, d[1][vo:], ld)
	})
}
