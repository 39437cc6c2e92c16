package ops

import (
	"fmt"

	"github.com/pkg/errors"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// LinearCat is several bias-free projections of one input in one product:
// x [..., din] times [w_1 | w_2 | …] (each w_i [din, dout_i], side by side)
// gives y [..., Σ dout_i], the outputs of Linear(x, w_i) next to each other
// (take them apart with Columns). The layers use it for the narrow
// projections of SSD and Mamba2 (B, C and dt, listing 4 of Wonderful
// Matrices): one product of width 2n+h instead of three of width n, n and
// h, which a BLAS runs badly, and one gradient for x, dx = dy [w_1 | …]ᵀ,
// instead of three whole [..., din] gradients summed. The weights stay
// separate parameters (the same checkpoints); the op copies them side by
// side for each product, din × Σ dout_i values.
func LinearCat(x *G.Node, ws ...*G.Node) (*G.Node, error) {
	xs := x.Shape()
	if xs.Dims() < 1 || len(ws) == 0 {
		return nil, errors.Errorf("linear cat: needs x [..., din] and at least one weight (x %v, %d weights)", xs, len(ws))
	}
	din := xs[xs.Dims()-1]
	k := linearCatKernel{x: xs.Clone(), din: din}
	for i, w := range ws {
		s := w.Shape()
		if s.Dims() != 2 || s[0] != din {
			return nil, errors.Errorf("linear cat: weight %d (%s) %v must be [din, dout] with din = x's last axis (x %v)", i, w.Name(), s, xs)
		}
		k.douts = append(k.douts, s[1])
	}
	return apply(k, append(G.Nodes{x}, ws...)...)
}

type linearCatKernel struct {
	x     tensor.Shape
	din   int
	douts []int
}

func (k linearCatKernel) name() string  { return "linear_cat" }
func (k linearCatKernel) attrs() string { return fmt.Sprint(k.douts) }
func (k linearCatKernel) inShapes() []tensor.Shape {
	s := []tensor.Shape{k.x}
	for _, d := range k.douts {
		s = append(s, tensor.Shape{k.din, d})
	}
	return s
}
func (k linearCatKernel) total() int {
	n := 0
	for _, d := range k.douts {
		n += d
	}
	return n
}
func (k linearCatKernel) outShape() tensor.Shape {
	s := k.x.Clone()
	s[len(s)-1] = k.total()
	return s
}
func (k linearCatKernel) diffWRT() []bool {
	d := make([]bool, 1+len(k.douts))
	for i := range d {
		d[i] = true
	}
	return d
}
func (k linearCatKernel) rows() int { return k.x.TotalSize() / k.din }

// gemm with beta 0 writes every element of y and dx, and the copies out of
// the side-by-side dw every element of each weight's gradient.
func (k linearCatKernel) writesWholeOutput() bool    { return true }
func (k linearCatKernel) writesWholeGradients() bool { return true }

func (k linearCatKernel) forward(in []any, out any) error {
	switch y := out.(type) {
	case []float32:
		linearCatForward(y, as[float32](in), k)
	case []float64:
		linearCatForward(y, as[float64](in), k)
	}
	return nil
}

func (k linearCatKernel) backward(in []any, out, dOut any, dIn []any) error {
	switch dy := dOut.(type) {
	case []float32:
		linearCatBackward(as[float32](dIn), dy, as[float32](in), k)
	case []float64:
		linearCatBackward(as[float64](dIn), dy, as[float64](in), k)
	}
	return nil
}

// linearCatWeights copies the weights ws side by side into w [din, Σ dout]
// (from scratch; the caller releases it).
func linearCatWeights[T floats](ws [][]T, k linearCatKernel) []T {
	n := k.total()
	w := scratchUninit[T](k.din * n)
	off := 0
	for i, d := range k.douts {
		for r := 0; r < k.din; r++ {
			copy(w[r*n+off:r*n+off+d], ws[i][r*d:(r+1)*d])
		}
		off += d
	}
	return w
}

func linearCatForward[T floats](y []T, in [][]T, k linearCatKernel) {
	x, n := in[0], k.total()
	w := linearCatWeights(in[1:], k)
	defer releaseScratch(w)
	gemmTall(false, k.rows(), n, k.din, x, k.din, w, n, 0, y, n)
}

func linearCatBackward[T floats](d [][]T, dy []T, in [][]T, k linearCatKernel) {
	x, n, rows := in[0], k.total(), k.rows()
	w := linearCatWeights(in[1:], k)
	defer releaseScratch(w)
	// dx = dy wᵀ, by rows: one product over all the outputs.
	gemmTall(true, rows, k.din, n, dy, n, w, n, 0, d[0], k.din)
	// dw = xᵀ dy side by side (weightGrad), then copied out.
	dw := scratchUninit[T](k.din * n)
	defer releaseScratch(dw)
	weightGrad(dw, x, k.din, dy, n, rows)
	off := 0
	for i, dout := range k.douts {
		for r := 0; r < k.din; r++ {
			copy(d[1+i][r*dout:(r+1)*dout], dw[r*n+off:r*n+off+dout])
		}
		off += dout
	}
}

// Columns is x [..., n] cut to its columns [lo, hi) along the last axis,
// y [..., hi-lo] (a copy): one projection's part of LinearCat's output. Its
// gradient is dy in those columns and zero elsewhere.
func Columns(x *G.Node, lo, hi int) (*G.Node, error) {
	xs := x.Shape()
	if xs.Dims() < 1 || lo < 0 || hi <= lo || hi > xs[xs.Dims()-1] {
		return nil, errors.Errorf("columns: [%d, %d) is not a non-empty range of x's last axis (x %v)", lo, hi, xs)
	}
	return apply(columnsKernel{x: xs.Clone(), lo: lo, hi: hi}, x)
}

type columnsKernel struct {
	x      tensor.Shape
	lo, hi int
}

func (k columnsKernel) name() string             { return "columns" }
func (k columnsKernel) attrs() string            { return fmt.Sprintf("%d:%d", k.lo, k.hi) }
func (k columnsKernel) inShapes() []tensor.Shape { return []tensor.Shape{k.x} }
func (k columnsKernel) n() int                   { return k.x[len(k.x)-1] }
func (k columnsKernel) outShape() tensor.Shape {
	s := k.x.Clone()
	s[len(s)-1] = k.hi - k.lo
	return s
}
func (k columnsKernel) diffWRT() []bool            { return []bool{true} }
func (k columnsKernel) writesWholeOutput() bool    { return true }
func (k columnsKernel) writesWholeGradients() bool { return true } // zeros outside [lo, hi)

func (k columnsKernel) forward(in []any, out any) error {
	switch y := out.(type) {
	case []float32:
		columnsCopy(y, in[0].([]float32), k, false)
	case []float64:
		columnsCopy(y, in[0].([]float64), k, false)
	}
	return nil
}

func (k columnsKernel) backward(in []any, out, dOut any, dIn []any) error {
	switch dy := dOut.(type) {
	case []float32:
		columnsCopy(dy, dIn[0].([]float32), k, true)
	case []float64:
		columnsCopy(dy, dIn[0].([]float64), k, true)
	}
	return nil
}

// columnsCopy copies x's columns [lo, hi) to y row by row, or y back into
// them when back is set, with zeros in x's other columns.
func columnsCopy[T floats](y, x []T, k columnsKernel, back bool) {
	n, m := k.n(), k.hi-k.lo
	for r := 0; r*n < len(x); r++ {
		if back {
			clear(x[r*n : r*n+k.lo])
			copy(x[r*n+k.lo:r*n+k.hi], y[r*m:(r+1)*m])
			clear(x[r*n+k.hi : (r+1)*n])
		} else {
			copy(y[r*m:(r+1)*m], x[r*n+k.lo:r*n+k.hi])
		}
	}
}
