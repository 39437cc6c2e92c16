package ops

import (
	"math"

	"github.com/pkg/errors"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// DogeBias is the input-dependent dynamic mask of the Doge code (the
// authors' later form of Wonderful Matrices §3.2; MaskDoge of Attention):
//
//	bias[..., h] = exp(A[h] * softplus(dt[..., h]))
//
// with dt = dt_proj(v) [b,t,h] and A [h] (initialised to zeros, so the bias
// starts constant and has no effect on the softmax).
func DogeBias(dt, A *G.Node) (*G.Node, error) {
	ds, as := dt.Shape(), A.Shape()
	if ds.Dims() < 1 || as.Dims() != 1 || as[0] != ds[ds.Dims()-1] {
		return nil, errors.Errorf("doge bias: A %v must be a vector of dt's last axis (dt %v)", as, ds)
	}
	return apply(dogeBiasKernel{dt: ds.Clone()}, dt, A)
}

type dogeBiasKernel struct{ dt tensor.Shape }

func (k dogeBiasKernel) name() string             { return "doge_bias" }
func (k dogeBiasKernel) attrs() string            { return "" }
func (k dogeBiasKernel) h() int                   { return k.dt[len(k.dt)-1] }
func (k dogeBiasKernel) inShapes() []tensor.Shape { return []tensor.Shape{k.dt, {k.h()}} }
func (k dogeBiasKernel) outShape() tensor.Shape   { return k.dt }
func (k dogeBiasKernel) diffWRT() []bool          { return []bool{true, true} }

func (k dogeBiasKernel) forward(in []any, out any) error {
	switch y := out.(type) {
	case []float32:
		dogeBiasForward(y, as[float32](in), k.h())
	case []float64:
		dogeBiasForward(y, as[float64](in), k.h())
	}
	return nil
}

func (k dogeBiasKernel) backward(in []any, out, dOut any, dIn []any) error {
	switch dy := dOut.(type) {
	case []float32:
		dogeBiasBackward(as[float32](dIn), dy, as[float32](in), k.h())
	case []float64:
		dogeBiasBackward(as[float64](dIn), dy, as[float64](in), k.h())
	}
	return nil
}

func dogeBiasForward[T floats](y []T, in [][]T, h int) {
	dt, A := in[0], in[1]
	for i := range y {
		y[i] = T(math.Exp(float64(A[i%h]) * softplus(float64(dt[i]))))
	}
}

func dogeBiasBackward[T floats](d [][]T, dy []T, in [][]T, h int) {
	dt, A := in[0], in[1]
	dA := make([]float64, h)
	for i := range dy {
		a, sp := float64(A[i%h]), softplus(float64(dt[i]))
		g := float64(dy[i]) * math.Exp(a*sp)
		d[0][i] = T(g * a * sigmoid(float64(dt[i])))
		dA[i%h] += g * sp
	}
	for j := range dA {
		d[1][j] = T(dA[j])
	}
}
