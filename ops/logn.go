package ops

import (
	"fmt"
	"math"

	"github.com/pkg/errors"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// LogNScale is the factor of TransXSSM appendix A for the query-like vector
// (Q, or C) at position m: max(1, log(m+1)/log(trainLen)). It is 1 for every
// position when trainLen <= 1 (off).
func LogNScale(m, trainLen int) float64 {
	if trainLen <= 1 {
		return 1
	}
	return math.Max(1, math.Log(float64(m+1))/math.Log(float64(trainLen)))
}

// LogN multiplies x [b,t,h,d] at position offset+i by LogNScale(offset+i,
// trainLen) (TransXSSM appendix A, log-n scaling). It is linear, so its
// gradient is the same scaling.
func LogN(x *G.Node, trainLen, offset int) (*G.Node, error) {
	s := x.Shape()
	if s.Dims() != 4 {
		return nil, errors.Errorf("logn: x must be [b,t,h,d], got shape %v", s)
	}
	if trainLen < 0 || offset < 0 {
		return nil, errors.Errorf("logn: trainLen (%d) and offset (%d) must be >= 0", trainLen, offset)
	}
	return apply(lognKernel{trainLen: trainLen, offset: offset, shape: s.Clone()}, x)
}

type lognKernel struct {
	trainLen, offset int
	shape            tensor.Shape
}

func (k lognKernel) name() string             { return "logn" }
func (k lognKernel) attrs() string            { return fmt.Sprintf("train=%d,offset=%d", k.trainLen, k.offset) }
func (k lognKernel) inShapes() []tensor.Shape { return []tensor.Shape{k.shape} }
func (k lognKernel) outShape() tensor.Shape   { return k.shape }
func (k lognKernel) diffWRT() []bool          { return []bool{true} }

func (k lognKernel) forward(in []any, out any) error {
	switch y := out.(type) {
	case []float32:
		lognApply(y, in[0].([]float32), k)
	case []float64:
		lognApply(y, in[0].([]float64), k)
	}
	return nil
}

func (k lognKernel) backward(in []any, out, dOut any, dIn []any) error {
	switch dy := dOut.(type) {
	case []float32:
		lognApply(dIn[0].([]float32), dy, k)
	case []float64:
		lognApply(dIn[0].([]float64), dy, k)
	}
	return nil
}

func lognApply[T floats](dst, x []T, k lognKernel) {
	t, hd := k.shape[1], k.shape[2]*k.shape[3]
	for bt := 0; bt < k.shape[0]*t; bt++ {
		f := T(LogNScale(k.offset+bt%t, k.trainLen))
		for i := bt * hd; i < (bt+1)*hd; i++ {
			dst[i] = x[i] * f
		}
	}
}
