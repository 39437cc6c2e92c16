package ops

import (
	"fmt"
	"math"
	"sync"

	"github.com/pkg/errors"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// RopeConfig is the rotary position embedding of listing B.1 of Wonderful
// Matrices (Listing 1), shared by attention (Q, K) and SSD (C, B): the
// unified RoPE of TransXSSM. The zero value is invalid; use DefaultRope.
type RopeConfig struct {
	// Base of the angles, theta_j = Base^(-2j/d); 10000 in the papers.
	Base float64
	// MaxPosition enables dynamic NTK scaling: when the sequence length
	// L = Offset+t exceeds it, the base grows (listing B.1). 0 turns it off.
	MaxPosition int
	// ScalingFactor is the s of dynamic NTK; 1 by default.
	ScalingFactor float64
	// Offset is the position of the first token (decoding from a cache).
	Offset int
}

// DefaultRope is plain RoPE with base 10000 and no NTK scaling.
func DefaultRope() RopeConfig { return RopeConfig{Base: 10000, ScalingFactor: 1} }

// Validate reports a configuration that cannot compute.
func (c RopeConfig) Validate() error {
	switch {
	case !(c.Base > 1):
		return errors.Errorf("rope: Base must be > 1, got %v", c.Base)
	case c.MaxPosition < 0:
		return errors.Errorf("rope: MaxPosition must be >= 0 (0 = no NTK scaling), got %d", c.MaxPosition)
	case c.MaxPosition > 0 && !(c.ScalingFactor > 0):
		return errors.Errorf("rope: ScalingFactor must be > 0, got %v", c.ScalingFactor)
	case c.Offset < 0:
		return errors.Errorf("rope: Offset must be >= 0, got %d", c.Offset)
	}
	return nil
}

func (c RopeConfig) String() string {
	return fmt.Sprintf("base=%g,maxpos=%d,sf=%g,offset=%d", c.Base, c.MaxPosition, c.ScalingFactor, c.Offset)
}

// effectiveBase is the base after dynamic NTK for a sequence of length
// L = max(position)+1 and head dimension d (listing B.1, with the ** the
// listing's text lost): base * ((s*L/max) - (s-1)) ** (d/(d-2)).
func (c RopeConfig) effectiveBase(L, d int) float64 {
	if c.MaxPosition <= 0 || L <= c.MaxPosition {
		return c.Base
	}
	s := c.ScalingFactor
	return c.Base * math.Pow(s*float64(L)/float64(c.MaxPosition)-(s-1), float64(d)/float64(d-2))
}

// tables returns cos and sin of the angle of pair j at position Offset+i,
// each [t][d/2] flattened, for a sequence of t tokens.
func (c RopeConfig) tables(t, d int) (cos, sin []float64) {
	half := d / 2
	base := c.effectiveBase(c.Offset+t, d)
	cos, sin = make([]float64, t*half), make([]float64, t*half)
	for j := 0; j < half; j++ {
		inv := math.Pow(base, -2*float64(j)/float64(d))
		for i := 0; i < t; i++ {
			a := float64(c.Offset+i) * inv
			cos[i*half+j], sin[i*half+j] = math.Cos(a), math.Sin(a)
		}
	}
	return cos, sin
}

// rotate applies (sign=+1) or undoes (sign=-1) the rotation of one vector of
// d elements by the table rows cs, sn (rotate-half convention: dim j pairs with
// j+d/2). dst and x may be the same slice.
func rotate[T floats](dst, x []T, cs, sn []float64, sign float64) {
	half := len(cs)
	for j := 0; j < half; j++ {
		c, s := cs[j], sign*sn[j]
		a, b := float64(x[j]), float64(x[j+half])
		dst[j] = T(a*c - b*s)
		dst[j+half] = T(b*c + a*s)
	}
}

// Rope rotates x [b,t,h,d] by the angles of its positions:
// y = x*cos + rotate_half(x)*sin, rotate_half(x) = [-x[d/2:], x[:d/2]]
// (Wonderful Matrices listing B.1; TransXSSM eq. for unified RoPE). The
// gradient is the inverse rotation.
func Rope(x *G.Node, c RopeConfig) (*G.Node, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	s := x.Shape()
	if s.Dims() != 4 {
		return nil, errors.Errorf("rope: x must be [b,t,h,d], got shape %v", s)
	}
	if d := s[3]; d%2 != 0 || (c.MaxPosition > 0 && d < 4) {
		return nil, errors.Errorf("rope: head dim %d must be even (and >= 4 with NTK scaling)", d)
	}
	return apply(ropeKernel{cfg: c, shape: s.Clone()}, x)
}

type ropeKernel struct {
	cfg   RopeConfig
	shape tensor.Shape
}

func (k ropeKernel) name() string             { return "rope" }
func (k ropeKernel) attrs() string            { return k.cfg.String() }
func (k ropeKernel) inShapes() []tensor.Shape { return []tensor.Shape{k.shape} }
func (k ropeKernel) outShape() tensor.Shape   { return k.shape }
func (k ropeKernel) diffWRT() []bool          { return []bool{true} }

// rotate writes every element of every vector (d is even), forward and back.
func (k ropeKernel) writesWholeOutput() bool    { return true }
func (k ropeKernel) writesWholeGradients() bool { return true }

func (k ropeKernel) forward(in []any, out any) error {
	switch y := out.(type) {
	case []float32:
		ropeApply(y, in[0].([]float32), k.shape, k.cfg, 1)
	case []float64:
		ropeApply(y, in[0].([]float64), k.shape, k.cfg, 1)
	}
	return nil
}

// backward rotates the upstream gradient back: a rotation's transpose is
// its inverse.
func (k ropeKernel) backward(in []any, out, dOut any, dIn []any) error {
	switch dy := dOut.(type) {
	case []float32:
		ropeApply(dIn[0].([]float32), dy, k.shape, k.cfg, -1)
	case []float64:
		ropeApply(dIn[0].([]float64), dy, k.shape, k.cfg, -1)
	}
	return nil
}

// ropeApply rotates every [d] vector of x [b,t,h,d] into dst.
func ropeApply[T floats](dst, x []T, s tensor.Shape, c RopeConfig, sign float64) {
	b, t, h, d := s[0], s[1], s[2], s[3]
	tb := c.cachedTables(t, d)
	parallelRanges(b*t, func(_, lo, hi int) {
		if d32, ok := any(dst).([]float32); ok {
			ropeRows32(d32, any(x).([]float32), tb.cos, tb.sin, lo, hi, t, h, d, sign)
			return
		}
		ropeRowsGo(dst, x, tb.cos, tb.sin, lo, hi, t, h, d, sign)
	})
}

// ropeRowsGo rotates the h vectors of d elements of positions bt in
// [lo, hi) of x [b·t, h, d] into dst, position bt taking the tables' row
// bt mod t. Float32 goes to C under the openblas build (ropeRows32), with
// the same float64 arithmetic in the same order.
func ropeRowsGo[T floats](dst, x []T, cos, sin []float64, lo, hi, t, h, d int, sign float64) {
	half := d / 2
	for bt := lo; bt < hi; bt++ {
		i := bt % t
		cs, sn := cos[i*half:(i+1)*half], sin[i*half:(i+1)*half]
		for hh := 0; hh < h; hh++ {
			o := (bt*h + hh) * d
			rotate(dst[o:o+d], x[o:o+d], cs, sn, sign)
		}
	}
}

// ropeTables are the cos and sin tables of one configuration and length.
type ropeTables struct{ cos, sin []float64 }

type ropeTableKey struct {
	cfg  RopeConfig
	t, d int
}

// ropeTableCache keeps the tables of the configurations training and
// evaluation use (Offset 0), which every step and every layer asks for
// again; decoding's tables, one per offset, are computed and not kept.
var ropeTableCache sync.Map // ropeTableKey → ropeTables

func (c RopeConfig) cachedTables(t, d int) ropeTables {
	if c.Offset != 0 {
		cos, sin := c.tables(t, d)
		return ropeTables{cos, sin}
	}
	k := ropeTableKey{c, t, d}
	if v, ok := ropeTableCache.Load(k); ok {
		return v.(ropeTables)
	}
	cos, sin := c.tables(t, d)
	v, _ := ropeTableCache.LoadOrStore(k, ropeTables{cos, sin})
	return v.(ropeTables)
}
