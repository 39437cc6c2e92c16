package ops

import (
	"bytes"
	"fmt"
	"math"
	"unsafe"

	"github.com/pkg/errors"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// TopKGates are the gates of a routed MoE (SPEC §3 "softmax router, top-k";
// DeepSeekMoE eq. 4–5): s = softmax(logits) over the N experts of each token,
// g_i = s_i where i is among the k largest s, 0 elsewhere (not renormalised,
// as DeepSeekMoE). logits [..., N] → gates [..., N]. The gradient flows
// through the kept softmax values; the choice of experts is not
// differentiable.
func TopKGates(logits *G.Node, k int) (*G.Node, error) {
	s, err := routerShape("top-k gates", logits, k)
	if err != nil {
		return nil, err
	}
	return apply(routerKernel{shape: s, k: k, saved: &routerSaved{}}, logits)
}

// LoadBalanceLoss is the expert-level balance loss of DeepSeekMoE (eq. 12–14,
// after Switch Transformer): over T tokens and N experts with k chosen each,
//
//	f_i = N/(k·T) · #{tokens that choose i},  P_i = 1/T · Σ_t s_{t,i},  L = Σ_i f_i·P_i
//
// L is 1 when routing is uniform and grows as it collapses. f is a count and
// gets no gradient; P carries it to the logits. The layer multiplies L by its
// coefficient (0.01 by default) and the model adds it to the training loss.
func LoadBalanceLoss(logits *G.Node, k int) (*G.Node, error) {
	s, err := routerShape("load balance loss", logits, k)
	if err != nil {
		return nil, err
	}
	return apply(routerKernel{shape: s, k: k, loss: true, saved: &routerSaved{}}, logits)
}

// Router is TopKGates(logits, k) and, when withLoss, LoadBalanceLoss(logits,
// k) (else loss is nil), built so that the two share one routing: the
// softmax and top-k choice are computed once per run of the graph, for
// both ops and both their gradients, instead of once per op.
func Router(logits *G.Node, k int, withLoss bool) (gates, loss *G.Node, err error) {
	s, err := routerShape("router", logits, k)
	if err != nil {
		return nil, nil, err
	}
	shared := &routerSaved{}
	if gates, err = apply(routerKernel{shape: s, k: k, saved: shared}, logits); err != nil || !withLoss {
		return gates, nil, err
	}
	loss, err = apply(routerKernel{shape: s.Clone(), k: k, loss: true, saved: shared}, logits)
	return gates, loss, err
}

func routerShape(what string, logits *G.Node, k int) (tensor.Shape, error) {
	s := logits.Shape()
	if s.Dims() < 1 {
		return nil, errors.Errorf("%s: logits must be [..., N], got %v", what, s)
	}
	if n := s[s.Dims()-1]; k < 1 || k > n {
		return nil, errors.Errorf("%s: k = %d must be in [1, N = %d]", what, k, n)
	}
	return s.Clone(), nil
}

type routerKernel struct {
	shape tensor.Shape
	k     int
	loss  bool
	// saved is the routing last computed, shared by the op and its
	// gradient op, and by the gates and the loss of one Router (not an
	// attribute: no hash).
	saved *routerSaved
}

// routerSaved is a routing, every token's softmax over the experts and its
// top-k choice, with the bits of the logits it was computed from. A router
// op reuses it whenever its logits hold those bits (its forward's routing
// in its backward; the gates' routing in the balance loss of the same
// Router): the routing is a function of the logits' bits, so a reuse gives
// what routing again would. A copy and a comparison of the logits cost a
// few microseconds; routing them again, at d_model 64, a few percent of
// a step per router op.
type routerSaved struct {
	logits   []byte    // the bits of the logits routed, float32 or float64
	s        []float64 // [tokens, N]
	chosen   []bool    // [tokens, N]
	counts   []float64 // f of LoadBalanceLoss for this routing, once asked for
	routings int       // how many times route computed a routing (tests)
}

// releaseSaved is called by ReleaseBuffers.
func (k routerKernel) releaseSaved() {
	if k.saved != nil {
		*k.saved = routerSaved{}
	}
}

// route returns every token's softmax and top-k choice: the save's when it
// was computed from the same logits, bit for bit, otherwise computed (in
// parallel over tokens; each token's values do not depend on the split)
// and saved.
func route[T floats](logits []T, k routerKernel) ([]float64, []bool) {
	sv := k.saved
	n, tokens := k.n(), k.tokens()
	bits := floatBits(logits)
	if len(sv.s) == tokens*n && bytes.Equal(sv.logits, bits) {
		return sv.s, sv.chosen
	}
	sv.logits, sv.counts = sv.logits[:0], nil // nothing matches a routing being overwritten
	if cap(sv.s) < tokens*n {
		sv.s, sv.chosen = make([]float64, tokens*n), make([]bool, tokens*n)
	}
	sv.s, sv.chosen = sv.s[:tokens*n], sv.chosen[:tokens*n]
	s, chosen := sv.s, sv.chosen
	parallelRanges(tokens, func(_, lo, hi int) {
		idx := make([]int, n)
		if l32, ok := any(logits).([]float32); ok {
			routeTokens32(s[lo*n:hi*n], chosen[lo*n:hi*n], l32[lo*n:hi*n], idx, n, k.k)
			return
		}
		for t := lo; t < hi; t++ {
			routeToken(s[t*n:(t+1)*n], chosen[t*n:(t+1)*n], logits[t*n:(t+1)*n], idx, k.k)
		}
	})
	sv.logits = append(sv.logits[:0], bits...)
	sv.routings++
	return s, chosen
}

// floatBits is v's memory as bytes (its values' bits, in order), without a
// copy.
func floatBits[T floats](v []T) []byte {
	if len(v) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&v[0])), len(v)*int(unsafe.Sizeof(v[0])))
}

