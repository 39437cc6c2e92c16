package ops

import (
	"fmt"
	"math"
	"unsafe"

	"github.com/pkg/errors"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// MaskKind selects the dynamic attention mask (Wonderful Matrices §3.2).
type MaskKind string

const (
	// MaskNone is plain causal attention.
	MaskNone MaskKind = "none"
	// MaskPaper is eq. 4 of Wonderful Matrices, M = L ∘ A: the causal softmax
	// probabilities are multiplied per key position by a learnable
	// l [h, max_position] (initialised to ones). Listing 6 instead feeds
	// attention_mask*dynamic_mask into masked_fill(... == 0), which gives l no
	// gradient; the framework follows the equation, so l learns (SPEC §2).
	MaskPaper MaskKind = "paper"
	// MaskDoge is the authors' later, input-dependent form (the Doge code): an
	// additive per-key bias [b, t, h], exp(A_h * softplus(dt_proj(v))), added to
	// the scores of key j before the softmax. The layer computes the bias.
	MaskDoge MaskKind = "doge"
)

// MaskKinds lists the valid mask kinds, for error messages and flags.
var MaskKinds = []MaskKind{MaskNone, MaskPaper, MaskDoge}

// AttentionConfig holds the attributes of Attention.
type AttentionConfig struct {
	// Mask is the dynamic mask kind; "" means MaskNone.
	Mask MaskKind
	// LogNTrainLen turns on the log-n scaling of TransXSSM appendix A for the
	// queries (see LogN) when > 0: the training length.
	LogNTrainLen int
}

// Attention is causal scaled dot-product attention over q [b,tq,h,d],
// k [b,tk,h_kv,d], v [b,tk,h_kv,dv] (h_kv divides h: grouped-query attention):
//
//	A = softmax(q k^T / sqrt(d) + causal),  y = M v,  M = A (or A ∘ l)
//
// Queries are the last tq positions of the tk keys (tq = tk in training,
// tq = 1 when decoding from a KV cache), so query i sees keys j <= tk-tq+i.
// mask is l [h, max_position] for MaskPaper (max_position >= tk), the bias
// [b,tk,h] for MaskDoge, nil for MaskNone. It runs fused per (batch, head),
// one goroutine each, without materialising [b,h,t,t] in the graph.
func Attention(q, k, v, mask *G.Node, cfg AttentionConfig) (*G.Node, error) {
	if cfg.Mask == "" {
		cfg.Mask = MaskNone
	}
	qs, ks, vs := q.Shape(), k.Shape(), v.Shape()
	if qs.Dims() != 4 || ks.Dims() != 4 || vs.Dims() != 4 {
		return nil, errors.Errorf("attention: q, k, v must be [b,t,h,d]; got %v, %v, %v", qs, ks, vs)
	}
	kn := attnKernel{b: qs[0], tq: qs[1], tk: ks[1], h: qs[2], hk: ks[2], d: qs[3], dv: vs[3], mask: cfg.Mask,
		saved: &attnSaved{}}
	switch {
	case ks[0] != kn.b || vs[0] != kn.b || vs[1] != kn.tk || vs[2] != kn.hk:
		return nil, errors.Errorf("attention: k %v and v %v disagree with q %v on batch, keys or kv heads", ks, vs, qs)
	case ks[3] != kn.d:
		return nil, errors.Errorf("attention: k's head dim %d differs from q's %d", ks[3], kn.d)
	case kn.hk < 1 || kn.h%kn.hk != 0:
		return nil, errors.Errorf("attention: kv heads %d must divide query heads %d", kn.hk, kn.h)
	case kn.tq > kn.tk:
		return nil, errors.Errorf("attention: %d queries but only %d keys", kn.tq, kn.tk)
	case cfg.LogNTrainLen < 0:
		return nil, errors.Errorf("attention: LogNTrainLen must be >= 0, got %d", cfg.LogNTrainLen)
	}
	inputs := []*G.Node{q, k, v}
	switch cfg.Mask {
	case MaskNone:
		if mask != nil {
			return nil, errors.New("attention: a mask tensor was given but the mask kind is none")
		}
	case MaskPaper:
		if mask == nil || mask.Shape().Dims() != 2 || mask.Shape()[0] != kn.h || mask.Shape()[1] < kn.tk {
			return nil, errors.Errorf("attention: the paper mask must be l [h=%d, max_position>=%d], got %v", kn.h, kn.tk, shapeOf(mask))
		}
		kn.maxPos = mask.Shape()[1]
		inputs = append(inputs, mask)
	case MaskDoge:
		if mask == nil || !mask.Shape().Eq(tensor.Shape{kn.b, kn.tk, kn.h}) {
			return nil, errors.Errorf("attention: the doge mask must be a bias [b,tk,h]=[%d,%d,%d], got %v", kn.b, kn.tk, kn.h, shapeOf(mask))
		}
		inputs = append(inputs, mask)
	default:
		return nil, errors.Errorf("attention: unknown mask kind %q (valid: %v)", cfg.Mask, MaskKinds)
	}
	if cfg.LogNTrainLen > 0 {
		var err error
		if inputs[0], err = LogN(q, cfg.LogNTrainLen, kn.tk-kn.tq); err != nil {
			return nil, err
		}
	}
	return apply(kn, inputs...)
}

func shapeOf(n *G.Node) any {
	if n == nil {
		return "nil"
	}
	return n.Shape()
}

type attnKernel struct {
	b, tq, tk, h, hk, d, dv int
	mask                    MaskKind
	maxPos                  int
	// saved is shared by the op and its gradient op: the forward's
	// probabilities (not an attribute: no hash).
	saved *attnSaved
}

// attnSaveLimit is the most memory (bytes) one attention op's saved
// probabilities may take; above it the backward computes them again, as it
// always did. It keeps training at d_model 256 over 1024 tokens (36 MiB
// per layer at batch 4, 4 heads) from computing the scores and the softmax
// twice, and long contexts from holding [b,h,t,t]: at 4096 tokens one head
// of one sequence alone would take 32 MiB.
const attnSaveLimit = 64 << 20

// attnSaved is what a training graph's attention forward keeps for its
// backward in the same run (forwardSave: the same q, k and doge bias): the
// causal softmax P of every row block of every (batch, head), blocks one
// after the other in attnBlock order, each (rows × keys it sees). The
// backward then skips the scores product and the softmax, a quarter of an
// attention sublayer's step at d_model 64. It is kept only when the graph
// has the gradient (wanted, set by SymDiff), so that evaluation graphs hold
// nothing more; the values are the same either way, since the backward
// computed P with the same code and inputs.
type attnSaved struct {
	forwardSave
	wanted bool
	probs  any // []float32 or []float64
}

// gradientWanted is called when the graph takes the op's gradient.
func (k attnKernel) gradientWanted() {
	if k.saved != nil {
		k.saved.wanted = true
	}
}

// releaseSaved is called by ReleaseBuffers.
func (k attnKernel) releaseSaved() {
	if k.saved != nil {
		k.saved.releaseProbs()
	}
}

// probsPerHead is the number of probabilities one (batch, head) has over
// all its row blocks (rowBlock): Σ rows × keys seen.
func (k attnKernel) probsPerHead() int {
	bs, n := k.rowBlock(), 0
	for i0 := 0; i0 < k.tq; i0 += bs {
		i1 := min(i0+bs, k.tq)
		n += (i1 - i0) * k.blockKeys(i1)
	}
	return n
}

// probsInputs are the inputs P depends on, for forwardSave: q, k and the
// doge bias (the paper mask multiplies P after the softmax).
func probsInputs[T floats](k attnKernel, in [][]T) []any {
	if k.mask == MaskDoge {
		return []any{in[0], in[1], in[3]}
	}
	return []any{in[0], in[1]}
}

// probsBuffer is where the forward writes P for the backward, kept from
// run to run, or nil when the graph has no gradient or P would take more
// than attnSaveLimit.
func probsBuffer[T floats](k attnKernel, in [][]T) []T {
	sv := k.saved
	if sv == nil || !sv.wanted {
		return nil
	}
	n := k.b * k.h * k.probsPerHead()
	var zero T
	if n*int(unsafe.Sizeof(zero)) > attnSaveLimit {
		sv.releaseProbs()
		return nil
	}
	p, ok := sv.probs.([]T)
	if !ok || len(p) != n {
		p = make([]T, n)
	}
	sv.probs = p
	sv.keep(probsInputs(k, in)...)
	return p
}

// releaseProbs forgets the save and hands its memory back.
func (sv *attnSaved) releaseProbs() {
	sv.forwardSave.drop()
	sv.probs = nil
}

// savedProbs returns the forward's P when the backward may use it (and
// marks it used), or nil.
func savedProbs[T floats](k attnKernel, in [][]T) []T {
	sv := k.saved
	if sv == nil || !sv.take(probsInputs(k, in)...) {
		return nil
	}
	p, _ := sv.probs.([]T)
	return p
}

func (k attnKernel) name() string { return "attention" }
func (k attnKernel) attrs() string {
	return fmt.Sprintf("mask=%s,maxpos=%d,hkv=%d", k.mask, k.maxPos, k.hk)
}
func (k attnKernel) inShapes() []tensor.Shape {
	s := []tensor.Shape{{k.b, k.tq, k.h, k.d}, {k.b, k.tk, k.hk, k.d}, {k.b, k.tk, k.hk, k.dv}}
	switch k.mask {
	case MaskPaper:
		s = append(s, tensor.Shape{k.h, k.maxPos})
	case MaskDoge:
		s = append(s, tensor.Shape{k.b, k.tk, k.h})
	}
	return s
}
func (k attnKernel) outShape() tensor.Shape { return tensor.Shape{k.b, k.tq, k.h, k.dv} }

// The forward writes every value of y: each (batch, head)'s query rows by
// y = M·v with β 0 on their first product (attnWideNN's rectangle, else its
// first part, else gemmHeadN); the backward adds into its gradients.
func (k attnKernel) writesWholeOutput() bool { return true }

func (k attnKernel) diffWRT() []bool {
	d := make([]bool, len(k.inShapes()))
	for i := range d {
		d[i] = true
	}
	return d
}

func (k attnKernel) forward(in []any, out any) error {
	switch y := out.(type) {
	case []float32:
		attnForward(k, as[float32](in), y)
	case []float64:
		attnForward(k, as[float64](in), y)
	}
	return nil
}

func (k attnKernel) backward(in []any, out, dOut any, dIn []any) error {
	switch g := dOut.(type) {
	case []float32:
		attnBackward(k, as[float32](in), g, as[float32](dIn))
	case []float64:
		attnBackward(k, as[float64](in), g, as[float64](dIn))
	}
	return nil
}

// attnOffsets are the offsets of head hh of batch bi in q/y, k and v.
func (k attnKernel) offsets(bi, hh int) (qo, ko, vo, yo int) {
	kh := hh / (k.h / k.hk)
	return bi*k.tq*k.h*k.d + hh*k.d, bi*k.tk*k.hk*k.d + kh*k.d, bi*k.tk*k.hk*k.dv + kh*k.dv, bi*k.tq*k.h*k.dv + hh*k.dv
}

// attnBlock is the row block of queries [i0, i1) attention handles at a
// time: it sees keys [0, kmax), so masked blocks above the diagonal cost
// nothing, and P is (i1-i0) × kmax with leading dimension kmax.
const attnBlock = 64

func (k attnKernel) blockKeys(i1 int) int { return k.tk - k.tq + i1 }

// attnProbs fills P with the causal softmax of queries [i0, i1) of head hh of
// batch bi over keys [0, kmax) and, for the paper mask, M = P ∘ l (else M is
// P itself). kT is the head's keys as [d, tk] (headCopies), or empty to
// multiply by k itself. A block of more than attnBlock queries (a wide
// block) takes its scores by attnWideNT.
func attnProbs[T floats](k attnKernel, in [][]T, kT headT[T], bi, hh, i0, i1 int, P, M []T) {
	qo, ko, _, _ := k.offsets(bi, hh)
	kmax := k.blockKeys(i1)
	scale := 1 / math.Sqrt(float64(k.d))
	// 1. scores S = q k^T / sqrt(d)   (i1-i0, kmax)
	if i1-i0 > attnBlock {
		attnWideNT(k, in[0][qo:], k.h*k.d, in[1][ko:], k.hk*k.d, kT, k.d, i0, i1, T(scale), P)
	} else {
		gemmHeadT(i1-i0, kmax, k.d, T(scale), in[0][qo+i0*k.h*k.d:], k.h*k.d, in[1][ko:], k.hk*k.d, kT, P, kmax)
	}
	// 2. the doge bias, then a stable softmax over the visible keys: query
	// i sees keys 0..tk-tq+i
	if k.mask == MaskDoge {
		for i := i0; i < i1; i++ {
			row := P[(i-i0)*kmax : (i-i0+1)*kmax]
			for j := 0; j <= k.tk-k.tq+i; j++ {
				row[j] += in[3][(bi*k.tk+j)*k.h+hh]
			}
		}
	}
	softmaxRows(P[:(i1-i0)*kmax], i1-i0, kmax, k.tk-k.tq+i0)
	paperMask(k, in, hh, i1-i0, kmax, P, M)
}

// paperMask is step 3 of attnProbs, the paper's dynamic mask M = A ∘ l
// (eq. 4) over rows × kmax probabilities; other masks have M = P.
func paperMask[T floats](k attnKernel, in [][]T, hh, rows, kmax int, P, M []T) {
	if k.mask != MaskPaper {
		return
	}
	paperMaskRows(M, P, in[3][hh*k.maxPos:], rows, kmax)
}

func attnForward[T floats](k attnKernel, in [][]T, y []T) {
	probs, per := probsBuffer(k, in), k.probsPerHead()
	kTs, keysT := headsTransposed(k, in[1], k.hk, k.d) // k transposed (headCopies)
	defer releaseScratch(kTs)
	bs := k.rowBlock()
	parallelFor(k.b*k.h, func(bh int) {
		bi, hh := bh/k.h, bh%k.h
		var P []T
		if probs == nil {
			P = scratchUninit[T](bs * k.tk)
			defer releaseScratch(P)
		}
		var M []T
		if k.mask == MaskPaper {
			M = scratchUninit[T](bs * k.tk)
			defer releaseScratch(M)
		}
		_, _, vo, yo := k.offsets(bi, hh)
		vh, ldv := in[2][vo:], k.hk*k.dv // the head's values, or their copy
		if headRowsCopied[T](k, k.dv) {
			vh, ldv = headRows(vh, ldv, k.tk, k.dv), k.dv
			defer releaseScratch(vh)
		}
		kT := keysT(bi, hh/(k.h/k.hk))
		off := bh * per
		for i0 := 0; i0 < k.tq; i0 += bs {
			i1 := min(i0+bs, k.tq)
			kmax := k.blockKeys(i1)
			if probs != nil {
				P = probs[off : off+(i1-i0)*kmax]
				off += (i1 - i0) * kmax
			}
			if k.mask != MaskPaper {
				M = P
			}
			attnProbs(k, in, kT, bi, hh, i0, i1, P, M)
			// 4. y = M v   (i1-i0, dv)
			if i1-i0 > attnBlock {
				attnWideNN(k, M, vh, ldv, k.dv, i0, i1, 1, 0, y[yo:], k.h*k.dv)
				continue
			}
			gemmHeadN(false, i1-i0, k.dv, kmax, 1, M, kmax, vh, ldv, 0, y[yo+i0*k.h*k.dv:], k.h*k.dv)
		}
	})
}

// dogeMaskBackward adds the scores' gradient dS of a block of rows to the
// doge bias's gradient [b, tk, h]: the bias of key j is added to every
// query's score of j.
func dogeMaskBackward[T floats](k attnKernel, dS, dBias []T, bi, hh, rows, kmax int) {
	for i := 0; i < rows; i++ {
		for j, v := range dS[i*kmax : (i+1)*kmax] {
			dBias[(bi*k.tk+j)*k.h+hh] += v
		}
	}
}

// attnBackward runs per (batch, kv head), so that the query heads sharing a
// kv head add into dk and dv on one goroutine.
func attnBackward[T floats](k attnKernel, in [][]T, g []T, d [][]T) {
	group := k.h / k.hk
	scale := 1 / math.Sqrt(float64(k.d))
	var dlParts [][]float64 // [b][h*tk] of the paper mask; kv heads write disjoint rows
	if k.mask == MaskPaper {
		dlParts = make([][]float64, k.b)
		for bi := range dlParts {
			dlParts[bi] = make([]float64, k.h*k.tk)
		}
	}
	probs, per := savedProbs(k, in), k.probsPerHead()
	// v (and k, if P is computed again) transposed (headCopies)
	vTs, valuesT := headsTransposed(k, in[2], k.hk, k.dv)
	defer releaseScratch(vTs)
	keysT := func(int, int) headT[T] { return headT[T]{} }
	if probs == nil {
		var kTs []T
		kTs, keysT = headsTransposed(k, in[1], k.hk, k.d)
		defer releaseScratch(kTs)
	}
	parallelFor(k.b*k.hk, func(bk int) {
		bi, kh := bk/k.hk, bk%k.hk
		bs := k.rowBlock()
		dM := scratchUninit[T](bs * k.tk)
		defer releaseScratch(dM)
		var P, M []T
		if probs == nil {
			P = scratchUninit[T](bs * k.tk)
			defer releaseScratch(P)
		}
		if k.mask == MaskPaper {
			M = scratchUninit[T](bs * k.tk)
			defer releaseScratch(M)
		}
		// the kv head's values (and keys, if P is computed again) as [d, tk]
		kT, vT := keysT(bi, kh), valuesT(bi, kh)
		// the kv head's keys for dq = dS k / sqrt(d), or their copy
		_, ko0, _, _ := k.offsets(bi, kh*group)
		keys, ldKeys := in[1][ko0:], k.hk*k.d
		if headRowsCopied[T](k, k.d) {
			keys, ldKeys = headRows(keys, ldKeys, k.tk, k.d), k.d
			defer releaseScratch(keys)
		}
		for hh := kh * group; hh < (kh+1)*group; hh++ {
			qo, ko, vo, yo := k.offsets(bi, hh)
			off := (bi*k.h + hh) * per
			for i0 := 0; i0 < k.tq; i0 += bs {
				i1 := min(i0+bs, k.tq)
				kmax, rows := k.blockKeys(i1), i1-i0
				if probs != nil {
					// the forward's P of this block: only M is left to form
					P = probs[off : off+rows*kmax]
					off += rows * kmax
				}
				if k.mask != MaskPaper {
					M = P
				}
				if probs != nil {
					paperMask(k, in, hh, rows, kmax, P, M)
				} else {
					attnProbs(k, in, kT, bi, hh, i0, i1, P, M)
				}
				wide := rows > attnBlock
				ldq, ldk, ldy, ldv := k.h*k.d, k.hk*k.d, k.h*k.dv, k.hk*k.dv
				// dM = dy v^T
				if wide {
					attnWideNT(k, g[yo:], ldy, in[2][vo:], ldv, vT, k.dv, i0, i1, 1, dM)
				} else {
					gemmHeadT(rows, kmax, k.dv, 1, g[yo+i0*ldy:], ldy, in[2][vo:], ldv, vT, dM, kmax)
				}
				if k.mask == MaskPaper {
					paperMaskBackwardRows(P, dM, in[3][hh*k.maxPos:], dlParts[bi][hh*k.tk:], rows, kmax)
				}
				// softmax: dS = P ∘ (dP - Σ_j dP P)
				softmaxGradRows(dM[:rows*kmax], P, dM, rows, kmax)
				// dv += M^T dy, after the softmax's gradient has streamed P
				// through the cache: read first by this product, P came
				// from memory by columns. (AM)4 at d_model 256, two shards:
				// the step −1.2% and −2.0% in two A/Bs (docs/performance.md,
				// "dv's product after the softmax's gradient")
				if wide {
					attnWideTN(k, M, g[yo:], ldy, k.dv, i0, i1, 1, d[2][vo:], ldv)
				} else {
					gemmHeadN(true, kmax, k.dv, rows, 1, M, kmax, g[yo+i0*ldy:], ldy, 1, d[2][vo:], ldv)
				}
				if k.mask == MaskDoge {
					dogeMaskBackward(k, dM, d[3], bi, hh, rows, kmax)
				}
				// dq = dS k / sqrt(d); dk += dS^T q / sqrt(d)
				if wide {
					attnWideNN(k, dM, keys, ldKeys, k.d, i0, i1, T(scale), 1, d[0][qo:], ldq)
					attnWideTN(k, dM, in[0][qo:], ldq, k.d, i0, i1, T(scale), d[1][ko:], ldk)
				} else {
					gemmHeadN(false, rows, k.d, kmax, T(scale), dM, kmax, keys, ldKeys, 1, d[0][qo+i0*ldq:], ldq)
					gemmHeadN(true, kmax, k.d, rows, T(scale), dM, kmax, in[0][qo+i0*ldq:], ldq, 1, d[1][ko:], ldk)
				}
			}
		}
	})
	if k.mask == MaskPaper {
		for _, part := range dlParts {
			for hh := 0; hh < k.h; hh++ {
				for j := 0; j < k.tk; j++ {
					d[3][hh*k.maxPos+j] += T(part[hh*k.tk+j])
				}
			}
		}
	}
}
