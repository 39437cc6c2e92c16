package ops

import (
	"fmt"
	"math"

	"github.com/pkg/errors"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// CausalSoftmax turns scores [b,h,tq,tk] into causal attention probabilities:
// row i (the query at position tk-tq+i) is the softmax over keys
// j <= tk-tq+i, and exactly zero after (SPEC §1: position i sees j <= i).
// CoCA's layer applies it to CocaScores.
func CausalSoftmax(scores *G.Node) (*G.Node, error) {
	s := scores.Shape()
	if s.Dims() != 4 || s[2] > s[3] {
		return nil, errors.Errorf("causal_softmax: scores must be [b,h,tq,tk] with tq <= tk, got %v", s)
	}
	return apply(causalSoftmaxKernel{shape: s.Clone()}, scores)
}

type causalSoftmaxKernel struct{ shape tensor.Shape }

func (k causalSoftmaxKernel) name() string             { return "causal_softmax" }
func (k causalSoftmaxKernel) attrs() string            { return "" }
func (k causalSoftmaxKernel) inShapes() []tensor.Shape { return []tensor.Shape{k.shape} }
func (k causalSoftmaxKernel) outShape() tensor.Shape   { return k.shape }
func (k causalSoftmaxKernel) diffWRT() []bool          { return []bool{true} }

func (k causalSoftmaxKernel) rows() (n, tq, tk int) {
	return k.shape[0] * k.shape[1] * k.shape[2], k.shape[2], k.shape[3]
}

func (k causalSoftmaxKernel) forward(in []any, out any) error {
	switch y := out.(type) {
	case []float32:
		causalSoftmaxRows(k, y, in[0].([]float32))
	case []float64:
		causalSoftmaxRows(k, y, in[0].([]float64))
	}
	return nil
}

func (k causalSoftmaxKernel) backward(in []any, out, dOut any, dIn []any) error {
	switch g := dOut.(type) {
	case []float32:
		softmaxBackwardRows(k, dIn[0].([]float32), out.([]float32), g)
	case []float64:
		softmaxBackwardRows(k, dIn[0].([]float64), out.([]float64), g)
	}
	return nil
}

func causalSoftmaxRows[T floats](k causalSoftmaxKernel, y, x []T) {
	n, tq, tk := k.rows()
	copy(y, x)
	parallelRanges(n, func(_, lo, hi int) {
		for r := lo; r < hi; r++ {
			causalSoftmax(y[r*tk:(r+1)*tk], tk-tq+r%tq)
		}
	})
}

// softmaxBackwardRows: dx = P ∘ (dP - Σ_j dP P), row by row.
func softmaxBackwardRows[T floats](k causalSoftmaxKernel, dx, P, g []T) {
	n, _, tk := k.rows()
	parallelRanges(n, func(_, lo, hi int) {
		for r := lo; r < hi; r++ {
			p, gr, d := P[r*tk:(r+1)*tk], g[r*tk:(r+1)*tk], dx[r*tk:(r+1)*tk]
			var dot float64
			for j := range p {
				dot += float64(gr[j]) * float64(p[j])
			}
			for j := range p {
				d[j] = T(float64(p[j]) * (float64(gr[j]) - dot))
			}
		}
	})
}

// causalSoftmax replaces row with the softmax of row[:last+1] and zeros after.
func causalSoftmax[T floats](row []T, last int) {
	m := math.Inf(-1)
	for _, v := range row[:last+1] {
		m = math.Max(m, float64(v))
	}
	var z float64
	for j := 0; j <= last; j++ {
		e := math.Exp(float64(row[j]) - m)
		row[j] = T(e)
		z += e
	}
	for j := 0; j <= last; j++ {
		row[j] = T(float64(row[j]) / z)
	}
	for j := last + 1; j < len(row); j++ {
		row[j] = 0
	}
}

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
