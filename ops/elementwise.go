package ops

import (
	"math"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// unaryFunc is an elementwise function with its derivative, in float64.
// f32 and df32, where set, compute the same in float32 over a whole range
// (dst[i] = f(x[i]), times scale[i] when scale is not nil) without a call
// per element; float32 graphs use them, float64 graphs never do.
type unaryFunc struct {
	name      string
	f, df     func(x float64) float64
	f32, df32 func(dst, x, scale []float32)
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
	siluFunc = unaryFunc{name: "silu",
		f:   func(x float64) float64 { return x * sigmoid(x) },
		df:  func(x float64) float64 { s := sigmoid(x); return s * (1 + x*(1-s)) },
		f32: silu32, df32: siluGrad32}
	softplusFunc = unaryFunc{name: "softplus", f: softplus, df: sigmoid, f32: softplusVec32, df32: sigmoidVec32}
	reluFunc     = unaryFunc{name: "relu",
		f: func(x float64) float64 { return math.Max(x, 0) },
		df: func(x float64) float64 {
			if x > 0 {
				return 1
			}
			return 0
		}}
	geluFunc = unaryFunc{name: "gelu",
		f: func(x float64) float64 { return 0.5 * x * (1 + math.Erf(x/math.Sqrt2)) },
		df: func(x float64) float64 {
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

// Both passes write every element (see reusedBuffer).
func (k unaryKernel) writesWholeOutput() bool    { return true }
func (k unaryKernel) writesWholeGradients() bool { return true }

func (k unaryKernel) forward(in []any, out any) error {
	switch y := out.(type) {
	case []float32:
		mapUnary32(y, in[0].([]float32), nil, k.f.f, k.f.f32)
	case []float64:
		mapUnary(y, in[0].([]float64), nil, k.f.f)
	}
	return nil
}

func (k unaryKernel) backward(in []any, out, dOut any, dIn []any) error {
	switch dy := dOut.(type) {
	case []float32:
		mapUnary32(dIn[0].([]float32), in[0].([]float32), dy, k.f.df, k.f.df32)
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

// applyUnary sets dst[i] = f(x[i]) (f' when deriv is set), times scale[i]
// when scale is not nil, through the float32 path for float32 data. dst may
// be scale.
func applyUnary[T floats](f unaryFunc, dst, x, scale []T, deriv bool) {
	fn, fn32 := f.f, f.f32
	if deriv {
		fn, fn32 = f.df, f.df32
	}
	if d32, ok := any(dst).([]float32); ok {
		s32, _ := any(scale).([]float32)
		mapUnary32(d32, any(x).([]float32), s32, fn, fn32)
		return
	}
	mapUnary(dst, x, scale, fn)
}

// mapUnary32 is mapUnary on float32 data, through f32 where it is set.
func mapUnary32(dst, x, scale []float32, f func(float64) float64, f32 func(dst, x, scale []float32)) {
	if f32 == nil {
		mapUnary(dst, x, scale, f)
		return
	}
	parallelRanges(len(x), func(_, lo, hi int) {
		var sc []float32
		if scale != nil {
			sc = scale[lo:hi]
		}
		f32(dst[lo:hi], x[lo:hi], sc)
	})
}
