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
	return rmsnorm(x, w, eps, nil)
}

// rmsnorm is RMSNorm whose backward also adds, when res carries one, a
// residual add's upstream gradient into dx (PreNorm).
func rmsnorm(x, w *G.Node, eps float64, res *residualLink) (*G.Node, error) {
	s := x.Shape()
	if s.Dims() < 1 || w.Shape().Dims() != 1 || w.Shape()[0] != s[s.Dims()-1] {
		return nil, errors.Errorf("rmsnorm: w %v must be a vector of x's last axis (x %v)", w.Shape(), s)
	}
	if !(eps > 0) {
		return nil, errors.Errorf("rmsnorm: eps must be > 0, got %v", eps)
	}
	return apply(rmsnormKernel{eps: eps, shape: s.Clone(), saved: &rmsnormSaved{}, res: res}, x, w)
}

type rmsnormKernel struct {
	eps   float64
	shape tensor.Shape
	// saved is shared by the op and its gradient op: each row's 1/rms from
	// the forward, for the backward of a graph that takes the gradient.
	saved *rmsnormSaved
	// res links the op to the residual add that closes its block (PreNorm),
	// nil for a plain RMSNorm.
	res *residualLink
}

// rmsnormSaved is the forward's 1/rms of each row. The backward needs the
// same values; computing them again read every row of x once more, and
// took about a sixth of the backward kernel's time (d_model 64 and 256).
// inv is valid from a forward to the backward that follows it.
type rmsnormSaved struct {
	wanted bool // the graph takes the op's gradient
	valid  bool
	inv    []float64
}

// forRows is the buffer the forward writes the rows' 1/rms into (nil when
// no backward will read it), marked valid for the next backward.
func (s *rmsnormSaved) forRows(rows int) []float64 {
	if s == nil || !s.wanted {
		return nil
	}
	if len(s.inv) != rows {
		s.inv = make([]float64, rows)
	}
	s.valid = true
	return s.inv
}

// take is the forward's 1/rms for the backward, or nil (the backward then
// computes them); it is valid once.
func (s *rmsnormSaved) take(rows int) []float64 {
	if s == nil || !s.valid || len(s.inv) != rows {
		return nil
	}
	s.valid = false
	return s.inv
}

// gradientWanted is called when the graph takes the op's gradient: its
// forward then keeps the rows' 1/rms.
func (k rmsnormKernel) gradientWanted() {
	if k.saved != nil {
		k.saved.wanted = true
	}
}

// releaseSaved drops the kept 1/rms (ReleaseBuffers).
func (k rmsnormKernel) releaseSaved() {
	if k.saved != nil {
		k.saved.inv, k.saved.valid = nil, false
	}
}

func (k rmsnormKernel) name() string { return "rmsnorm" }
func (k rmsnormKernel) attrs() string {
	if k.res != nil {
		return fmt.Sprintf("eps=%g,block=%d", k.eps, k.res.id)
	}
	return fmt.Sprintf("eps=%g", k.eps)
}
func (k rmsnormKernel) inShapes() []tensor.Shape {
	return []tensor.Shape{k.shape, {k.shape[k.shape.Dims()-1]}}
}
func (k rmsnormKernel) outShape() tensor.Shape { return k.shape }
func (k rmsnormKernel) diffWRT() []bool        { return []bool{true, true} }

// The forward writes every y.
func (k rmsnormKernel) writesWholeOutput() bool { return true }

// The backward writes dx row by row and clears dw itself before summing
// its workers' parts into it, so the packed gradients need no clearing
// first (see reusedBuffer).
func (k rmsnormKernel) writesWholeGradients() bool { return true }

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
	return k.backwardAdding(in, out, dOut, nil, dIn)
}

// addend is the residual's upstream gradient for dx (PreNorm), or nil.
func (k rmsnormKernel) addend() *G.Node { return k.res.addend() }

// backwardAdding is backward with dx = res + the norm's dx when res is
// not nil.
func (k rmsnormKernel) backwardAdding(in []any, out, dOut, res any, dIn []any) error {
	return k.backwardSumming(in, out, []any{dOut}, res, dIn)
}

