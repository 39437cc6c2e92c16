package ops

import (
	"fmt"

	"github.com/pkg/errors"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// RepeatHeads repeats the g groups of x [b,t,g,n] to h heads, [b,t,h,n], head
// i taking group i/(h/g): SSD's B and C are projected per group and
// "repeated to h heads" (SPEC §3; Mamba2's ngroups), and grouped-query
// attention shares keys the same way. The gradient sums each group's heads.
func RepeatHeads(x *G.Node, h int) (*G.Node, error) {
	s := x.Shape()
	if s.Dims() != 4 {
		return nil, errors.Errorf("repeat heads: x must be [b,t,g,n], got %v", s)
	}
	if h < 1 || h%s[2] != 0 {
		return nil, errors.Errorf("repeat heads: groups %d must divide heads %d", s[2], h)
	}
	return apply(repeatKernel{x: s.Clone(), h: h}, x)
}

type repeatKernel struct {
	x tensor.Shape
	h int
}

func (k repeatKernel) name() string             { return "repeat_heads" }
func (k repeatKernel) attrs() string            { return fmt.Sprintf("h=%d", k.h) }
func (k repeatKernel) inShapes() []tensor.Shape { return []tensor.Shape{k.x} }
func (k repeatKernel) outShape() tensor.Shape   { return tensor.Shape{k.x[0], k.x[1], k.h, k.x[3]} }
func (k repeatKernel) diffWRT() []bool          { return []bool{true} }

func (k repeatKernel) forward(in []any, out any) error {
	switch y := out.(type) {
	case []float32:
		repeatHeads(y, in[0].([]float32), k, false)
	case []float64:
		repeatHeads(y, in[0].([]float64), k, false)
	}
	return nil
}

func (k repeatKernel) backward(in []any, out, dOut any, dIn []any) error {
	switch dy := dOut.(type) {
	case []float32:
		repeatHeads(dy, dIn[0].([]float32), k, true)
	case []float64:
		repeatHeads(dy, dIn[0].([]float64), k, true)
	}
	return nil
}

// repeatHeads copies x into y (forward) or, with back, adds y into x.
func repeatHeads[T floats](y, x []T, k repeatKernel, back bool) {
	g, n := k.x[2], k.x[3]
	per := k.h / g
	rows := k.x[0] * k.x[1]
	for r := 0; r < rows; r++ {
		for i := 0; i < k.h; i++ {
			dst := y[(r*k.h+i)*n : (r*k.h+i+1)*n]
			src := x[(r*g+i/per)*n : (r*g+i/per+1)*n]
			if back {
				for j := range src {
					src[j] += dst[j]
				}
			} else {
				copy(dst, src)
			}
		}
	}
}
