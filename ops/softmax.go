package ops

import (
	"github.com/pkg/errors"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
	"math"
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
	// One call per [tq, tk] block, whose row r sees keys 0..tk-tq+r.
	parallelFor(n/tq, func(b int) {
		softmaxRows(y[b*tq*tk:(b+1)*tq*tk], tq, tk, tk-tq)
	})
}

// softmaxBackwardRows: dx = P ∘ (dP - Σ_j dP P), row by row.
func softmaxBackwardRows[T floats](k causalSoftmaxKernel, dx, P, g []T) {
	n, _, tk := k.rows()
	parallelRanges(n, func(_, lo, hi int) {
		softmaxGradRows(dx[lo*tk:hi*tk], P[lo*tk:], g[lo*tk:], hi-lo, tk)
	})
}

// softmaxRows applies causalSoftmax to rows consecutive rows of length n
// of p, row r seeing keys 0..min(last0+r, n−1) (last0 = n−1: every row
// sees all n, the router's softmax): in C under the openblas build for
// float32 (softmaxRows32), row by row in Go otherwise.
func softmaxRows[T floats](p []T, rows, n, last0 int) {
	if p32, ok := any(p).([]float32); ok {
		softmaxRows32(p32, rows, n, last0)
		return
	}
	softmaxRowsGo(p, rows, n, last0)
}

func softmaxRowsGo[T floats](p []T, rows, n, last0 int) {
	for r := 0; r < rows; r++ {
		causalSoftmax(p[r*n:(r+1)*n], min(last0+r, n-1))
	}
}

// softmaxGradRows sets d = P ∘ (g − Σ_j g P) for rows consecutive rows of
// length n: the gradient through a softmax whose output is P. d may be g.
func softmaxGradRows[T floats](d, p, g []T, rows, n int) {
	if d32, ok := any(d).([]float32); ok {
		softmaxGradRows32(d32, any(p).([]float32), any(g).([]float32), rows, n)
		return
	}
	softmaxGradRowsGo(d, p, g, rows, n)
}

func softmaxGradRowsGo[T floats](d, p, g []T, rows, n int) {
	for r := 0; r < rows; r++ {
		pr, gr, dr := p[r*n:(r+1)*n], g[r*n:(r+1)*n], d[r*n:(r+1)*n]
		s := dot(gr, pr)
		for j := range pr {
			dr[j] = T(float64(pr[j]) * (float64(gr[j]) - s))
		}
	}
}

// causalSoftmax replaces row with the softmax of row[:last+1] and zeros after.
func causalSoftmax[T floats](row []T, last int) {
	m := maxOf(row[:last+1])
	var z float64
	if r32, ok := any(row[:last+1]).([]float32); ok {
		expShift32(r32, float32(m))
		for _, e := range r32 {
			z += float64(e)
		}
	} else {
		for j := 0; j <= last; j++ {
			e := math.Exp(float64(row[j] - m)) // float64: float32 went to expShift32
			row[j] = T(e)
			z += e
		}
	}
	inv := T(1 / z)
	for j := 0; j <= last; j++ {
		row[j] *= inv
	}
	for j := last + 1; j < len(row); j++ {
		row[j] = 0
	}
}