// gradientTerms are the gradients of h that its readers hand the norm of
// a block Grad folds, to be summed here, nil otherwise.
func (k rmsnormKernel) gradientTerms(grad *G.Node) ([]*G.Node, error) {
	return k.res.gradientTerms(grad)
}

// backwardSumming is backwardAdding whose upstream gradient is the sum of
// terms, taken in order ((t0 + t1) + t2 …, as Gorgonia's ReduceAdd adds
// them), by blocks of rows right before the rows are used.
func (k rmsnormKernel) backwardSumming(in []any, out any, terms []any, res any, dIn []any) error {
	switch terms[0].(type) {
	case []float32:
		r, _ := res.([]float32)
		rmsnormBackward(as[float32](dIn), as[float32](terms), r, as[float32](in), k)
	case []float64:
		r, _ := res.([]float64)
		rmsnormBackward(as[float64](dIn), as[float64](terms), r, as[float64](in), k)
	}
	return nil
}

// rmsnormTermRows is the rows of the upstream gradient's terms summed at a
// time (rmsnormBackward): 64 KiB of float32 rows at d_model 256, summed
// into a block that stays in a core's level-2 cache until the norm's
// backward reads it. A multiple of eight, so that the row kernels, which
// take rows eight or four at a time, group the rows as one call over the
// worker's range would.
const rmsnormTermRows = 64

func rmsnormForward[T floats](y []T, in [][]T, k rmsnormKernel) {
	x, w := in[0], in[1]
	d := len(w)
	inv := k.saved.forRows(len(x) / d)
	parallelRanges(len(x)/d, func(_, lo, hi int) {
		var invs []float64
		if inv != nil {
			invs = inv[lo:hi]
		}
		if y32, ok := any(y).([]float32); ok {
			rmsnormForwardRows32(y32[lo*d:hi*d], any(x).([]float32)[lo*d:hi*d], any(w).([]float32), k.eps, invs)
			return
		}
		rmsnormForwardRows(y[lo*d:hi*d], x[lo*d:hi*d], w, k.eps, invs)
	})
}

// rmsnormForwardRows normalises the rows of x (each len(w) long) into y,
// and writes each row's 1/rms to invs when it is not nil. Float32 goes to C
// under the openblas build (rmsnormForwardRows32), with the same
// arithmetic in the same order.
func rmsnormForwardRows[T floats](y, x, w []T, eps float64, invs []float64) {
	d := len(w)
	for r := 0; r+d <= len(x); r += d {
		xr, yr := x[r:r+d], y[r:r+d]
		inv := invRMS(xr, eps)
		if invs != nil {
			invs[r/d] = inv
		}
		for j := range xr {
			yr[j] = T(float64(xr[j])*inv) * w[j]
		}
	}
}

func invRMS[T floats](x []T, eps float64) float64 {
	return 1 / math.Sqrt(dot(x, x)/float64(len(x))+eps)
}