func (k routerKernel) name() string {
	if k.loss {
		return "load_balance_loss"
	}
	return "topk_gates"
}
func (k routerKernel) attrs() string            { return fmt.Sprintf("k=%d", k.k) }
func (k routerKernel) inShapes() []tensor.Shape { return []tensor.Shape{k.shape} }
func (k routerKernel) outShape() tensor.Shape {
	if k.loss {
		return tensor.ScalarShape()
	}
	return k.shape
}
func (k routerKernel) diffWRT() []bool { return []bool{true} }
func (k routerKernel) n() int          { return k.shape[len(k.shape)-1] }
func (k routerKernel) tokens() int     { return k.shape.TotalSize() / k.n() }

func (k routerKernel) forward(in []any, out any) error {
	switch y := out.(type) {
	case []float32:
		routerForward(y, in[0].([]float32), k)
	case []float64:
		routerForward(y, in[0].([]float64), k)
	}
	return nil
}

func (k routerKernel) backward(in []any, out, dOut any, dIn []any) error {
	switch dy := dOut.(type) {
	case []float32:
		routerBackward(dIn[0].([]float32), dy, in[0].([]float32), k)
	case []float64:
		routerBackward(dIn[0].([]float64), dy, in[0].([]float64), k)
	}
	return nil
}

// routeToken writes the softmax of one token's logits into s and marks its
// top-k experts in chosen.
func routeToken[T floats](s []float64, chosen []bool, logits []T, idx []int, k int) {
	// The largest logit, NaN if there is one, as math.Max would give (its
	// ±0 rule does not matter: v − m is then exact either way).
	m := math.Inf(-1)
	for _, v := range logits {
		if fv := float64(v); fv > m || fv != fv {
			m = fv
		}
	}
	var z float64
	for i, v := range logits {
		s[i] = math.Exp(float64(v) - m)
		z += s[i]
	}
	for i := range s {
		s[i] /= z
		chosen[i] = false
	}
	topK(idx, s, k)
	for _, i := range idx[:k] {
		chosen[i] = true
	}
}

// routeTokens32 is routeToken for the float32 logits of consecutive
// tokens: their softmax in float32, as the model's other softmaxes (the
// float32 softmax rows: in C under the openblas build, one call for all the
// tokens), each token's top-k chosen from it. routeToken's float64
// exponentials, one call per token and expert, were a tenth of a (SH)3 AH
// evaluation step at d_model 64; the gates are float32 either way.
func routeTokens32(s []float64, chosen []bool, logits []float32, idx []int, n, k int) {
	p := scratchUninit[float32](len(logits)) // written whole by the copy
	defer releaseScratch(p)
	copy(p, logits)
	softmaxRows(p, len(logits)/n, n, n-1)
	for t := 0; t < len(logits)/n; t++ {
		st, ct := s[t*n:(t+1)*n], chosen[t*n:(t+1)*n]
		for i, v := range p[t*n : (t+1)*n] {
			st[i] = float64(v)
			ct[i] = false
		}
		topK(idx, st, k)
		for _, i := range idx[:k] {
			ct[i] = true
		}
	}
}

