package ops

import (
	"math"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// unaryFunc is an elementwise function with its derivative, in float64.
type unaryFunc struct {
	name  string
	f, df func(x float64) float64
}

func sigmoid(x float64) float64 { return 1 / (1 + math.Exp(-x)) }

// softplus is log(1+e^x), computed without overflow.
func softplus(x float64) float64 {
	if x > 20 {
		return x + math.Log1p(math.Exp(-x))
	}
	return math.Log1p(math.Exp(x))
}

var (
	siluFunc = unaryFunc{"silu",
		func(x float64) float64 { return x * sigmoid(x) },
		func(x float64) float64 { s := sigmoid(x); return s * (1 + x*(1-s)) }}
	softplusFunc = unaryFunc{"softplus", softplus, sigmoid}
	reluFunc     = unaryFunc{"relu",
		func(x float64) float64 { return math.Max(x, 0) },
		func(x float64) float64 {
			if x > 0 {
				return 1
			}
			return 0
		}}
	geluFunc = unaryFunc{"gelu",
		func(x float64) float64 { return 0.5 * x * (1 + math.Erf(x/math.Sqrt2)) },
		func(x float64) float64 {
			return 0.5*(1+math.Erf(x/math.Sqrt2)) + x*math.Exp(-x*x/2)/math.Sqrt(2*math.Pi)
		}}
)

// activations are the act functions a config may name (CDMoE's `act`,
// Wonderful Matrices listing 8's ACT2FN).
var activations = map[string]unaryFunc{"silu": siluFunc, "relu": reluFunc, "gelu": geluFunc}

// SiLU is x*sigmoid(x), the activation of SwiGLU, CDMoE and Mamba2's gate.
func SiLU(x *G.Node) (*G.Node, error) { return unary(siluFunc, x) }

// Softplus is log(1+e^x), which makes SSD's dt positive (listing 4).
func Softplus(x *G.Node) (*G.Node, error) { return unary(softplusFunc, x) }

// ReLU is max(x, 0), used by CoCA's T projection (CoCA eq. 10).
func ReLU(x *G.Node) (*G.Node, error) { return unary(reluFunc, x) }

func unary(f unaryFunc, x *G.Node) (*G.Node, error) {
	return apply(unaryKernel{f: f, shape: x.Shape().Clone()}, x)
}

type unaryKernel struct {
	f     unaryFunc
	shape tensor.Shape
}

func (k unaryKernel) name() string             { return k.f.name }
func (k unaryKernel) attrs() string            { return "" }
func (k unaryKernel) inShapes() []tensor.Shape { return []tensor.Shape{k.shape} }
func (k unaryKernel) outShape() tensor.Shape   { return k.shape }
func (k unaryKernel) diffWRT() []bool          { return []bool{true} }

func (k unaryKernel) forward(in []any, out any) error {
	switch y := out.(type) {
	case []float32:
		mapUnary(y, in[0].([]float32), nil, k.f.f)
	case []float64:
		mapUnary(y, in[0].([]float64), nil, k.f.f)
	}
	return nil
}

func (k unaryKernel) backward(in []any, out, dOut any, dIn []any) error {
	switch dy := dOut.(type) {
	case []float32:
		mapUnary(dIn[0].([]float32), in[0].([]float32), dy, k.f.df)
	case []float64:
		mapUnary(dIn[0].([]float64), in[0].([]float64), dy, k.f.df)
	}
	return nil
}

// mapUnary sets dst[i] = f(x[i]), times scale[i] when scale is not nil.
func mapUnary[T floats](dst, x, scale []T, f func(float64) float64) {
	parallelRanges(len(x), func(_, lo, hi int) {
		for i := lo; i < hi; i++ {
			v := f(float64(x[i]))
			if scale != nil {
				v *= float64(scale[i])
			}
			dst[i] = T(v)
		}
	})
}
