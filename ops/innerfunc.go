package ops

import (
	"fmt"

	"github.com/pkg/errors"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// InnerFuncValue is the inner-function value of InnerFuncAttn (Wonderful
// Matrices eq. 3, listing 7): each token retrieves the k inner values whose
// keys best match its query and gates itself with their sum,
//
//	g = x Wq Kv^T,  idx = topk(g, k),  V = x ⊙ Σ_{i∈idx} E[i]
//
// with x [b,t,dm], Wq [dm,dret], Kv [nv,dret], E [nv,dm]. Listing 7's
// Embedding(n_heads, ...) is a slip for Embedding(n_innerV, ...) (SPEC §2).
// As in the paper the top-k index is not differentiable, so Wq and Kv receive
// a zero gradient; x and E receive theirs.
func InnerFuncValue(x, Wq, Kv, E *G.Node, k int) (*G.Node, error) {
	xs, qs, ks, es := x.Shape(), Wq.Shape(), Kv.Shape(), E.Shape()
	if xs.Dims() != 3 || qs.Dims() != 2 || ks.Dims() != 2 || es.Dims() != 2 ||
		qs[0] != xs[2] || ks[1] != qs[1] || es[0] != ks[0] || es[1] != xs[2] {
		return nil, errors.Errorf("inner_func_value: want x [b,t,dm], Wq [dm,dret], Kv [nv,dret], E [nv,dm]; got %v, %v, %v, %v", xs, qs, ks, es)
	}
	if k < 1 || k > ks[0] {
		return nil, errors.Errorf("inner_func_value: k = %d must be in [1, n_innerV = %d]", k, ks[0])
	}
	return apply(innerFuncKernel{b: xs[0], t: xs[1], dm: xs[2], dret: qs[1], nv: ks[0], k: k}, x, Wq, Kv, E)
}

type innerFuncKernel struct{ b, t, dm, dret, nv, k int }

func (k innerFuncKernel) name() string  { return "inner_func_value" }
func (k innerFuncKernel) attrs() string { return fmt.Sprintf("k=%d", k.k) }
func (k innerFuncKernel) inShapes() []tensor.Shape {
	return []tensor.Shape{{k.b, k.t, k.dm}, {k.dm, k.dret}, {k.nv, k.dret}, {k.nv, k.dm}}
}
func (k innerFuncKernel) outShape() tensor.Shape { return tensor.Shape{k.b, k.t, k.dm} }
func (k innerFuncKernel) diffWRT() []bool        { return []bool{true, true, true, true} }

func (k innerFuncKernel) forward(in []any, out any) error {
	switch y := out.(type) {
	case []float32:
		innerFuncRun(k, as[float32](in), y, nil, nil)
	case []float64:
		innerFuncRun(k, as[float64](in), y, nil, nil)
	}
	return nil
}

func (k innerFuncKernel) backward(in []any, out, dOut any, dIn []any) error {
	switch g := dOut.(type) {
	case []float32:
		innerFuncRun(k, as[float32](in), nil, g, as[float32](dIn))
	case []float64:
		innerFuncRun(k, as[float64](in), nil, g, as[float64](dIn))
	}
	return nil
}

// innerFuncRun computes the forward (y != nil) or the backward (g, d != nil):
// dx = g ⊙ Σ E[idx], dE[i] += g ⊙ x for i in idx; dWq, dKv stay zero.
func innerFuncRun[T floats](k innerFuncKernel, in [][]T, y, g []T, d [][]T) {
	x, Wq, Kv, E := in[0], in[1], in[2], in[3]
	N := k.b * k.t
	// 1. retrieval scores g = (x Wq) Kv^T   (N, nv)
	q := scratch[T](N * k.dret)
	defer releaseScratch(q)
	parallelGemm(false, false, N, k.dret, k.dm, 1, x, k.dm, Wq, k.dret, 0, q, k.dret)
	sim := scratch[T](N * k.nv)
	defer releaseScratch(sim)
	parallelGemm(false, true, N, k.nv, k.dret, 1, q, k.dret, Kv, k.dret, 0, sim, k.nv)
	if y != nil {
		parallelRanges(N, func(_, lo, hi int) {
			if !innerFuncRowsFloat32(k, x, sim, E, y, lo, hi) {
				innerFuncRowsGo(k, x, sim, E, y, lo, hi)
			}
		})
		return
	}
	dEparts := make([][]T, workerCount(N))
	parallelRanges(N, func(w, lo, hi int) {
		idx := make([]int, k.k)
		sum := make([]T, k.dm)
		dE := scratch[T](k.nv * k.dm)
		dEparts[w] = dE
		for n := lo; n < hi; n++ {
			innerFuncSum(k, sim[n*k.nv:(n+1)*k.nv], E, idx, sum)
			xr := x[n*k.dm : (n+1)*k.dm]
			gr, dx := g[n*k.dm:(n+1)*k.dm], d[0][n*k.dm:(n+1)*k.dm]
			for j, v := range sum {
				dx[j] = gr[j] * v
			}
			for _, i := range idx {
				for j := range gr {
					dE[i*k.dm+j] += gr[j] * xr[j]
				}
			}
		}
	})
	for _, part := range dEparts {
		for j, v := range part {
			d[3][j] += v
		}
		releaseScratch(part)
	}
}

// innerFuncSum is step 2 for one token of scores sim: the k best inner
// values (topK into idx), their rows of E summed from zero in idx's order
// into sum.
func innerFuncSum[T floats](k innerFuncKernel, sim, E []T, idx []int, sum []T) {
	topK(idx, sim, k.k)
	for j := range sum {
		sum[j] = 0
	}
	for _, i := range idx {
		for j, e := range E[i*k.dm : (i+1)*k.dm] {
			sum[j] += e
		}
	}
}

// innerFuncRowsGo is steps 2–3 of the forward for tokens [lo, hi): V = x ⊙
// Σ E[idx] into y.
func innerFuncRowsGo[T floats](k innerFuncKernel, x, sim, E, y []T, lo, hi int) {
	idx := make([]int, k.k)
	sum := make([]T, k.dm)
	for n := lo; n < hi; n++ {
		innerFuncSum(k, sim[n*k.nv:(n+1)*k.nv], E, idx, sum)
		xr, yr := x[n*k.dm:(n+1)*k.dm], y[n*k.dm:(n+1)*k.dm]
		for j, v := range sum {
			yr[j] = xr[j] * v
		}
	}
}

// innerFuncRowsFloat32 runs innerFuncRowsGo's work in C (innerFuncRowsC)
// for float32 where the build has it, and reports whether it ran.
func innerFuncRowsFloat32[T floats](k innerFuncKernel, x, sim, E, y []T, lo, hi int) bool {
	x32, ok := any(x).([]float32)
	if !ok {
		return false
	}
	return innerFuncRowsC(k, x32, any(sim).([]float32), any(E).([]float32), any(y).([]float32), lo, hi)
}
