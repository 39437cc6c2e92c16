package ops

import (
	"fmt"
	"sort"

	"github.com/pkg/errors"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// MoEExperts applies the N gated-MLP (SwiGLU) experts of a routed MoE to the
// tokens the gates route to them (SPEC §3 MoE; DeepSeekMoE eq. 3):
//
//	y_t = Σ_{e: g_te ≠ 0} g_te · (silu(x_t W1_e) ⊙ x_t W3_e) W2_e
//
// with x [..., d], gates [..., N] (TopKGates), W1, W3 [N, d, f], W2 [N, f, d].
// Each expert gathers its tokens and runs three gemms, so the work is the
// active parameters', not all N experts'. Experts with a zero gate are not
// computed and the gradient of a zero gate is zero (TopKGates gives the
// unchosen experts no gradient either). Experts run in parallel; each token
// sums its experts in expert order, so results repeat to the bit.
func MoEExperts(x, gates, W1, W3, W2 *G.Node) (*G.Node, error) {
	return moeExperts(x, gates, W1, W3, W2, nil)
}

// moeExperts is MoEExperts, closing r's pre-norm block when r is not nil
// (Residual.MoEExperts): x is then r's h, and r's residual stream is a
// sixth input added to each token's row once its experts are summed.
func moeExperts(x, gates, W1, W3, W2 *G.Node, r *Residual) (*G.Node, error) {
	xs, gs := x.Shape(), gates.Shape()
	if xs.Dims() < 1 || gs.Dims() != xs.Dims() {
		return nil, errors.Errorf("moe: gates %v must be x's shape %v with the last axis N", gs, xs)
	}
	for i := 0; i < xs.Dims()-1; i++ {
		if xs[i] != gs[i] {
			return nil, errors.Errorf("moe: gates %v must be x's shape %v with the last axis N", gs, xs)
		}
	}
	k := moeKernel{x: xs.Clone(), n: gs[gs.Dims()-1], d: xs[xs.Dims()-1], saved: &moeSaved{}}
	w1 := W1.Shape()
	if w1.Dims() != 3 || w1[0] != k.n || w1[1] != k.d {
		return nil, errors.Errorf("moe: W1 must be [N=%d, d=%d, f], got %v", k.n, k.d, w1)
	}
	k.f = w1[2]
	if !W3.Shape().Eq(w1) {
		return nil, errors.Errorf("moe: W3 must be [N, d, f] = %v, got %v", w1, W3.Shape())
	}
	if w2 := W2.Shape(); w2.Dims() != 3 || w2[0] != k.n || w2[1] != k.f || w2[2] != k.d {
		return nil, errors.Errorf("moe: W2 must be [N=%d, f=%d, d=%d], got %v", k.n, k.f, k.d, w2)
	}
	if r == nil {
		return apply(k, x, gates, W1, W3, W2)
	}
	k.res = r.link
	if err := r.close(k.x); err != nil {
		return nil, err
	}
	return apply(k, x, gates, W1, W3, W2, r.x)
}

type moeKernel struct {
	x       tensor.Shape
	n, d, f int
	// saved is shared by the op and its gradient op: the experts' hidden
	// activations from the forward (not an attribute: no hash).
	saved *moeSaved
	// res, when not nil, makes the op close a pre-norm block: a sixth
	// input, the residual stream, is added to y, and y's upstream gradient
	// goes to the block's norm too (Residual.MoEExperts).
	res *residualLink
}

// moeSaved is what a MoEExperts forward keeps for its backward in the same
// run, for the same x and gates (forwardSave): every expert's tokens and its
// H1, H3 and Y (X is gathered again and A = silu(H1) ⊙ H3 recomputed, both
// cheap next to the three products the save spares; keeping X and A too
// made no training step faster). It is kept only when the graph takes the
// op's gradient (wanted, set by SymDiff), so that an evaluation forward
// hands its buffers back at once.
type moeSaved struct {
	forwardSave
	wanted  bool
	experts any // []moeExpert[float32] or []moeExpert[float64]
}

// gradientWanted is called when the graph takes the op's gradient.
func (k moeKernel) gradientWanted() {
	if k.saved != nil {
		k.saved.wanted = true
	}
}

// release hands the saved activations back to the pools.
func (sv *moeSaved) release() {
	switch ex := sv.experts.(type) {
	case []moeExpert[float32]:
		releaseExperts(ex)
	case []moeExpert[float64]:
		releaseExperts(ex)
	}
	sv.experts = nil
	sv.drop()
}

// releaseSaved is called by ReleaseBuffers.
func (k moeKernel) releaseSaved() {
	if k.saved != nil {
		k.saved.release()
	}
}

func (k moeKernel) name() string { return "moe_experts" }
func (k moeKernel) attrs() string {
	if k.res != nil {
		return fmt.Sprintf("block=%d", k.res.id)
	}
	return ""
}
func (k moeKernel) tokens() int { return k.x.TotalSize() / k.d }
func (k moeKernel) inShapes() []tensor.Shape {
	g := k.x.Clone()
	g[len(g)-1] = k.n
	s := []tensor.Shape{k.x, g, {k.n, k.d, k.f}, {k.n, k.d, k.f}, {k.n, k.f, k.d}}
	if k.res != nil {
		s = append(s, k.x)
	}
	return s
}
func (k moeKernel) outShape() tensor.Shape { return k.x }
func (k moeKernel) diffWRT() []bool {
	if k.res != nil {
		return []bool{true, true, true, true, true, false}
	}
	return []bool{true, true, true, true, true}
}

// residual is the block the op closes, or nil (see fusedOp.SymDiff).
func (k moeKernel) residual() *residualLink { return k.res }

// The backward writes every gradient whole (moeRun): x's by moeCombine,
// the gates' after clearing them, and each expert's weights by products
// with beta 0, or as zeros for an expert no token chose. The fused op
// then skips clearing the packed vector first, three blocks of experts'
// weights a layer (a clear of the d_model 64 routed MoE's 283,000 values
// that the products overwrote).
func (k moeKernel) writesWholeGradients() bool { return true }

// The forward writes every value of y too: moeCombine clears each token's
// row before it adds the token's experts, so the fused op need not clear
// the reused output buffer first.
func (k moeKernel) writesWholeOutput() bool { return true }

func (k moeKernel) forward(in []any, out any) error {
	switch y := out.(type) {
	case []float32:
		moeRun(y, nil, nil, as[float32](in), k)
	case []float64:
		moeRun(y, nil, nil, as[float64](in), k)
	}
	return nil
}

func (k moeKernel) backward(in []any, out, dOut any, dIn []any) error {
	switch dy := dOut.(type) {
	case []float32:
		moeRun(nil, dy, as[float32](dIn), as[float32](in), k)
	case []float64:
		moeRun(nil, dy, as[float64](dIn), as[float64](in), k)
	}
	return nil
}

// moeExpert is one expert's share of a pass: its tokens, its activations
// and its outputs (forward: Y) or input gradients (backward: dX), m rows of d.
type moeExpert[T floats] struct {
	tokens []int
	pass   moeExpertPass[T]
	rows   []T
}

func releaseExperts[T floats](experts []moeExpert[T]) {
	for i := range experts {
		experts[i].pass.release()
	}
}

// moeRun is the forward pass (y != nil) or the backward pass (dy != nil).
// The forward saves the experts' activations for the backward (moeSaved).
func moeRun[T floats](y, dy []T, d [][]T, in [][]T, k moeKernel) {
	x, g := in[0], in[1]
	sv := k.saved
	backward := dy != nil
	var experts []moeExpert[T]
	reuse := false
	if backward && sv.take(x, g) {
		experts, reuse = sv.experts.([]moeExpert[T])
	}
	if !reuse {
		sv.release() // a save nobody used (an evaluation run) goes back first
		experts = moeTokens[T](g, k)
	}
	sv.experts = nil // this pass owns them now
	sv.drop()
	if backward {
		clear(d[1]) // a token's gates of the experts it did not choose
	}
	chosen := 0 // the (token, expert) pairs: each expert's products are over its own
	for e := range experts {
		chosen += len(experts[e].tokens)
	}
	products := 3.0 // the forward's X W1, X W3, A W2; the backward's six
	if backward {
		products = 6
	}
	parallelForWork(k.n, products*gemmWork(chosen, k.d, k.f), func(e int) {
		ex := &experts[e]
		if len(ex.tokens) == 0 {
			if backward {
				df := k.d * k.f
				for _, dw := range d[2:5] {
					clear(dw[e*df : (e+1)*df])
				}
			}
			return
		}
		if reuse {
			ex.pass.regather(k, ex.tokens, x)
		} else {
			ex.pass = moeExpertForward(k, e, ex.tokens, x, in[2], in[3], in[4], backward, sv.wanted)
		}
		if !backward {
			// 3. Forward: the expert's outputs, scaled by the gates later.
			ex.rows = ex.pass.Y
			return
		}
		ex.rows = ex.pass.backward(k, e, ex.tokens, g, dy, in[2], in[3], in[4], d)
	})
	// 5. Each token sums its experts in expert order (and, closing a
	// block, adds the residual stream's row to the sum).
	if backward {
		moeCombine(d[0], nil, nil, experts, k)
	} else {
		var xres []T
		if k.res != nil {
			xres = in[5]
		}
		moeCombine(y, g, xres, experts, k)
	}
	if backward || !sv.wanted {
		releaseExperts(experts)
		return
	}
	for e := range experts {
		experts[e].pass.keepForBackward()
	}
	sv.experts = experts
	sv.keep(x, g)
}

// moeTokens lists every expert's tokens: those with a non-zero gate (a NaN
// gate counts as chosen), ascending. float32 gates of at most 64 experts go
// to moeChoices32 (C under the openblas build), any others to moeTokensGo;
// both give the same lists (TestMoETokensMatchesAppend).
func moeTokens[T floats](g []T, k moeKernel) []moeExpert[T] {
	g32, ok := any(g).([]float32)
	if !ok || k.n > 64 {
		return moeTokensGo(g, k.tokens(), k.n)
	}
	all, counts := moeChoices32(g32, k.tokens(), k.n)
	experts := make([]moeExpert[T], k.n)
	at := 0
	for e, c := range counts {
		experts[e].tokens = all[at : at+c : at+c]
		at += c
	}
	return experts
}

// moeTokensGo is moeTokens for any gates (tokens rows of n), in Go. The
// choices are unpredictable (top-k of n), so both passes go without a
// branch on them: the first counts each expert's tokens, the second writes
// every token into each expert's next slot and moves that expert on only
// when the token chose it. Each expert's part of the one backing array has
// a spare slot after it for the writes that do not count.
func moeTokensGo[T floats](g []T, tokens, n int) []moeExpert[T] {
	counts := make([]int, n)
	for t := 0; t < tokens; t++ {
		for e, v := range g[t*n : (t+1)*n] {
			counts[e] += b2i(v != 0)
		}
	}
	next, total := make([]int, n), 0
	for e, c := range counts {
		next[e] = total
		total += c + 1
	}
	all := make([]int, total)
	experts := make([]moeExpert[T], n)
	for e, c := range counts {
		experts[e].tokens = all[next[e] : next[e]+c : next[e]+c]
	}
	for t := 0; t < tokens; t++ {
		for e, v := range g[t*n : (t+1)*n] {
			all[next[e]] = t
			next[e] += b2i(v != 0)
		}
	}
	return experts
}

// moeChoicesGo is moeChoices32 in Go, for the pure-Go build: moeTokensGo's
// lists, one after another.
func moeChoicesGo(g []float32, tokens, n int) (all, counts []int) {
	experts := moeTokensGo(g, tokens, n)
	counts = make([]int, n)
	for e := range experts {
		counts[e] = len(experts[e].tokens)
		all = append(all, experts[e].tokens...)
	}
	return all, counts
}

// moeCombine writes into dst [tokens, d] each token's sum over its experts,
// in expert order, of the expert's row for it, scaled by its gate when g is
// not nil (the forward; the backward's rows already carry it), plus the
// token's row of xres when xres is not nil (the forward of an op closing a
// pre-norm block: x + the sum, the add Add(x, y) would do, on the worker's
// rows while they are in cache). Tokens are shared out in contiguous ranges
// to GOMAXPROCS workers; a token's sum is the same whatever the split,
// because each expert's tokens are ascending and a worker walks the experts
// in order over its own range.
func moeCombine[T floats](dst, g, xres []T, experts []moeExpert[T], k moeKernel) {
	parallelRanges(k.tokens(), func(_, lo, hi int) {
		closeInBlocks(dst, xres, k.d, lo, hi, func(b0, b1 int) { moeCombineRows(dst, g, experts, k, b0, b1) })
	})
}

// moeCombineRows is moeCombine's sum for tokens lo to hi.
func moeCombineRows[T floats](dst, g []T, experts []moeExpert[T], k moeKernel, lo, hi int) {
	clear(dst[lo*k.d : hi*k.d])
	for e := range experts {
		ex := &experts[e]
		first, last := sort.SearchInts(ex.tokens, lo), sort.SearchInts(ex.tokens, hi)
		moeScatterRows(dst, ex.rows[first*k.d:], ex.tokens[first:last], g, k.n, e, k.d)
	}
}

// moeExpertPass is one expert's forward over its m tokens: X [m, d] (its
// tokens' rows of x, gathered), H1 = X W1, H3 = X W3 [m, f], A = silu(H1)
// ⊙ H3, Y = A W2 [m, d]. All come from the scratch pools; a forward by
// blocks (moeExpertForward) leaves out those it did not keep whole, and a
// forward that read the rows in place has no X.
type moeExpertPass[T floats] struct{ X, H1, H3, A, Y []T }

// moeExpertForward is steps 1–2 for expert e: gather its tokens (or, in
// a forward on the 64-wide kernel, read their rows in place), run its
// SwiGLU, by blocks of swigluRowBlock rows as SwiGLU's op does, so that a
// block's activations are still near the core for its next product. With
// whole (a backward that found no save) every activation is kept whole for
// the backward. Otherwise (a forward) A is only a block's (the backward
// makes it again with its gradients), and H1 and H3 are too unless keep (a
// training graph's forward, whose backward reads them). The products are
// the same blocks either way, so a backward without a save sees the bits a
// forward would have kept (OpenBLAS's packed kernels can round a row
// differently by where it falls in a product).
func moeExpertForward[T floats](k moeKernel, e int, tokens []int, x, W1, W3, W2 []T, whole, keep bool) moeExpertPass[T] {
	m, df := len(tokens), k.d*k.f
	w1, w3, w2 := W1[e*df:], W3[e*df:], W2[e*df:]
	r1, r3, r2 := newRightOperand(false, w1, k.f, k.d, k.f, m), newRightOperand(false, w3, k.f, k.d, k.f, m), newRightOperand(false, w2, k.d, k.f, k.d, m)
	defer r1.release()
	defer r3.release()
	defer r2.release()
	// A forward whose inputs run on the 64-wide kernel reads its tokens'
	// rows of x where they lie, through tokens: the same values in the same
	// order as from a gathered copy, so the same bits
	// (TestMoEExpertForwardBlocksSameBits), without the copy (1.7% of a
	// (SR)3 AR d_model 256 evaluation step on the Xeon; the step ran 3–5%
	// faster without it: docs/performance.md). A training forward does too:
	// it keeps H1 and H3, not X, which its backward gathers again
	// (regather). Only a backward without a save (whole) gathers X here,
	// since it reads X after the forward.
	inPlace := !whole && r1.readsRowsInPlace() && r3.readsRowsInPlace()
	// Every buffer is written whole (gather, gemm with beta 0, gated SiLU).
	f := moeExpertPass[T]{Y: scratchUninit[T](m * k.d)}
	if !inPlace {
		f.X = scratchUninit[T](m * k.d)
		gatherRows(f.X, x, tokens, k.d)
	}
	blk := swigluRowBlock(k.f, k.d)
	if blk == 0 || m <= blk {
		blk = m
	}
	if whole || keep || blk == m {
		f.H1, f.H3 = scratchUninit[T](m*k.f), scratchUninit[T](m*k.f)
	}
	if whole || blk == m {
		f.A = scratchUninit[T](m * k.f)
	}
	// The block buffers, where an activation is not kept whole.
	var h1, h3, a []T
	if f.H1 == nil {
		h1, h3 = scratchUninit[T](blk*k.f), scratchUninit[T](blk*k.f)
		defer releaseScratch(h1)
		defer releaseScratch(h3)
	}
	if f.A == nil {
		a = scratchUninit[T](blk * k.f)
		defer releaseScratch(a)
	}
	for r0 := 0; r0 < m; r0 += blk {
		rows := min(blk, m-r0)
		b1, b3, ba := h1, h3, a
		if f.H1 != nil {
			b1, b3 = f.H1[r0*k.f:], f.H3[r0*k.f:]
		}
		if f.A != nil {
			ba = f.A[r0*k.f:]
		}
		b1, b3, ba = b1[:rows*k.f], b3[:rows*k.f], ba[:rows*k.f]
		if inPlace {
			r1.mulRows(tokens[r0:r0+rows], x, k.d, 0, b1, k.f)
			r3.mulRows(tokens[r0:r0+rows], x, k.d, 0, b3, k.f)
		} else {
			r1.mul(rows, f.X[r0*k.d:], k.d, 0, b1, k.f)
			r3.mul(rows, f.X[r0*k.d:], k.d, 0, b3, k.f)
		}
		gatedSiLU(ba, b3, b1) // A = silu(H1) ⊙ H3, vectorised like SwiGLU's gate
		r2.mul(rows, ba, k.f, 0, f.Y[r0*k.d:], k.d)
	}
	return f
}

// gatherRows copies row tokens[r] of x (rows of d) into row r of dst.
func gatherRows[T floats](dst, x []T, tokens []int, d int) { gatherRowsOf(dst, x, tokens, d, d) }

// gatherRowsOf copies the first k values of a's row rows[i] (rows lda
// apart) into row i of dst (rows of k).
func gatherRowsOf[T floats](dst, a []T, rows []int, lda, k int) {
	for i, r := range rows {
		copy(dst[i*k:(i+1)*k], a[r*lda:r*lda+k])
	}
}

// keepForBackward drops what the backward can rebuild cheaply (X, A) and
// keeps H1, H3 and Y.
func (f *moeExpertPass[T]) keepForBackward() {
	releaseScratch(f.X)
	releaseScratch(f.A)
	f.X, f.A = nil, nil
}

// regather gathers X of a saved pass for its backward (the rows of x its
// forward read) and gives it a buffer for A, which the backward makes
// again from the saved H1 and H3 in the pass that takes their gradients.
func (f *moeExpertPass[T]) regather(k moeKernel, tokens []int, x []T) {
	m := len(tokens)
	f.X, f.A = scratchUninit[T](m*k.d), scratchUninit[T](m*k.f) // X written whole below, A by the backward
	gatherRows(f.X, x, tokens, k.d)
}

// release hands the pass's buffers back to the pools.
func (f moeExpertPass[T]) release() {
	for _, s := range [][]T{f.X, f.H1, f.H3, f.A, f.Y} {
		releaseScratch(s)
	}
}

// backward is step 4 for expert e: the gates' gradient d[1], the weights'
// d[2..4], and the rows of dX to scatter to the tokens (X's memory reused).
func (f moeExpertPass[T]) backward(k moeKernel, e int, tokens []int, g, dy, W1, W3, W2 []T, d [][]T) []T {
	m, df := len(tokens), k.d*k.f
	// dg_te = <dy_t, Y_t>; dY = g_te dy_t.
	dY := scratchUninit[T](m * k.d) // written whole by moeGateGrad
	defer releaseScratch(dY)
	moeGateGrad(d[1], dY, dy, f.Y, g, tokens, k.n, e, k.d)
	// dA = dY W2ᵀ.
	dA := scratchUninit[T](m * k.f) // gemm with beta 0
	defer releaseScratch(dA)
	gemmTallSerial(true, m, k.f, k.d, dY, k.d, W2[e*df:], k.d, 0, dA, k.f)
	// A = gatedSiLU(H3, H1) again (a saved pass kept H1 and H3, not A), and
	// dH1 = dA ⊙ H3 ⊙ silu'(H1), dH3 = dA ⊙ silu(H1), in one pass from one
	// exponential: the bits of the forward's A and of gatedSiLUGrad, with
	// H1 and H3 read once instead of in a pass for A and one for dH1, dH3
	// (the MoE stacks' training steps 1.4–2% faster: docs/performance.md).
	dH1, dH3 := scratchUninit[T](m*k.f), scratchUninit[T](m*k.f) // gatedSiLUBoth writes A, dH1 and dH3 whole
	defer releaseScratch(dH1)
	defer releaseScratch(dH3)
	gatedSiLUBoth(f.A, dH3, dH1, dA, f.H3, f.H1)
	// dW2 = Aᵀ dY, dW1 = Xᵀ dH1, dW3 = Xᵀ dH3.
	blk := deepRowBlock(k.d, k.f) // the same for W1, W3 [d, f] and W2 [f, d]
	gemmDeep(blk, k.f, k.d, m, f.A, k.f, dY, k.d, 0, d[4][e*df:], k.d)
	gemmDeep(blk, k.d, k.f, m, f.X, k.d, dH1, k.f, 0, d[2][e*df:], k.f)
	gemmDeep(blk, k.d, k.f, m, f.X, k.d, dH3, k.f, 0, d[3][e*df:], k.f)
	// dX = dH1 W1ᵀ + dH3 W3ᵀ, scattered back per token by the caller.
	gemmTallSerial(true, m, k.d, k.f, dH1, k.f, W1[e*df:], k.f, 0, f.X, k.d)
	gemmTallSerial(true, m, k.d, k.f, dH3, k.f, W3[e*df:], k.f, 1, f.X, k.d)
	return f.X
}