// routerCounts returns f_i of LoadBalanceLoss for every expert from the
// tokens' choices, which must be the save's (route's): the loss's forward
// and backward of one routing count them once.
func routerCounts(chosen []bool, k routerKernel) []float64 {
	if k.saved.counts != nil {
		return k.saved.counts
	}
	n, tokens := k.n(), k.tokens()
	f := make([]float64, n)
	for t := 0; t < tokens; t++ {
		for i, c := range chosen[t*n : (t+1)*n] {
			f[i] += float64(b2i(c)) // no branch: the choices are unpredictable
		}
	}
	for i := range f {
		f[i] *= float64(n) / float64(k.k*tokens)
	}
	k.saved.counts = f
	return f
}

func routerForward[T floats](y, logits []T, k routerKernel) {
	n, tokens := k.n(), k.tokens()
	s, chosen := route(logits, k)
	if k.loss {
		// P sums the tokens in order, as before the routing ran in parallel.
		f, P := routerCounts(chosen, k), make([]float64, n)
		if tokens&(tokens-1) == 0 {
			// v/tokens and v·(1/tokens) round the same real number when
			// tokens is a power of two, so the multiply (a division's
			// fraction of the time) gives the same bits.
			inv := 1 / float64(tokens)
			for t := 0; t < tokens; t++ {
				for i, v := range s[t*n : (t+1)*n] {
					P[i] += v * inv
				}
			}
		} else {
			for t := 0; t < tokens; t++ {
				for i, v := range s[t*n : (t+1)*n] {
					P[i] += v / float64(tokens)
				}
			}
		}
		var L float64
		for i := range f {
			L += f[i] * P[i]
		}
		y[0] = T(L)
		return
	}
	topKGates(y, s, chosen)
}

// topKGates sets y[i] = s[i] where chosen[i], else +0. The choices are
// unpredictable (top-k of n), so the float32 path keeps the value's bits
// through a mask instead of branching on each.
func topKGates[T floats](y []T, s []float64, chosen []bool) {
	y, chosen = y[:len(s)], chosen[:len(s)]
	if y32, ok := any(y).([]float32); ok {
		for i, v := range s {
			y32[i] = math.Float32frombits(math.Float32bits(float32(v)) & -uint32(b2i(chosen[i])))
		}
		return
	}
	for i, v := range s {
		y[i] = T(math.Float64frombits(math.Float64bits(float64(T(v))) & -uint64(b2i(chosen[i]))))
	}
}

// routerBackward is the softmax backward dlogit_j = s_j (ds_j - Σ_i s_i ds_i)
// with ds = dgates on the chosen experts (gates) or dL·f/T (loss).
func routerBackward[T floats](dx, dy, logits []T, k routerKernel) {
	n, tokens := k.n(), k.tokens()
	s, chosen := route(logits, k)
	var f []float64
	if k.loss {
		f = routerCounts(chosen, k)
	}
	parallelRanges(tokens, func(_, lo, hi int) {
		ds := make([]float64, n)
		if k.loss {
			for i := range ds {
				ds[i] = float64(dy[0]) * f[i] / float64(tokens)
			}
		}
		for t := lo; t < hi; t++ {
			st, ct := s[t*n:(t+1)*n], chosen[t*n:(t+1)*n]
			if !k.loss {
				// dgates on the chosen experts, +0 elsewhere, masked by
				// the bits rather than a branch on each unpredictable choice
				for i, g := range dy[t*n : (t+1)*n] {
					ds[i] = math.Float64frombits(math.Float64bits(float64(g)) & -uint64(b2i(ct[i])))
				}
			}
			var dot float64
			for i := range st {
				dot += st[i] * ds[i]
			}
			for i := range st {
				dx[t*n+i] = T(st[i] * (ds[i] - dot))
			}
		}
	})
}
