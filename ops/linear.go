package ops

import (
	"fmt"

	"github.com/pkg/errors"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// Linear is the bias-free projection of every layer (SPEC §1: "no bias terms
// anywhere"): x [..., din] times w [din, dout] gives y [..., dout]. It runs
// as one fused op over the flattened rows, so a [b,t,d] activation needs no
// reshape, and it calls gemm on the BLAS Gorgonia uses. Rows are split across
// workers in the forward pass and dx; dw is split by output columns, each
// element summed over the rows in blocks fixed by dw's shape (gemmDeep), or
// over two fixed halves of the rows when it runs as one product
// (weightGradHalves), whatever the split; results repeat to the bit.
func Linear(x, w *G.Node) (*G.Node, error) {
	xs, ws := x.Shape(), w.Shape()
	if xs.Dims() < 1 || ws.Dims() != 2 || ws[0] != xs[xs.Dims()-1] {
		return nil, errors.Errorf("linear: w %v must be [din, dout] with din = x's last axis (x %v)", ws, xs)
	}
	return apply(linearKernel{x: xs.Clone(), din: ws[0], dout: ws[1]}, x, w)
}

type linearKernel struct {
	x         tensor.Shape
	din, dout int
	// res, when not nil, makes the op close a pre-norm block: a third
	// input, the residual stream, is added to y row block by row block,
	// and y's upstream gradient, the stream's share, goes to the block's
	// norm (Residual.Linear).
	res *residualLink
}

func (k linearKernel) name() string { return "linear" }
func (k linearKernel) attrs() string {
	if k.res != nil {
		return fmt.Sprintf("block=%d", k.res.id)
	}
	return ""
}

// residual is the block the op closes, or nil (see fusedOp.SymDiff).
func (k linearKernel) residual() *residualLink { return k.res }

func (k linearKernel) inShapes() []tensor.Shape {
	if k.res != nil {
		return []tensor.Shape{k.x, {k.din, k.dout}, k.outShape()}
	}
	return []tensor.Shape{k.x, {k.din, k.dout}}
}
func (k linearKernel) outShape() tensor.Shape {
	s := k.x.Clone()
	s[len(s)-1] = k.dout
	return s
}
func (k linearKernel) diffWRT() []bool {
	if k.res != nil {
		return []bool{true, true, false}
	}
	return []bool{true, true}
}
func (k linearKernel) rows() int { return k.x.TotalSize() / k.din }

// gemm with beta 0 writes every element of y, dx and dw (see reusedBuffer).
func (k linearKernel) writesWholeOutput() bool    { return true }
func (k linearKernel) writesWholeGradients() bool { return true }

func (k linearKernel) forward(in []any, out any) error {
	switch y := out.(type) {
	case []float32:
		linearForward(y, as[float32](in), k)
	case []float64:
		linearForward(y, as[float64](in), k)
	}
	return nil
}

func (k linearKernel) backward(in []any, out, dOut any, dIn []any) error {
	switch dy := dOut.(type) {
	case []float32:
		linearBackward(as[float32](dIn), dy, as[float32](in), k)
	case []float64:
		linearBackward(as[float64](dIn), dy, as[float64](in), k)
	}
	return nil
}

// linearForward writes y = x w, plus the residual stream in[2] when the
// op closes a block (k.res): added to each range of rows as soon as its
// product is done, x + y as Add computes it.
func linearForward[T floats](y []T, in [][]T, k linearKernel) {
	var then func(lo, hi int)
	if k.res != nil {
		xres, n := in[2], k.dout
		then = func(lo, hi int) {
			yb := y[lo*n : hi*n]
			addVec(yb, xres[lo*n:hi*n], yb)
		}
	}
	gemmTallThen(false, k.rows(), k.dout, k.din, in[0], k.din, in[1], k.dout, 0, y, k.dout, then)
}

func linearBackward[T floats](d [][]T, dy []T, in [][]T, k linearKernel) {
	x, w := in[0], in[1]
	rows := k.rows()
	// dx = dy wᵀ, by rows.
	gemmTall(true, rows, k.din, k.dout, dy, k.dout, w, k.dout, 0, d[0], k.din)
	// dw = xᵀ dy, by output columns (in blocks of rows where that is faster,
	// or in two halves of the rows: weightGrad).
	weightGrad(d[1], x, k.din, dy, k.dout, rows)
}

// AddBias adds b [n] to every row of x [..., n]: the dt_bias of SSD (listing
// 4, `dt = softplus(dt_proj(x) + dt_bias)`), the one bias the spec allows.
// Gorgonia has no implicit broadcasting (GORGONIA-NOTES), hence this op.
func AddBias(x, b *G.Node) (*G.Node, error) {
	xs, bs := x.Shape(), b.Shape()
	if xs.Dims() < 1 || bs.Dims() != 1 || bs[0] != xs[xs.Dims()-1] {
		return nil, errors.Errorf("add bias: b %v must be a vector of x's last axis (x %v)", bs, xs)
	}
	return apply(biasKernel{x: xs.Clone()}, x, b)
}

type biasKernel struct{ x tensor.Shape }

func (k biasKernel) name() string             { return "add_bias" }
func (k biasKernel) attrs() string            { return "" }
func (k biasKernel) n() int                   { return k.x[len(k.x)-1] }
func (k biasKernel) inShapes() []tensor.Shape { return []tensor.Shape{k.x, {k.n()}} }
func (k biasKernel) outShape() tensor.Shape   { return k.x }
func (k biasKernel) diffWRT() []bool          { return []bool{true, true} }

func (k biasKernel) forward(in []any, out any) error {
	switch y := out.(type) {
	case []float32:
		biasForward(y, as[float32](in), k.n())
	case []float64:
		biasForward(y, as[float64](in), k.n())
	}
	return nil
}

func (k biasKernel) backward(in []any, out, dOut any, dIn []any) error {
	switch dy := dOut.(type) {
	case []float32:
		biasBackward(as[float32](dIn), dy, k.n())
	case []float64:
		biasBackward(as[float64](dIn), dy, k.n())
	}
	return nil
}

func biasForward[T floats](y []T, in [][]T, n int) {
	x, b := in[0], in[1]
	for i := range y {
		y[i] = x[i] + b[i%n]
	}
}

func biasBackward[T floats](d [][]T, dy []T, n int) {
	copy(d[0], dy)
	biasGradient(d[1][:n], dy)
}

// biasGradient sets db[j], the gradient of a bias added to every row of
// dy [rows, len(db)], to column j's sum over the rows, in float64 and in
// row order.
func biasGradient[T floats](db, dy []T) {
	n := len(db)
	for j := range db {
		var s float64
		for i := j; i < len(dy); i += n {
			s += float64(dy[i])
		}
		db[j] = T(s)
	}
}
