package ops

import (
	"fmt"
	"math"

	"github.com/pkg/errors"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// CDMoEInputs are the tensors of cross-domain mixture of experts (Wonderful
// Matrices §3.3, listing 8): x [b,t,dm]; the cross-domain (shared) MLP
// Wup [dm,dff], Wdown [dff,dm]; the product-key query projection
// Wq [dm, heads*dret] and keys [heads, nk, 2, dret/2]; the private experts
// Edown, Eup [nk², dm].
type CDMoEInputs struct {
	X, Wup, Wdown, Wq, Keys, Edown, Eup *G.Node
}

// CDMoEConfig holds the attributes of CDMoE.
type CDMoEConfig struct {
	// Heads is the number of retrieval heads.
	Heads int
	// K is the number of experts each head retrieves (k_per_head).
	K int
	// Act is the activation: "silu" (default), "relu" or "gelu".
	Act string
}

// ExpertKeys returns sqrt(nExperts), the keys per product-key half, or an
// error when nExperts is not a perfect square (SPEC §2: a configuration error).
func ExpertKeys(nExperts int) (int, error) {
	nk := int(math.Round(math.Sqrt(float64(nExperts))))
	if nExperts < 1 || nk*nk != nExperts {
		return 0, errors.Errorf("n_experts = %d is not a perfect square (product-key retrieval needs sqrt(n_experts) keys per half)", nExperts)
	}
	return nk, nil
}

// CDMoE is listing 8 of Wonderful Matrices with its slips fixed (SPEC §2):
//
//	φ = act(x Wup) Wdown                       (not gated: "we do not use a gated MLP as the cross domain")
//	q = φ Wq as [2, heads, dret/2];  sim_p = q_p · keys[:, :, p]
//	top-k of each half, the k² sums s_x[i]+s_y[j] with indices i_x*nk + i_y,
//	top-k of those → scores s and experts e   [b,t,heads,k]
//	w = act((φ · Edown[e]) * s),  y = Σ_{heads,k} w * Eup[e] + φ
//
// The top-k indices are not differentiable; every weight gets its gradient
// through the selected scores, as in the listing.
func CDMoE(in CDMoEInputs, cfg CDMoEConfig) (*G.Node, error) {
	return cdmoe(in, cfg, nil)
}

// cdmoe is CDMoE, closing r's pre-norm block when r is not nil
// (Residual.CDMoE): in.X is then r's h, and r's residual stream is an eighth
// input added to each token's row once its experts are.
func cdmoe(in CDMoEInputs, cfg CDMoEConfig, r *Residual) (*G.Node, error) {
	if cfg.Act == "" {
		cfg.Act = "silu"
	}
	act, ok := activations[cfg.Act]
	if !ok {
		return nil, errors.Errorf("cdmoe: unknown activation %q (valid: silu, relu, gelu)", cfg.Act)
	}
	for name, n := range map[string]*G.Node{"x": in.X, "Wup": in.Wup, "Wdown": in.Wdown, "Wq": in.Wq, "keys": in.Keys, "Edown": in.Edown, "Eup": in.Eup} {
		if n == nil {
			return nil, errors.Errorf("cdmoe: input %s is nil", name)
		}
	}
	xs, ks, es := in.X.Shape(), in.Keys.Shape(), in.Edown.Shape()
	if xs.Dims() != 3 || ks.Dims() != 4 || es.Dims() != 2 || in.Wup.Shape().Dims() != 2 {
		return nil, errors.Errorf("cdmoe: want x [b,t,dm], keys [heads,nk,2,dret/2], Edown [n_experts,dm]; got %v, %v, %v", xs, ks, es)
	}
	k := cdmoeKernel{b: xs[0], t: xs[1], dm: xs[2], dff: in.Wup.Shape()[1], heads: cfg.Heads, nk: ks[1], half: ks[3], topk: cfg.K, act: act,
		saved: &cdmoeSaved{}}
	if cfg.Heads < 1 || ks[0] != cfg.Heads || ks[2] != 2 {
		return nil, errors.Errorf("cdmoe: keys %v must be [heads=%d, nk, 2, dret/2]", ks, cfg.Heads)
	}
	nk, err := ExpertKeys(es[0])
	if err != nil {
		return nil, errors.Wrap(err, "cdmoe")
	}
	if nk != k.nk {
		return nil, errors.Errorf("cdmoe: %d experts need %d keys per half, keys has %d", es[0], nk, k.nk)
	}
	if cfg.K < 1 || cfg.K > k.nk {
		return nil, errors.Errorf("cdmoe: k = %d must be in [1, sqrt(n_experts) = %d]", cfg.K, k.nk)
	}
	nodes := []*G.Node{in.X, in.Wup, in.Wdown, in.Wq, in.Keys, in.Edown, in.Eup}
	names := []string{"x", "Wup", "Wdown", "Wq", "keys", "Edown", "Eup"}
	for i, s := range k.inShapes() {
		if !nodes[i].Shape().Eq(s) {
			return nil, errors.Errorf("cdmoe: %s must be %v, got %v", names[i], s, nodes[i].Shape())
		}
	}
	if r == nil {
		return apply(k, nodes...)
	}
	k.res = r.link
	if err := r.close(k.outShape()); err != nil {
		return nil, err
	}
	return apply(k, append(nodes, r.x)...)
}

type cdmoeKernel struct {
	b, t, dm, dff         int
	heads, nk, half, topk int
	act                   unaryFunc
	// saved is shared by the op and its gradient op: what the forward
	// computed that the backward needs again (not an attribute: no hash).
	saved *cdmoeSaved
	// res, when not nil, makes the op close a pre-norm block: an eighth
	// input, the residual stream, is added to y, and y's upstream gradient
	// goes to the block's norm too (Residual.CDMoE).
	res *residualLink
}

// cdmoeSaved is what a CDMoE forward keeps for its backward in the same
// run: the shared MLP's activations and queries, and every token's chosen
// experts (retrieval is the costliest part of the op after the products),
// for the same x (forwardSave). The activations are kept only when the
// graph takes the op's gradient (wanted, set by SymDiff): an evaluation
// forward hands them back to the pools when it is done.
type cdmoeSaved struct {
	forwardSave
	wanted bool
	act    any // cdmoeAct[float32] or cdmoeAct[float64]
	chosen []expertChoice
}

// gradientWanted is called when the graph takes the op's gradient.
func (k cdmoeKernel) gradientWanted() {
	if k.saved != nil {
		k.saved.wanted = true
	}
}

// release drops the saved activations (back to the pools).
func (sv *cdmoeSaved) release() {
	switch a := sv.act.(type) {
	case cdmoeAct[float32]:
		a.release()
	case cdmoeAct[float64]:
		a.release()
	}
	sv.act = nil
	sv.drop()
}

// releaseSaved is called by ReleaseBuffers.
func (k cdmoeKernel) releaseSaved() {
	if k.saved != nil {
		k.saved.release()
	}
}

func (k cdmoeKernel) name() string { return "cdmoe" }
func (k cdmoeKernel) attrs() string {
	if k.res != nil {
		return fmt.Sprintf("heads=%d,k=%d,act=%s,block=%d", k.heads, k.topk, k.act.name, k.res.id)
	}
	return fmt.Sprintf("heads=%d,k=%d,act=%s", k.heads, k.topk, k.act.name)
}
func (k cdmoeKernel) qdim() int { return 2 * k.heads * k.half }
func (k cdmoeKernel) inShapes() []tensor.Shape {
	ne := k.nk * k.nk
	s := []tensor.Shape{{k.b, k.t, k.dm}, {k.dm, k.dff}, {k.dff, k.dm}, {k.dm, k.qdim()},
		{k.heads, k.nk, 2, k.half}, {ne, k.dm}, {ne, k.dm}}
	if k.res != nil {
		s = append(s, k.outShape())
	}
	return s
}
func (k cdmoeKernel) outShape() tensor.Shape { return tensor.Shape{k.b, k.t, k.dm} }
func (k cdmoeKernel) diffWRT() []bool {
	d := []bool{true, true, true, true, true, true, true}
	if k.res != nil {
		d = append(d, false)
	}
	return d
}

// residual is the block the op closes, or nil (see fusedOp.SymDiff).
func (k cdmoeKernel) residual() *residualLink { return k.res }

// The forward writes every token's row (φ, then its experts added); the
// backward writes dx and the shared MLP's and queries' gradients by
// products with beta 0, and the experts' and keys' as the workers' sums
// (setFrom, then addInto).
func (k cdmoeKernel) writesWholeOutput() bool    { return true }
func (k cdmoeKernel) writesWholeGradients() bool { return true }

func (k cdmoeKernel) forward(in []any, out any) error {
	switch y := out.(type) {
	case []float32:
		cdmoeRun(k, as[float32](in), y, nil, nil)
	case []float64:
		cdmoeRun(k, as[float64](in), y, nil, nil)
	}
	return nil
}

func (k cdmoeKernel) backward(in []any, out, dOut any, dIn []any) error {
	switch g := dOut.(type) {
	case []float32:
		cdmoeRun(k, as[float32](in), nil, g, as[float32](dIn))
	case []float64:
		cdmoeRun(k, as[float64](in), nil, g, as[float64](dIn))
	}
	return nil
}

// expertChoice is one retrieved expert of one head of one token.
type expertChoice struct {
	e      int     // expert index i_x*nk + i_y
	ix, iy int     // the keys of each half
	s      float64 // s_x[i] + s_y[j]
}

// keySims computes, for every token, head and half, the similarity of the
// query half to every key of that head and half (listing 8's
// `sim = einsum(q, keys)`), as one gemm per (head, half) over all tokens:
// sims[n][hh][p][kk] = q[n][p][hh] · keys[hh][kk][p].
func keySims[T floats](k cdmoeKernel, q, keys []T, N int) []T {
	sims := scratchUninit[T](N * k.heads * 2 * k.nk) // every (head, half)'s columns written by its product
	ld := k.heads * 2 * k.nk
	for hh := 0; hh < k.heads; hh++ {
		for p := 0; p < 2; p++ {
			gemmTall(true, N, k.nk, k.half, q[(p*k.heads+hh)*k.half:], k.qdim(),
				keys[(hh*k.nk*2+p)*k.half:], 2*k.half, 0, sims[(hh*2+p)*k.nk:], ld)
		}
	}
	return sims
}

// retrieve does the product-key search of one head of one token from its
// key similarities sim (both halves, as keySims lays them out): the top-k of
// each half, the k² sums and their top-k (listing 8), into out; b holds the
// worker's buffers.
//
// Only the sums that can be among the top k are formed: with both halves'
// top-k sorted (largest first, ties by lower index), the sum of the i-th and
// j-th (0-based) is at most each sum (i', j') with i' ≤ i and j' ≤ j (float
// rounding is monotonic), and those come before it in index order, so it
// has (i+1)(j+1) - 1 sums ahead of it in top-k's order (value, then lower
// index i·k + j) and can be picked only when (i+1)(j+1) ≤ k: 20 of the 64
// sums at k = 8. The pick is the same as over all k², to the bit; a NaN or
// infinity among the halves' top values voids the argument, and then all k²
// sums are formed as the listing does.
func retrieve[T floats](k cdmoeKernel, sim []T, b *retrieveBufs[T], out []expertChoice) {
	half := [2][]T{sim[:k.nk], sim[k.nk : 2*k.nk]}
	K := k.topk
	finite := true
	for p := 0; p < 2; p++ {
		topK(b.idx[p], half[p], K)
		for _, i := range b.idx[p] {
			if v := float64(half[p][i]); math.IsNaN(v) || math.IsInf(v, 0) {
				finite = false
			}
		}
	}
	n := 0
	for i := 0; i < K; i++ {
		a, cols := half[0][b.idx[0][i]], K
		if finite {
			cols = K / (i + 1) // (i+1)(j+1) <= K
		}
		for j := 0; j < cols; j++ {
			b.sums[n], b.cand[n] = a+half[1][b.idx[1][j]], i*K+j
			n++
		}
	}
	topK(b.pick, b.sums[:n], K)
	for r, c := range b.pick {
		pi := b.cand[c]
		ix, iy := b.idx[0][pi/K], b.idx[1][pi%K]
		out[r] = expertChoice{e: ix*k.nk + iy, ix: ix, iy: iy, s: float64(b.sums[c])}
	}
}

// retrieveBufs are one worker's buffers for retrieve: each half's top-k,
// the sums formed with their indices i·k + j in the k² grid, and the pick.
type retrieveBufs[T floats] struct {
	idx  [2][]int
	sums []T
	cand []int
	pick []int
}

func newRetrieveBufs[T floats](k cdmoeKernel) retrieveBufs[T] {
	return retrieveBufs[T]{idx: [2][]int{make([]int, k.topk), make([]int, k.topk)},
		sums: make([]T, k.topk*k.topk), cand: make([]int, k.topk*k.topk), pick: make([]int, k.topk)}
}

// cdmoeRun computes y (y != nil) or every gradient (g, d != nil).
func cdmoeRun[T floats](k cdmoeKernel, in [][]T, y, g []T, d [][]T) {
	x, Wup, Wdown, Wq, keys, Edown, Eup := in[0], in[1], in[2], in[3], in[4], in[5], in[6]
	N, dm, qd := k.b*k.t, k.dm, k.qdim()
	sh, chosen := cdmoeForwardState(k, x, Wup, Wdown, Wq, keys, g != nil)
	var dphi, dq []T
	if g != nil {
		dphi, dq = scratchUninit[T](len(g)), scratch[T](N*qd) // dq accumulates
		copy(dphi, g)                                         // y = ... + φ
		defer releaseScratch(dphi)
		defer releaseScratch(dq)
	}
	parts := make([]cdmoeGrads[T], workerCount(N))
	// 3. Each token's experts, added to φ (forward) or their gradients
	// (backward).
	experts := func(w, lo, hi int) {
		if cdmoeExpertsRangeC(k, lo, hi, chosen, y, g, sh, Edown, Eup, keys, &parts[w], dphi, dq) {
			return
		}
		for n := lo; n < hi; n++ {
			if y != nil {
				copy(y[n*dm:(n+1)*dm], sh.phi[n*dm:(n+1)*dm])
			}
			for hh := 0; hh < k.heads; hh++ {
				chosen := chosen[(n*k.heads+hh)*k.topk : (n*k.heads+hh+1)*k.topk]
				if y != nil {
					cdmoeExpertsForward(k, sh.phi[n*dm:(n+1)*dm], Edown, Eup, chosen, y[n*dm:(n+1)*dm])
				} else {
					parts[w].expertsBackward(k, n, hh, sh, chosen, g, Edown, Eup, keys, dphi, dq)
				}
			}
		}
	}
	var xres []T
	if y != nil && k.res != nil {
		xres = in[7]
	}
	parallelRanges(N, func(w, lo, hi int) {
		if g != nil {
			parts[w] = cdmoeGrads[T]{scratch[T](len(Edown)), scratch[T](len(Eup)), scratch[T](len(keys))}
		}
		// Closing a block: x's rows added to each block of tokens.
		closeInBlocks(y, xres, dm, lo, hi, func(b0, b1 int) { experts(w, b0, b1) })
	})
	if g == nil {
		if !k.saved.wanted {
			k.saved.release() // an evaluation graph keeps nothing for a backward
		}
		return
	}
	// The workers' sums in worker order (parallelRanges gives every worker
	// tokens), the first one's as 0 + v (what an add into a cleared buffer
	// gave) so that the buffers need no clearing.
	add := setFrom[T]
	for _, p := range parts {
		add(d[5], p.dEdown)
		add(d[6], p.dEup)
		add(d[4], p.dkeys)
		add = addInto[T]
		releaseScratch(p.dEdown)
		releaseScratch(p.dEup)
		releaseScratch(p.dkeys)
	}
	cdmoeSharedBackward(k, sh, x, Wup, Wdown, Wq, dphi, dq, d)
}

// cdmoeForwardState is steps 1–2 for every token: the shared MLP's
// activations and the chosen experts (heads·top_k per token). The forward
// computes them and saves them for its backward; the backward takes them
// from the save when it is fresh and for the same input, and otherwise
// computes them (and drops them when it is done).
func cdmoeForwardState[T floats](k cdmoeKernel, x, Wup, Wdown, Wq, keys []T, backward bool) (cdmoeAct[T], []expertChoice) {
	sv := k.saved
	if backward && sv.take(x) {
		if a, ok := sv.act.(cdmoeAct[T]); ok {
			return a, sv.chosen
		}
	}
	N, nc := k.b*k.t, k.heads*k.topk
	sh := cdmoeShared(k, x, Wup, Wdown, Wq)
	sv.release()
	if cap(sv.chosen) < N*nc {
		sv.chosen = make([]expertChoice, N*nc)
	}
	chosen := sv.chosen[:N*nc]
	// 2. product-key retrieval of every head's experts
	if q32, ok := any(sh.q).([]float32); ok && retrieveQueriesOK(k) {
		keys32 := any(keys).([]float32)
		parallelRanges(N, func(_, lo, hi int) { retrieveQueries32(k, q32, keys32, lo, hi, chosen) })
	} else {
		sims := keySims(k, sh.q, keys, N)
		parallelRanges(N, func(_, lo, hi int) {
			if s32, ok := any(sims).([]float32); ok && retrieveRows32(k, s32, lo*k.heads, hi*k.heads, chosen) {
				return
			}
			b := newRetrieveBufs[T](k)
			for r := lo * k.heads; r < hi*k.heads; r++ {
				retrieve(k, sims[r*2*k.nk:], &b, chosen[r*k.topk:(r+1)*k.topk])
			}
		})
		releaseScratch(sims)
	}
	sv.act = sh // released by the next release, whether or not kept
	if !backward {
		sv.keep(x)
	}
	return sh, chosen
}

// cdmoeAct are the cross-domain MLP's activations and the queries of all
// tokens, from the scratch pools.
type cdmoeAct[T floats] struct{ hpre, hact, phi, q []T }

func (a cdmoeAct[T]) release() {
	releaseScratch(a.hpre)
	releaseScratch(a.hact)
	releaseScratch(a.phi)
	releaseScratch(a.q)
}

// cdmoeShared is step 1: the cross-domain MLP φ = act(x Wup) Wdown and the
// queries q = φ Wq.
func cdmoeShared[T floats](k cdmoeKernel, x, Wup, Wdown, Wq []T) cdmoeAct[T] {
	N, dm, dff, qd := k.b*k.t, k.dm, k.dff, k.qdim()
	// Each buffer is written whole (a product with beta 0, the activation).
	a := cdmoeAct[T]{scratchUninit[T](N * dff), scratchUninit[T](N * dff), scratchUninit[T](N * dm), scratchUninit[T](N * qd)}
	gemmTall(false, N, dff, dm, x, dm, Wup, dff, 0, a.hpre, dff)
	applyUnary(k.act, a.hact, a.hpre, nil, false)
	gemmTall(false, N, dm, dff, a.hact, dff, Wdown, dm, 0, a.phi, dm)
	gemmTall(false, N, qd, dm, a.phi, dm, Wq, qd, 0, a.q, qd)
	return a
}

// cdmoeRangeBufs are what the C kernels read and write for tokens [lo,
// hi) (all float32, whole tensors): y or g, φ, the expert tables, every
// token's chosen experts, and for the gradient the accumulators, the
// queries q and dq, the keys and dkeys; d is d_model, qd a query row.
type cdmoeRangeBufs struct {
	y, g, phi, Edown, Eup                  []float32
	chosen                                 []expertChoice
	dEdown, dEup, dphi, q, keys, dq, dkeys []float32
	lo, hi, heads, topk, nk, half, qd, d   int
}

// cdmoeExpertsRangeC runs step 3 (or its gradient, the keys' included)
// for tokens [lo, hi) in one call of the C kernels, where there are some:
// float32, SiLU, the openblas build. It reports whether it ran.
func cdmoeExpertsRangeC[T floats](k cdmoeKernel, lo, hi int, chosen []expertChoice, y, g []T, sh cdmoeAct[T], Edown, Eup, keys []T, acc *cdmoeGrads[T], dphi, dq []T) bool {
	if k.act.name != siluFunc.name {
		return false
	}
	phi32, ok := any(sh.phi).([]float32)
	if !ok {
		return false
	}
	b := cdmoeRangeBufs{phi: phi32, Edown: any(Edown).([]float32), Eup: any(Eup).([]float32), chosen: chosen,
		lo: lo, hi: hi, heads: k.heads, topk: k.topk, nk: k.nk, half: k.half, qd: k.qdim(), d: k.dm}
	if g == nil {
		b.y = any(y).([]float32)
		return cdmoeExpertsC(b)
	}
	b.g, b.dphi = any(g).([]float32), any(dphi).([]float32)
	b.dEdown, b.dEup, b.dkeys = any(acc.dEdown).([]float32), any(acc.dEup).([]float32), any(acc.dkeys).([]float32)
	b.q, b.dq, b.keys = any(sh.q).([]float32), any(dq).([]float32), any(keys).([]float32)
	return cdmoeExpertsC(b)
}

// cdmoeExpertsForward is step 3 for one token and head: y += act((φ·Edown[e]) s) Eup[e]
// over the chosen experts.
func cdmoeExpertsForward[T floats](k cdmoeKernel, ph, Edown, Eup []T, chosen []expertChoice, yn []T) {
	dm := k.dm
	for _, c := range chosen {
		ed, eu := Edown[c.e*dm:(c.e+1)*dm], Eup[c.e*dm:(c.e+1)*dm]
		axpy(T(actAt[T](k.act, dot(ph, ed)*c.s, false)), eu, yn)
	}
}

// actAt is the activation at z, or with deriv its derivative: SiLU through
// the float32 exp (exp32, within 2 ulp) when the op runs in float32, as the
// vectorised activations do; the float64 function otherwise.
func actAt[T floats](act unaryFunc, z float64, deriv bool) float64 {
	var zero T
	if _, f32 := any(zero).(float32); f32 && act.name == siluFunc.name {
		s := float64(sigmoid32(float32(z)))
		if deriv {
			return s * (1 + z*(1-s))
		}
		return z * s
	}
	if deriv {
		return act.df(z)
	}
	return act.f(z)
}

// cdmoeGrads are one worker's gradients of the experts and keys.
type cdmoeGrads[T floats] struct{ dEdown, dEup, dkeys []T }

// expertsBackward is step 3's gradient for token n and head hh: into the
// worker's expert and key gradients, and the token's dφ and dq.
func (acc cdmoeGrads[T]) expertsBackward(k cdmoeKernel, n, hh int, sh cdmoeAct[T], chosen []expertChoice, g, Edown, Eup, keys, dphi, dq []T) {
	dm, qd := k.dm, k.qdim()
	ph, qn, gn := sh.phi[n*dm:(n+1)*dm], sh.q[n*qd:(n+1)*qd], g[n*dm:(n+1)*dm]
	for _, c := range chosen {
		ed, eu := Edown[c.e*dm:(c.e+1)*dm], Eup[c.e*dm:(c.e+1)*dm]
		dp := dot(ph, ed)
		z := dp * c.s
		wgt := actAt[T](k.act, z, false)
		dw := dot(gn, eu)
		axpy(T(wgt), gn, acc.dEup[c.e*dm:])
		dz := dw * actAt[T](k.act, z, true)
		// z = (φ·Edown[e]) * s
		axpy(T(dz*c.s), ph, acc.dEdown[c.e*dm:])
		axpy(T(dz*c.s), ed, dphi[n*dm:])
		acc.keyBackward(k, n, hh, c, T(dz*dp), qn, keys, dq)
	}
}

// keyBackward adds the gradient ds of a chosen expert's score to the
// query halves and keys it came from: s = sim_0[ix] + sim_1[iy],
// sim_p[kk] = q_p · keys[hh,kk,p].
func (acc cdmoeGrads[T]) keyBackward(k cdmoeKernel, n, hh int, c expertChoice, ds T, qn, keys, dq []T) {
	qd := k.qdim()
	for p, kk := range [2]int{c.ix, c.iy} {
		qo, ko := (p*k.heads+hh)*k.half, ((hh*k.nk+kk)*2+p)*k.half
		axpy(ds, keys[ko:ko+k.half], dq[n*qd+qo:])
		axpy(ds, qn[qo:qo+k.half], acc.dkeys[ko:])
	}
}

// cdmoeSharedBackward is step 4: back through q = φ Wq, φ = act(hpre)
// Wdown, hpre = x Wup, into d[3], d[2], d[1] and d[0].
func cdmoeSharedBackward[T floats](k cdmoeKernel, sh cdmoeAct[T], x, Wup, Wdown, Wq, dphi, dq []T, d [][]T) {
	N, dm, dff, qd := k.b*k.t, k.dm, k.dff, k.qdim()
	gemmTall(true, N, dm, qd, dq, qd, Wq, qd, 1, dphi, dm)
	weightGrad(d[3], sh.phi, dm, dq, qd, N)
	dh := scratchUninit[T](N * dff) // written whole by the product below
	defer releaseScratch(dh)
	gemmTall(true, N, dff, dm, dphi, dm, Wdown, dm, 0, dh, dff)
	weightGrad(d[2], sh.hact, dff, dphi, dm, N)
	applyUnary(k.act, dh, sh.hpre, dh, true)
	weightGrad(d[1], x, dm, dh, dff, N)
	gemmTall(true, N, dm, dff, dh, dff, Wup, dff, 0, d[0], dm)
}

// setFrom sets dst to 0 + src elementwise (-0 becomes +0, as when src is
// added into a cleared dst).
func setFrom[T floats](dst, src []T) {
	for i, v := range src {
		dst[i] = 0 + v
	}
}

// addInto adds src to dst elementwise.
func addInto[T floats](dst, src []T) {
	for i, v := range src {
		dst[i] += v
	}
}
