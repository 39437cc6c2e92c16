package ops

import (
	"fmt"

	"github.com/pkg/errors"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// SSDNarrow takes apart the product of SSD's narrow projections, all =
// x [W_B | W_C | W_dt] [b,t,2·g·n+h] (LinearCat), into what the scan reads,
// in one pass over its rows (Wonderful Matrices listing 4):
//
//	B  = all[..., 0:g·n]       as [b,t,g,n], rotated by RoPE when rope is not nil,
//	C  = all[..., g·n:2·g·n]   as [b,t,g,n], rotated the same (TransXSSM's unified
//	                           RoPE on SSD's B and C),
//	dt = softplus(all[..., 2·g·n:] + dtBias)   [b,t,h].
//
// The result is one flat vector [b·t·(2·g·n+h)] holding B, then C, then dt,
// each laid out as that tensor alone would be; SSD reads it whole as
// SSDInputs.Narrow. It computes what three Columns, two Rope, AddBias and
// Softplus nodes compute, with the same kernels in the same order, so its
// values and gradients are theirs to the bit (TestSSDNarrowMatchesNodes).
// With its row passes in C (ssd_narrow_openblas.go) it took the seven nodes'
// 0.43 ms of a (SM)4 d_model 64 evaluation step to about 0.26 ms.
func SSDNarrow(all, dtBias *G.Node, groups, dState int, rope *RopeConfig) (*G.Node, error) {
	allShape, biasShape := all.Shape(), dtBias.Shape()
	if biasShape.Dims() != 1 || biasShape[0] < 1 {
		return nil, errors.Errorf("ssd narrow: dt_bias (%s) must be [h], got %v", dtBias.Name(), biasShape)
	}
	h := biasShape[0]
	if groups < 1 || dState < 1 {
		return nil, errors.Errorf("ssd narrow: groups %d and d_state %d must be >= 1", groups, dState)
	}
	w := 2*groups*dState + h
	if allShape.Dims() != 3 || allShape[2] != w {
		return nil, errors.Errorf("ssd narrow: all (%s) must be [b,t,2·g·n+h] = [b,t,%d] for g %d, n %d, h %d, got %v",
			all.Name(), w, groups, dState, h, allShape)
	}
	k := ssdNarrowKernel{b: allShape[0], t: allShape[1], g: groups, n: dState, h: h}
	if rope != nil {
		if err := rope.Validate(); err != nil {
			return nil, errors.Wrap(err, "ssd narrow")
		}
		if dState%2 != 0 || (rope.MaxPosition > 0 && dState < 4) {
			return nil, errors.Errorf("ssd narrow: RoPE needs an even d_state (>= 4 with NTK scaling), got %d", dState)
		}
		k.rope, k.cfg = true, *rope
	}
	return apply(k, all, dtBias)
}

// ssdNarrowKernel is SSDNarrow's op: b, t the leading axes, g groups of
// d_state n for B and C, h heads for dt, and the RoPE of B and C when rope
// is set.
type ssdNarrowKernel struct {
	b, t, g, n, h int
	rope          bool
	cfg           RopeConfig
}

// width is all's last axis, 2·g·n + h.
func (k ssdNarrowKernel) width() int { return 2*k.g*k.n + k.h }

// bcShape is the shape of B and of C, [b,t,g,n].
func (k ssdNarrowKernel) bcShape() tensor.Shape { return tensor.Shape{k.b, k.t, k.g, k.n} }

func (k ssdNarrowKernel) name() string { return "ssd_narrow" }
func (k ssdNarrowKernel) attrs() string {
	r := "none"
	if k.rope {
		r = k.cfg.String()
	}
	return fmt.Sprintf("g=%d,n=%d,rope=%s", k.g, k.n, r)
}
func (k ssdNarrowKernel) inShapes() []tensor.Shape {
	return []tensor.Shape{{k.b, k.t, k.width()}, {k.h}}
}
func (k ssdNarrowKernel) outShape() tensor.Shape { return tensor.Shape{k.b * k.t * k.width()} }
func (k ssdNarrowKernel) diffWRT() []bool        { return []bool{true, true} }

// Every element of the result and of both gradients is written.
func (k ssdNarrowKernel) writesWholeOutput() bool    { return true }
func (k ssdNarrowKernel) writesWholeGradients() bool { return true }

func (k ssdNarrowKernel) forward(in []any, out any) error {
	switch y := out.(type) {
	case []float32:
		ssdNarrowForward(y, as[float32](in), k)
	case []float64:
		ssdNarrowForward(y, as[float64](in), k)
	}
	return nil
}

func (k ssdNarrowKernel) backward(in []any, out, dOut any, dIn []any) error {
	switch g := dOut.(type) {
	case []float32:
		ssdNarrowBackward(as[float32](dIn), g, as[float32](in), k)
	case []float64:
		ssdNarrowBackward(as[float64](dIn), g, as[float64](in), k)
	}
	return nil
}

// narrowParts is B, C and dt in a [B | C | dt] vector of k's rows.
func narrowParts[T floats](v []T, k ssdNarrowKernel) (B, C, dt []T) {
	s := k.b * k.t * k.g * k.n
	return v[:s], v[s : 2*s], v[2*s:]
}

// ssdNarrowForward writes B, C and dt of in[0] = all and in[1] = dt_bias
// into post: the rows' parts copied, dt's bias added as AddBias adds it,
// then B and C rotated in place (rotate reads a pair before writing it) and
// softplus taken in place, as Rope and Softplus compute them.
func ssdNarrowForward[T floats](post []T, in [][]T, k ssdNarrowKernel) {
	all, bias := in[0], in[1]
	gn, w := k.g*k.n, k.width()
	B, C, dt := narrowParts(post, k)
	parallelRanges(k.b*k.t, func(_, lo, hi int) {
		narrowSplit(B[lo*gn:hi*gn], C[lo*gn:hi*gn], dt[lo*k.h:hi*k.h], all[lo*w:hi*w], bias, gn)
	})
	if k.rope {
		ropeApply(B, B, k.bcShape(), k.cfg, 1)
		ropeApply(C, C, k.bcShape(), k.cfg, 1)
	}
	applyUnary(softplusFunc, dt, dt, nil, false)
}

// ssdNarrowBackward writes d[0] = dL/d(all) and d[1] = dL/d(dt_bias) from
// g = dL/d(post): B's and C's parts rotated back (RoPE's transpose is its
// inverse) and dt's multiplied by sigmoid(all_dt + dt_bias), the softplus
// derivative at the sum the forward formed, then laid into all's rows; the
// bias gradient is each head's sum over the rows in float64, in row order
// (biasGradient, as AddBias's backward sums it).
func ssdNarrowBackward[T floats](d [][]T, g []T, in [][]T, k ssdNarrowKernel) {
	all, bias := in[0], in[1]
	dAll, dBias := d[0], d[1]
	rows, gn, w := k.b*k.t, k.g*k.n, k.width()
	gB, gC, gdt := narrowParts(g, k)
	work := scratchUninit[T](len(g)) // dt's part written whole below, B's and C's with RoPE
	defer releaseScratch(work)
	tB, tC, tdt := narrowParts(work, k)
	if k.rope {
		ropeApply(tB, gB, k.bcShape(), k.cfg, -1)
		ropeApply(tC, gC, k.bcShape(), k.cfg, -1)
	} else {
		tB, tC = gB, gC // laid into the rows as they are
	}
	parallelRanges(rows, func(_, lo, hi int) { // dt's pre-activation again, all_dt + dt_bias
		narrowSplit(nil, nil, tdt[lo*k.h:hi*k.h], all[lo*w:hi*w], bias, gn)
	})
	applyUnary(softplusFunc, tdt, tdt, gdt, true)
	parallelRanges(rows, func(_, lo, hi int) {
		narrowJoin(dAll[lo*w:hi*w], tB[lo*gn:hi*gn], tC[lo*gn:hi*gn], tdt[lo*k.h:hi*k.h], gn)
	})
	biasGradient(dBias[:k.h], tdt)
}

// narrowSplit takes rows of all [rows, 2·gn+h] apart: B and C get their gn
// columns, dt its h columns plus bias (AddBias's float add). B and C may be
// nil (dt alone). Float32 goes to C under the openblas build, the same
// copies and adds.
func narrowSplit[T floats](B, C, dt, all, bias []T, gn int) {
	if d32, ok := any(dt).([]float32); ok {
		b32, _ := any(B).([]float32)
		c32, _ := any(C).([]float32)
		narrowSplit32(b32, c32, d32, any(all).([]float32), any(bias).([]float32), gn)
		return
	}
	narrowSplitGo(B, C, dt, all, bias, gn)
}

func narrowSplitGo[T floats](B, C, dt, all, bias []T, gn int) {
	h := len(bias)
	w := 2*gn + h
	for r := 0; r*w < len(all); r++ {
		row := all[r*w : (r+1)*w]
		if B != nil {
			copy(B[r*gn:(r+1)*gn], row[:gn])
			copy(C[r*gn:(r+1)*gn], row[gn:2*gn])
		}
		d := dt[r*h : (r+1)*h]
		for j := range d {
			d[j] = row[2*gn+j] + bias[j]
		}
	}
}

// narrowJoin lays B's, C's and dt's rows [rows, gn], [rows, gn], [rows, h]
// side by side into dst [rows, 2·gn+h]: narrowSplit's inverse without the
// bias. Float32 goes to C under the openblas build.
func narrowJoin[T floats](dst, B, C, dt []T, gn int) {
	if d32, ok := any(dst).([]float32); ok {
		narrowJoin32(d32, any(B).([]float32), any(C).([]float32), any(dt).([]float32), gn)
		return
	}
	narrowJoinGo(dst, B, C, dt, gn)
}

func narrowJoinGo[T floats](dst, B, C, dt []T, gn int) {
	rows := len(B) / gn
	h := len(dt) / max(rows, 1)
	w := 2*gn + h
	for r := 0; r < rows; r++ {
		row := dst[r*w : (r+1)*w]
		copy(row[:gn], B[r*gn:(r+1)*gn])
		copy(row[gn:2*gn], C[r*gn:(r+1)*gn])
		copy(row[2*gn:], dt[r*h:(r+1)*h])
	}
}

// narrowKernelOf returns the SSDNarrow kernel that computed n, if one did.
func narrowKernelOf(n *G.Node) (ssdNarrowKernel, bool) {
	op, ok := n.Op().(fusedOp)
	if !ok {
		return ssdNarrowKernel{}, false
	}
	k, ok := op.k.(ssdNarrowKernel)
	return k, ok
}
