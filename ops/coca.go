package ops

import (
	"fmt"
	"math"

	"github.com/pkg/errors"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// CocaScores are the attention scores of CoCA-slack (Collinear Constrained
// Attention, CoCA eq. 10) in the rotate-half convention: with q [b,tq,h,d]
// and t [b,tk,h,d/2] (the layer's x W_T; the op applies the ReLU),
// T = relu(t) duplicated to [T, T] so that paired dims are equal (the
// collinear constraint),
//
//	s[m,n] = Σ_d rope(q)_m[d] * q_m[d] * rope(T)_n[d] / sqrt(d)
//
// for every pair (m, n): the output is s [b,h,tq,tk], unmasked, as the golden
// case pins it. The layer follows it with CausalSoftmax and WeightedValues,
// as in attention. The product is contracted as
// a_m = rope(q)_m ∘ q_m against rope(T)_n, so memory is O(t²), not O(t² d)
// (CoCA appendix C). RoPE takes the config's dynamic NTK (CoCA Table 1's
// "CoCA + dynamic NTK"); queries are the last tq of the tk positions.
func CocaScores(q, t *G.Node, rope RopeConfig) (*G.Node, error) {
	if err := rope.Validate(); err != nil {
		return nil, err
	}
	qs, ts := q.Shape(), t.Shape()
	if qs.Dims() != 4 || ts.Dims() != 4 || ts[0] != qs[0] || ts[2] != qs[2] || 2*ts[3] != qs[3] || ts[1] < qs[1] {
		return nil, errors.Errorf("coca_scores: want q [b,tq,h,d] and t [b,tk>=tq,h,d/2], got %v and %v", qs, ts)
	}
	if qs[3] < 4 && rope.MaxPosition > 0 {
		return nil, errors.Errorf("coca_scores: head dim %d must be >= 4 with NTK scaling", qs[3])
	}
	return apply(cocaKernel{b: qs[0], tq: qs[1], tk: ts[1], h: qs[2], d: qs[3], rope: rope}, q, t)
}

type cocaKernel struct {
	b, tq, tk, h, d int
	rope            RopeConfig
}

func (k cocaKernel) name() string  { return "coca_scores" }
func (k cocaKernel) attrs() string { return fmt.Sprintf("%v", k.rope) }
func (k cocaKernel) inShapes() []tensor.Shape {
	return []tensor.Shape{{k.b, k.tq, k.h, k.d}, {k.b, k.tk, k.h, k.d / 2}}
}
func (k cocaKernel) outShape() tensor.Shape { return tensor.Shape{k.b, k.h, k.tq, k.tk} }
func (k cocaKernel) diffWRT() []bool        { return []bool{true, true} }

func (k cocaKernel) forward(in []any, out any) error {
	switch y := out.(type) {
	case []float32:
		cocaRun(k, as[float32](in), y, nil, nil)
	case []float64:
		cocaRun(k, as[float64](in), y, nil, nil)
	}
	return nil
}

func (k cocaKernel) backward(in []any, out, dOut any, dIn []any) error {
	switch g := dOut.(type) {
	case []float32:
		cocaRun(k, as[float32](in), nil, g, as[float32](dIn))
	case []float64:
		cocaRun(k, as[float64](in), nil, g, as[float64](dIn))
	}
	return nil
}

// cocaRun computes the scores S (forward: g == nil) or, given dS = g, the
// gradients of q and t.
func cocaRun[T floats](k cocaKernel, in [][]T, S, g []T, d [][]T) {
	cos, sin := k.rope.tables(k.tk, k.d) // rows are key positions; queries are the last tq
	parallelFor(k.b*k.h, func(bh int) {
		o := cocaOperands(k, in[0], in[1], bh/k.h, bh%k.h, cos, sin)
		if g == nil {
			// scores S = a r^T   (tq, tk)
			gemm(false, true, k.tq, k.tk, k.d, 1, o.a, k.d, o.r, k.d, 0, S[bh*k.tq*k.tk:], k.tk)
			return
		}
		o.backward(k, in[0], in[1], g[bh*k.tq*k.tk:(bh+1)*k.tq*k.tk], d, bh/k.h, bh%k.h, cos, sin)
	})
}

// cocaHead are one (batch, head)'s operands of the scores S = a r^T:
// rq = rope(q), a = rope(q) ∘ q / sqrt(d) [tq, d], r = rope([relu(t),
// relu(t)]) [tk, d].
type cocaHead[T floats] struct{ rq, a, r []T }

func cocaOperands[T floats](k cocaKernel, q, tt []T, bi, hh int, cos, sin []float64) cocaHead[T] {
	half, qoff := k.d/2, k.tk-k.tq
	s := 1 / math.Sqrt(float64(k.d))
	o := cocaHead[T]{rq: make([]T, k.tq*k.d), a: make([]T, k.tq*k.d), r: make([]T, k.tk*k.d)}
	for i := 0; i < k.tq; i++ {
		qr := q[((bi*k.tq+i)*k.h+hh)*k.d:][:k.d]
		row := qoff + i
		rotate(o.rq[i*k.d:(i+1)*k.d], qr, cos[row*half:(row+1)*half], sin[row*half:(row+1)*half], 1)
		for j := 0; j < k.d; j++ {
			o.a[i*k.d+j] = o.rq[i*k.d+j] * qr[j] * T(s)
		}
	}
	dup := make([]T, k.d)
	for n := 0; n < k.tk; n++ {
		tr := tt[((bi*k.tk+n)*k.h+hh)*half:][:half]
		for j, v := range tr {
			dup[j] = max(v, 0) // T = relu(t)
			dup[j+half] = dup[j]
		}
		rotate(o.r[n*k.d:(n+1)*k.d], dup, cos[n*half:(n+1)*half], sin[n*half:(n+1)*half], 1)
	}
	return o
}

// backward takes the head's score gradient dS [tq, tk] back to q (d[0])
// and t (d[1]).
func (o cocaHead[T]) backward(k cocaKernel, q, tt, dS []T, d [][]T, bi, hh int, cos, sin []float64) {
	half, qoff := k.d/2, k.tk-k.tq
	s := 1 / math.Sqrt(float64(k.d))
	// da = dS r; dr = dS^T a
	da, dr := make([]T, k.tq*k.d), make([]T, k.tk*k.d)
	gemm(false, false, k.tq, k.d, k.tk, 1, dS, k.tk, o.r, k.d, 0, da, k.d)
	gemm(true, false, k.tk, k.d, k.tq, 1, dS, k.tk, o.a, k.d, 0, dr, k.d)
	// a = s * rope(q) ∘ q: dq = s * (rope^T(da ∘ q) + da ∘ rope(q))
	u := make([]T, k.d)
	for i := 0; i < k.tq; i++ {
		qr := q[((bi*k.tq+i)*k.h+hh)*k.d:][:k.d]
		dq := d[0][((bi*k.tq+i)*k.h+hh)*k.d:][:k.d]
		row := qoff + i
		for j := 0; j < k.d; j++ {
			u[j] = da[i*k.d+j] * qr[j]
		}
		rotate(u, u, cos[row*half:(row+1)*half], sin[row*half:(row+1)*half], -1)
		for j := 0; j < k.d; j++ {
			dq[j] = T(s) * (u[j] + da[i*k.d+j]*o.rq[i*k.d+j])
		}
	}
	// r = rope([relu(t), relu(t)]): dt = fold(rope^T dr) where t > 0
	for n := 0; n < k.tk; n++ {
		rotate(u, dr[n*k.d:(n+1)*k.d], cos[n*half:(n+1)*half], sin[n*half:(n+1)*half], -1)
		tr := tt[((bi*k.tk+n)*k.h+hh)*half:][:half]
		dt := d[1][((bi*k.tk+n)*k.h+hh)*half:][:half]
		for j := 0; j < half; j++ {
			if tr[j] > 0 {
				dt[j] = u[j] + u[j+half]
			}
		}
	}
}