// rmsnormBackward: with r = 1/sqrt(mean(x²)+eps) and g = dy∘w,
// dx = r*g - x * r³ * mean(g∘x), plus res when res is not nil (PreNorm);
// dw = Σ_rows dy∘x*r. dy is the sum of terms in order (one term: dy
// itself), added by blocks of rmsnormTermRows rows. Each worker sums its
// rows' dw in float64; the workers' parts are added in worker order.
func rmsnormBackward[T floats](dIn [][]T, terms [][]T, res []T, in [][]T, k rmsnormKernel) {
	x, w := in[0], in[1]
	d := len(w)
	rows := len(x) / d
	dws := make([][]float64, workerCount(rows))
	inv := k.saved.take(rows)
	parallelRanges(rows, func(wk, lo, hi int) {
		dw := make([]float64, d)
		dws[wk] = dw
		if len(terms) == 1 {
			rmsnormBackwardRange(dIn[0], terms[0][lo*d:hi*d], res, x, w, dw, inv, lo, hi, k.eps)
			return
		}
		sum := scratchUninit[T](min(rmsnormTermRows, hi-lo) * d)
		defer releaseScratch(sum)
		for b0 := lo; b0 < hi; b0 += rmsnormTermRows {
			b1 := min(b0+rmsnormTermRows, hi)
			dy := sum[:(b1-b0)*d]
			addVec(dy, terms[0][b0*d:b1*d], terms[1][b0*d:b1*d])
			for _, t := range terms[2:] {
				addVec(dy, dy, t[b0*d:b1*d])
			}
			rmsnormBackwardRange(dIn[0], dy, res, x, w, dw, inv, b0, b1, k.eps)
		}
	})
	// dw is the workers' parts summed in worker order. Only dw is cleared
	// here: dx, thousands of times longer, is written whole above.
	if dw := dIn[1]; dw != nil {
		clear(dw)
		for _, part := range dws {
			for j, v := range part {
				dw[j] += T(v)
			}
		}
	}
}

// rmsnormBackwardRange is the backward of rows lo to hi: dy holds those
// rows' upstream gradient and nothing else, every other slice is whole
// (dx may be nil, res and inv too), and dw takes the rows' sums.
func rmsnormBackwardRange[T floats](dx, dy, res, x, w []T, dw, inv []float64, lo, hi int, eps float64) {
	d := len(w)
	var invs []float64
	if inv != nil {
		invs = inv[lo:hi]
	}
	var dxr, rs []T
	if dx != nil {
		dxr = dx[lo*d : hi*d]
		if res != nil {
			rs = res[lo*d : hi*d]
		}
	}
	if x32, ok := any(x).([]float32); ok {
		dx32, _ := any(dxr).([]float32)
		rs32, _ := any(rs).([]float32)
		rmsnormBackwardRows32(dx32, rs32, any(dy).([]float32), x32[lo*d:hi*d], any(w).([]float32), dw, eps, invs)
		return
	}
	rmsnormBackwardRows(dxr, rs, dy, x[lo*d:hi*d], w, dw, eps, invs)
}

// rmsnormBackwardRows is the backward over the rows of x (each len(w)
// long): dx (when not nil) is written, plus res when res is not nil (one
// rounded float add after the norm's dx is rounded to T, as a separate sum
// would do it), and dy∘x·r is added to dw. Each row's
// r = 1/rms is taken from invs when it is not nil (the forward's, the same
// values), else computed. Σ g∘w∘x is summed in four interleaved partial
// sums, as dot does. Float32 goes to C under the openblas build
// (rmsnormBackwardRows32), with the same arithmetic in the same order.
func rmsnormBackwardRows[T floats](dx, res, dy, x, w []T, dw []float64, eps float64, invs []float64) {
	d := len(w)
	dw = dw[:d]
	for r := 0; r+d <= len(x); r += d {
		xr, gr := x[r:r+d], dy[r:r+d]
		var inv float64
		if invs != nil {
			inv = invs[r/d]
		} else {
			inv = invRMS(xr, eps)
		}
		var s [4]float64
		j := 0
		for ; j+4 <= d; j += 4 {
			for l := range 4 {
				gj, xj := float64(gr[j+l]), float64(xr[j+l])
				s[l] += gj * float64(w[j+l]) * xj
				dw[j+l] += gj * xj * inv
			}
		}
		for ; j < d; j++ {
			gj, xj := float64(gr[j]), float64(xr[j])
			s[0] += gj * float64(w[j]) * xj
			dw[j] += gj * xj * inv
		}
		c := inv * inv * inv * ((s[0] + s[1]) + (s[2] + s[3])) / float64(d)
		if dx != nil {
			dxr := dx[r : r+d]
			for j := range xr {
				dxr[j] = T(inv*float64(gr[j])*float64(w[j]) - float64(xr[j])*c)
			}
			if res != nil {
				for j, v := range res[r : r+d] {
					dxr[j] = v + dxr[j]
				}
			}
		}
	}
}
