package ops

import (
	"fmt"

	"github.com/pkg/errors"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// SSDInputs are the tensors of the state-space-duality scan (Wonderful
// Matrices listing 3; Mamba2's SSD): x [b,t,h,p], dt [b,t,h] (already
// positive), A [h] (negative), B, C [b,t,g,n] with g dividing h (head i
// reads group i/(h/g), Mamba2's ngroups; g = h gives every head its own),
// optional D [h] (the skip term) and optional H0 [b,h,p,n], the state before
// the first token (nil = zeros). Heads that share a group share the chunks'
// C Bᵀ and run their state products (C Hᵀ, Wᵀ B and their gradients) as one
// product per chunk (ssdUnit).
//
// Narrow, when set, is SSDNarrow's result and stands for DT, B and C, which
// are then nil: the scan reads the three from that one vector, and its
// gradient goes back through SSDNarrow in one node.
type SSDInputs struct {
	X, DT, A, B, C *G.Node
	D, H0          *G.Node
	Narrow         *G.Node
}

// SSD computes y [b,t,h,p] of the recurrence
//
//	H_s = exp(dt_s*A) * H_{s-1} + (dt_s*x_s) ⊗ B_s,   y_s = H_s · C_s + D*x_s
//
// (H is [p,n] per head, H_{-1} = H0 or 0) by the chunked algorithm of listing 3
// of Wonderful Matrices: an intra-chunk quadratic part G∘L (L the stable segment
// sum of dt*A, never exp(-cumsum) alone) and inter-chunk state passing. The
// forward forms G∘L U as diag(1/w) tril(G) (w·U), with w the decays to the
// chunk's end, wherever they stay within [2⁻⁶⁰, 2⁶⁰] (ssdFactorable: every
// head in one product), and from the differences of the cumulative sum
// elsewhere; the backward takes the same form where the forward's product
// takes all of a unit's heads on OpenBLAS's small kernels
// (ssdBackwardFactored: d_model 64's heads of 16), and the differences
// elsewhere. Any t works: the last chunk is shorter (the listing pads it,
// which is the same).
// Every input, H0 included, is differentiable.
func SSD(in SSDInputs, chunkLen int) (*G.Node, error) { return ssdApply(in, chunkLen, ssdOutY) }

// SSDFinalState computes the state H after the last token, [b,h,p,n], by the
// same chunked scan; decoding continues from it with SSDStep. It is
// differentiable like SSD.
func SSDFinalState(in SSDInputs, chunkLen int) (*G.Node, error) {
	return ssdApply(in, chunkLen, ssdOutState)
}

// SSDStep advances the recurrence by the tokens of in (usually one) from the
// state in.H0 and returns their outputs and the new state: constant memory
// per token for decoding (SPEC §2).
func SSDStep(in SSDInputs) (y, state *G.Node, err error) {
	if in.H0 == nil {
		return nil, nil, errors.New("ssd step: H0, the state to advance, is nil")
	}
	t := in.X.Shape()[1]
	if y, err = ssdApply(in, t, ssdOutY); err != nil {
		return nil, nil, err
	}
	state, err = ssdApply(in, t, ssdOutState)
	return y, state, err
}

type ssdOutput int

const (
	ssdOutY ssdOutput = iota
	ssdOutState
)

func ssdApply(in SSDInputs, chunkLen int, out ssdOutput) (*G.Node, error) {
	if in.Narrow != nil {
		return ssdApplyNarrow(in, chunkLen, out)
	}
	if in.X == nil || in.DT == nil || in.A == nil || in.B == nil || in.C == nil {
		return nil, errors.New("ssd: x, dt, A, B and C are required")
	}
	xs := in.X.Shape()
	if xs.Dims() != 4 {
		return nil, errors.Errorf("ssd: x must be [b,t,h,p], got %v", xs)
	}
	b, t, h, p := xs[0], xs[1], xs[2], xs[3]
	bs := in.B.Shape()
	if bs.Dims() != 4 || bs[0] != b || bs[1] != t || bs[2] < 1 || h%bs[2] != 0 {
		return nil, errors.Errorf("ssd: B must be [b,t,g,n] = [%d,%d,g,n] with g dividing h = %d, got %v", b, t, h, bs)
	}
	k := ssdKernel{b: b, t: t, h: h, g: bs[2], p: p, n: bs[3], chunk: chunkLen, hasD: in.D != nil, hasH0: in.H0 != nil,
		out: out, saved: &ssdSaved{}}
	return applySSD(k, in, []*G.Node{in.X, in.DT, in.A, in.B, in.C}, []string{"x", "dt", "A", "B", "C"}, xs, bs)
}

// ssdApplyNarrow is ssdApply for inputs whose dt, B and C are one
// SSDNarrow vector.
func ssdApplyNarrow(in SSDInputs, chunkLen int, out ssdOutput) (*G.Node, error) {
	if in.DT != nil || in.B != nil || in.C != nil {
		return nil, errors.New("ssd: Narrow stands for dt, B and C, which must then be nil")
	}
	if in.X == nil || in.A == nil {
		return nil, errors.New("ssd: x and A are required")
	}
	nk, ok := narrowKernelOf(in.Narrow)
	if !ok {
		return nil, errors.Errorf("ssd: Narrow (%s) must be SSDNarrow's result", in.Narrow.Name())
	}
	xs := in.X.Shape()
	if xs.Dims() != 4 || xs[0] != nk.b || xs[1] != nk.t || xs[2] != nk.h || nk.h%nk.g != 0 {
		return nil, errors.Errorf("ssd: x must be [b,t,h,p] = [%d,%d,%d,p] for Narrow's b, t and h (h a multiple of its %d groups), got %v",
			nk.b, nk.t, nk.h, nk.g, xs)
	}
	k := ssdKernel{b: nk.b, t: nk.t, h: nk.h, g: nk.g, p: xs[3], n: nk.n, chunk: chunkLen, hasD: in.D != nil,
		hasH0: in.H0 != nil, narrow: true, out: out, saved: &ssdSaved{}}
	return applySSD(k, in, []*G.Node{in.X, in.Narrow, in.A}, []string{"x", "Narrow", "A"}, xs, nk.bcShape())
}

// applySSD checks the optional inputs and every input's shape against k's,
// then applies k; nodes and names are the required inputs.
func applySSD(k ssdKernel, in SSDInputs, nodes []*G.Node, names []string, xs, bs tensor.Shape) (*G.Node, error) {
	if k.chunk < 1 {
		return nil, errors.Errorf("ssd: chunk_len must be >= 1, got %d", k.chunk)
	}
	if in.D != nil {
		nodes, names = append(nodes, in.D), append(names, "D")
	}
	if in.H0 != nil {
		nodes, names = append(nodes, in.H0), append(names, "H0")
	}
	for i, s := range k.inShapes() {
		if !nodes[i].Shape().Eq(s) {
			return nil, errors.Errorf("ssd: %s must be %v for x %v and B %v, got %v", names[i], s, xs, bs, nodes[i].Shape())
		}
	}
	return apply(k, nodes...)
}

// ssdKernel is the fused chunked SSD scan and its backward pass.
type ssdKernel struct {
	b, t, h, p, n int
	g             int // groups of B and C
	chunk         int
	hasD, hasH0   bool
	// narrow: dt, B and C come as one SSDNarrow vector, [B | C | dt].
	narrow bool
	out    ssdOutput
	// blocks is the number of units each group of heads is split into for
	// one pass (withUnits; not an attribute: it is no part of the result's
	// definition).
	blocks int
	// saved is shared by the op and its gradient op: the states its forward
	// passed between chunks (not an attribute: no hash).
	saved *ssdSaved
}

// ssdSaved is the state entering every chunk of every (batch, head),
// [b, nChunks+1, h, p, n] with the final state last, from the forward for
// its backward in the same run (which otherwise runs the state passing
// again), for the same x, dt and B (forwardSave). It is kept only when the
// graph takes the op's gradient (wanted, set by SymDiff): an evaluation
// forward copies no states.
type ssdSaved struct {
	forwardSave
	wanted bool
	states any // []float32 or []float64
}

// gradientWanted is called when the graph takes the op's gradient.
func (k ssdKernel) gradientWanted() {
	if k.saved != nil {
		k.saved.wanted = true
	}
}

// releaseSaved is called by ReleaseBuffers. It keeps wanted: the graph
// still takes the gradient.
func (k ssdKernel) releaseSaved() {
	if k.saved != nil {
		*k.saved = ssdSaved{wanted: k.saved.wanted}
	}
}

// chunks is the number of chunks of the scan.
func (k ssdKernel) chunks() int { return (k.t + k.chunk - 1) / k.chunk }

// savedStates returns the forward's states when the backward may use them
// (and marks them used), or nil.
func savedStates[T floats](k ssdKernel, a ssdArgs[T]) []T {
	sv := k.saved
	if sv == nil || !sv.take(a.x, a.dt, a.B) {
		return nil
	}
	s, _ := sv.states.([]T)
	return s
}

// statesBuffer is where the forward writes its states, kept from run to
// run, or nil when no backward will take them.
func statesBuffer[T floats](k ssdKernel, a ssdArgs[T]) []T {
	sv := k.saved
	if sv == nil || !sv.wanted {
		return nil
	}
	n := k.b * k.h * (k.chunks() + 1) * k.p * k.n
	s, ok := sv.states.([]T)
	if !ok || len(s) != n {
		s = make([]T, n)
	}
	sv.states = s
	sv.keep(a.x, a.dt, a.B)
	return s
}

func (k ssdKernel) name() string { return "ssd" }
func (k ssdKernel) attrs() string {
	return fmt.Sprintf("chunk=%d,groups=%d,D=%v,H0=%v,narrow=%v,out=%d", k.chunk, k.g, k.hasD, k.hasH0, k.narrow, k.out)
}
func (k ssdKernel) inShapes() []tensor.Shape {
	s := []tensor.Shape{{k.b, k.t, k.h, k.p}, {k.b, k.t, k.h}, {k.h}, {k.b, k.t, k.g, k.n}, {k.b, k.t, k.g, k.n}}
	if k.narrow {
		s = []tensor.Shape{s[0], {k.b * k.t * (2*k.g*k.n + k.h)}, s[2]}
	}
	if k.hasD {
		s = append(s, tensor.Shape{k.h})
	}
	if k.hasH0 {
		s = append(s, tensor.Shape{k.b, k.h, k.p, k.n})
	}
	return s
}
func (k ssdKernel) outShape() tensor.Shape {
	if k.out == ssdOutState {
		return tensor.Shape{k.b, k.h, k.p, k.n}
	}
	return tensor.Shape{k.b, k.t, k.h, k.p}
}
func (k ssdKernel) diffWRT() []bool {
	d := make([]bool, len(k.inShapes()))
	for i := range d {
		d[i] = true
	}
	return d
}

// The forward writes every y (or every final state); the backward adds into
// its gradients.
func (k ssdKernel) writesWholeOutput() bool { return true }

// ssdArgs names the kernel's inputs (D and H0 nil when absent).
type ssdArgs[T floats] struct{ x, dt, A, B, C, D, H0 []T }

func (k ssdKernel) args32(in []any) ssdArgs[float32] { return ssdUnpack(k, as[float32](in)) }
func (k ssdKernel) args64(in []any) ssdArgs[float64] { return ssdUnpack(k, as[float64](in)) }

// ssdUnpack names the kernel's inputs (or their gradients: the same
// layout), taking dt, B and C out of the narrow vector when there is one.
func ssdUnpack[T floats](k ssdKernel, in [][]T) ssdArgs[T] {
	var a ssdArgs[T]
	i := 5
	if k.narrow {
		s := k.b * k.t * k.g * k.n
		v := in[1]
		a = ssdArgs[T]{x: in[0], dt: v[2*s:], A: in[2], B: v[:s], C: v[s : 2*s]}
		i = 3
	} else {
		a = ssdArgs[T]{x: in[0], dt: in[1], A: in[2], B: in[3], C: in[4]}
	}
	if k.hasD {
		a.D = in[i]
		i++
	}
	if k.hasH0 {
		a.H0 = in[i]
	}
	return a
}

func (k ssdKernel) forward(in []any, out any) error {
	switch o := out.(type) {
	case []float32:
		ssdForward(k, k.args32(in), o)
	case []float64:
		ssdForward(k, k.args64(in), o)
	}
	return nil
}

func (k ssdKernel) backward(in []any, out, dOut any, dIn []any) error {
	switch g := dOut.(type) {
	case []float32:
		ssdBackward(k, k.args32(in), g, ssdUnpack(k, as[float32](dIn)))
	case []float64:
		ssdBackward(k, k.args64(in), g, ssdUnpack(k, as[float64](dIn)))
	}
	return nil
}
