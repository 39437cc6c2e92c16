package ops

import (
	"fmt"
	"math"

	"github.com/pkg/errors"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// DefaultRMSNormEps is the eps of SPEC §2.
const DefaultRMSNormEps = 1e-6

// RMSNorm normalises the last axis of x: y = x / sqrt(mean(x²) + eps) * w,
// w of the last axis' size (RMSNorm, Zhang & Sennrich 2019; used instead of
// LayerNorm in Wonderful Matrices appendix C.2).
func RMSNorm(x, w *G.Node, eps float64) (*G.Node, error) {
	s := x.Shape()
	if s.Dims() < 1 || w.Shape().Dims() != 1 || w.Shape()[0] != s[s.Dims()-1] {
		return nil, errors.Errorf("rmsnorm: w %v must be a vector of x's last axis (x %v)", w.Shape(), s)
	}
	if !(eps > 0) {
		return nil, errors.Errorf("rmsnorm: eps must be > 0, got %v", eps)
	}
	return apply(rmsnormKernel{eps: eps, shape: s.Clone()}, x, w)
}

type rmsnormKernel struct {
	eps   float64
	shape tensor.Shape
}

func (k rmsnormKernel) name() string  { return "rmsnorm" }
func (k rmsnormKernel) attrs() string { return fmt.Sprintf("eps=%g", k.eps) }
func (k rmsnormKernel) inShapes() []tensor.Shape {
	return []tensor.Shape{k.shape, {k.shape[k.shape.Dims()-1]}}
}
func (k rmsnormKernel) outShape() tensor.Shape { return k.shape }
func (k rmsnormKernel) diffWRT() []bool        { return []bool{true, true} }

// The forward writes every y (the backward adds dw over rows, so its
// gradients are not written whole).
func (k rmsnormKernel) writesWholeOutput() bool { return true }

func (k rmsnormKernel) forward(in []any, out any) error {
	switch y := out.(type) {
	case []float32:
		rmsnormForward(y, as[float32](in), k)
	case []float64:
		rmsnormForward(y, as[float64](in), k)
	}
	return nil
}

func (k rmsnormKernel) backward(in []any, out, dOut any, dIn []any) error {
	switch dy := dOut.(type) {
	case []float32:
		rmsnormBackward(as[float32](dIn), dy, as[float32](in), k)
	case []float64:
		rmsnormBackward(as[float64](dIn), dy, as[float64](in), k)
	}
	return nil
}

func rmsnormForward[T floats](y []T, in [][]T, k rmsnormKernel) {
	x, w := in[0], in[1]
	d := len(w)
	rows := len(x) / d
	parallelRanges(rows, func(_, lo, hi int) {
		for r := lo; r < hi; r++ {
			xr, yr := x[r*d:(r+1)*d], y[r*d:(r+1)*d]
			inv := invRMS(xr, k.eps)
			for j := range xr {
				yr[j] = T(float64(xr[j])*inv) * w[j]
			}
		}
	})
}

func invRMS[T floats](x []T, eps float64) float64 {
	return 1 / math.Sqrt(dot(x, x)/float64(len(x))+eps)
}

// rmsnormBackward: with r = 1/sqrt(mean(x²)+eps) and g = dy∘w,
// dx = r*g - x * r³ * mean(g∘x); dw = Σ_rows dy∘x*r.
func rmsnormBackward[T floats](dIn [][]T, dy []T, in [][]T, k rmsnormKernel) {
	x, w := in[0], in[1]
	d := len(w)
	rows := len(x) / d
	dws := make([][]float64, workerCount(rows))
	parallelRanges(rows, func(wk, lo, hi int) {
		dw := make([]float64, d)
		for r := lo; r < hi; r++ {
			xr, gr := x[r*d:(r+1)*d], dy[r*d:(r+1)*d]
			inv := invRMS(xr, k.eps)
			var dot float64
			for j := range xr {
				dot += float64(gr[j]) * float64(w[j]) * float64(xr[j])
				dw[j] += float64(gr[j]) * float64(xr[j]) * inv
			}
			c := inv * inv * inv * dot / float64(d)
			if dx := dIn[0]; dx != nil {
				dxr := dx[r*d : (r+1)*d]
				for j := range xr {
					dxr[j] = T(inv*float64(gr[j])*float64(w[j]) - float64(xr[j])*c)
				}
			}
		}
		dws[wk] = dw
	})
	if dw := dIn[1]; dw != nil {
		for _, part := range dws {
			for j, v := range part {
				dw[j] += T(v)
			}
		}
	}
}
