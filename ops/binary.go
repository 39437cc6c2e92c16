package ops

import (
	"github.com/pkg/errors"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// Add is x + y for two tensors of one shape: the residual connection of
// every block (x ← x + mixer(norm(x)), SPEC §1) and the shared expert of
// MoE. It is Gorgonia's Add as a fused op, so that its output buffer is
// reused between steps and the pass is split across cores.
func Add(x, y *G.Node) (*G.Node, error) {
	if err := sameShape("add", x, y); err != nil {
		return nil, err
	}
	return apply(binaryKernel{op: binaryAdd, shape: x.Shape().Clone()}, x, y)
}

// Mul is x ⊙ y for two tensors of one shape (Gorgonia's HadamardProd as a
// fused op).
func Mul(x, y *G.Node) (*G.Node, error) {
	if err := sameShape("mul", x, y); err != nil {
		return nil, err
	}
	return apply(binaryKernel{op: binaryMul, shape: x.Shape().Clone()}, x, y)
}

// GatedSiLU is x ⊙ SiLU(z) in one pass: the gate of SwiGLU (Shazeer 2020,
// the MLP of SPEC §1, `w2(silu(w1 x) * w3 x)`) and Mamba2's output gate
// (`y * silu(z)`, Wonderful Matrices listing 4). Fusing it saves one
// activation tensor and one pass per gate in each direction.
func GatedSiLU(x, z *G.Node) (*G.Node, error) {
	if err := sameShape("gated silu", x, z); err != nil {
		return nil, err
	}
	return apply(binaryKernel{op: binaryGatedSiLU, shape: x.Shape().Clone()}, x, z)
}

func sameShape(op string, x, y *G.Node) error {
	if !x.Shape().Eq(y.Shape()) || x.Shape().IsScalar() {
		return errors.Errorf("%s: %s %v and %s %v must be tensors of one shape", op, x.Name(), x.Shape(), y.Name(), y.Shape())
	}
	return nil
}

type binaryOp int

const (
	binaryAdd binaryOp = iota
	binaryMul
	binaryGatedSiLU
)

var binaryNames = [...]string{"add", "mul", "gated_silu"}

type binaryKernel struct {
	op    binaryOp
	shape tensor.Shape
}

func (k binaryKernel) name() string               { return binaryNames[k.op] }
func (k binaryKernel) attrs() string              { return "" }
func (k binaryKernel) inShapes() []tensor.Shape   { return []tensor.Shape{k.shape, k.shape} }
func (k binaryKernel) outShape() tensor.Shape     { return k.shape }
func (k binaryKernel) diffWRT() []bool            { return []bool{true, true} }
func (k binaryKernel) writesWholeOutput() bool    { return true }
func (k binaryKernel) writesWholeGradients() bool { return true }

// The gradient of a sum with respect to either input is the upstream
// gradient: the residual stream's gradient is passed on without copies.
func (k binaryKernel) gradientIsUpstream() bool { return k.op == binaryAdd }

func (k binaryKernel) forward(in []any, out any) error {
	switch y := out.(type) {
	case []float32:
		binaryForward(k.op, y, as[float32](in))
	case []float64:
		binaryForward(k.op, y, as[float64](in))
	}
	return nil
}

func (k binaryKernel) backward(in []any, out, dOut any, dIn []any) error {
	switch dy := dOut.(type) {
	case []float32:
		binaryBackward(k.op, as[float32](dIn), dy, as[float32](in))
	case []float64:
		binaryBackward(k.op, as[float64](dIn), dy, as[float64](in))
	}
	return nil
}

func binaryForward[T floats](op binaryOp, y []T, in [][]T) {
	parallelRanges(len(y), func(_, lo, hi int) {
		y := y[lo:hi]
		a, b := in[0][lo:hi][:len(y)], in[1][lo:hi][:len(y)] // lengths the compiler can see: no bounds checks
		switch op {
		case binaryAdd:
			addVec(y, a, b)
		case binaryMul:
			mulVec(y, a, b)
		case binaryGatedSiLU:
			gatedSiLU(y, a, b)
		}
	})
}

func binaryBackward[T floats](op binaryOp, d [][]T, dy []T, in [][]T) {
	parallelRanges(len(dy), func(_, lo, hi int) {
		g := dy[lo:hi]
		a, b := in[0][lo:hi][:len(g)], in[1][lo:hi][:len(g)] // as in binaryForward
		da, db := d[0][lo:hi][:len(g)], d[1][lo:hi][:len(g)]
		switch op {
		case binaryAdd:
			copy(da, g)
			copy(db, g)
		case binaryMul:
			mulGradVec(da, db, g, a, b)
		case binaryGatedSiLU:
			gatedSiLUGrad(da, db, g, a, b)
		}
	})
}

// addVec sets y = a + b over len(y) (float32 in C under the openblas build).
func addVec[T floats](y, a, b []T) {
	if y32, ok := any(y).([]float32); ok {
		add32(y32, any(a).([]float32), any(b).([]float32))
		return
	}
	addVecGo(y, a, b)
}

func addVecGo[T floats](y, a, b []T) {
	a, b = a[:len(y)], b[:len(y)]
	for i := range y {
		y[i] = a[i] + b[i]
	}
}

// mulVec sets y = a ⊙ b over len(y) (float32 in C under the openblas build).
func mulVec[T floats](y, a, b []T) {
	if y32, ok := any(y).([]float32); ok {
		mul32(y32, any(a).([]float32), any(b).([]float32))
		return
	}
	mulVecGo(y, a, b)
}

func mulVecGo[T floats](y, a, b []T) {
	a, b = a[:len(y)], b[:len(y)]
	for i := range y {
		y[i] = a[i] * b[i]
	}
}

// mulGradVec sets da = g ⊙ b and db = g ⊙ a, Mul's gradients, over len(g)
// (float32 in C under the openblas build).
func mulGradVec[T floats](da, db, g, a, b []T) {
	if g32, ok := any(g).([]float32); ok {
		mulGrad32(any(da).([]float32), any(db).([]float32), g32, any(a).([]float32), any(b).([]float32))
		return
	}
	mulGradVecGo(da, db, g, a, b)
}

func mulGradVecGo[T floats](da, db, g, a, b []T) {
	da, db, a, b = da[:len(g)], db[:len(g)], a[:len(g)], b[:len(g)]
	for i := range g {
		da[i] = g[i] * b[i]
		db[i] = g[i] * a[i]
	}
}

// gatedSiLU sets y = x·z·σ(z).
func gatedSiLU[T floats](y, x, z []T) {
	switch yy := any(y).(type) {
	case []float32:
		gatedSiLU32(yy, any(x).([]float32), any(z).([]float32))
	case []float64:
		xx, zz := any(x).([]float64), any(z).([]float64)
		for i := range yy {
			yy[i] = xx[i] * zz[i] * sigmoid(zz[i])
		}
	}
}

// gatedSiLUBoth sets y = x·silu(z) as gatedSiLU does and dx, dz as
// gatedSiLUGrad does, to the same bits, in one pass: a backward that needs
// the gate's value again (SwiGLU's dW2 = Aᵀ dY) takes it from the same
// exponential as the gradient.
func gatedSiLUBoth[T floats](y, dx, dz, g, x, z []T) {
	switch gg := any(g).(type) {
	case []float32:
		gatedSiLUBoth32(any(y).([]float32), any(dx).([]float32), any(dz).([]float32), gg, any(x).([]float32), any(z).([]float32))
	default:
		gatedSiLU(y, x, z)
		gatedSiLUGrad(dx, dz, g, x, z)
	}
}

// gatedSiLUGrad sets dx = g·silu(z) and dz = g·x·σ(z)(1 + z(1−σ(z))).
func gatedSiLUGrad[T floats](dx, dz, g, x, z []T) {
	switch gg := any(g).(type) {
	case []float32:
		gatedSiLUGrad32(any(dx).([]float32), any(dz).([]float32), gg, any(x).([]float32), any(z).([]float32))
	case []float64:
		dxx, dzz, xx, zz := any(dx).([]float64), any(dz).([]float64), any(x).([]float64), any(z).([]float64)
		for i, gi := range gg {
			s := sigmoid(zz[i])
			dxx[i] = gi * zz[i] * s
			dzz[i] = gi * xx[i] * s * (1 + zz[i]*(1-s))
		}
	}
}
