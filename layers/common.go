package layers

import (
	"math"
	"math/rand"

	G "gorgonia.org/gorgonia"

	"github.com/wonderful-matrices/wonderful-matrices-go/ops"
)

// linear is ops.Linear(x, p) under Must.
func linear(b *Builder, x *G.Node, p *Param) *G.Node { return b.Must(ops.Linear(x, b.Node(p))) }

// causalConv is the depthwise causal conv (kernel k) + SiLU of SSD's `conv`
// switch and of Mamba2, over x [b,t,c]. When decoding it prepends the last
// k-1 inputs kept in st under key (zeros before the first token, the same as
// the conv's own zero padding) and keeps the new last k-1.
func causalConv(b *Builder, st *State, key string, x *G.Node, w *Param, k int) *G.Node {
	if st == nil {
		return b.Must(ops.SiLU(b.Must(ops.Conv1DCausal(x, b.Node(w), nil))))
	}
	s := x.Shape()
	bs, t, c := s[0], s[1], s[2]
	full := b.Must(G.Concat(1, st.Get(b, key, bs, k-1, c), x))
	y := b.Must(ops.Conv1DCausal(full, b.Node(w), nil))
	y = b.Must(G.Slice(y, nil, G.S(k-1, k-1+t)))
	st.Set(key, b.Must(G.Slice(full, nil, G.S(t, t+k-1))))
	return b.Must(ops.SiLU(y))
}

// appendCache returns x [b,t,...] after the cached tokens of key (when
// decoding), and keeps the result as the new cache: the KV cache of the
// attention layers, growing along time.
func appendCache(b *Builder, st *State, key string, x *G.Node) *G.Node {
	if st == nil {
		return x
	}
	if st.Has(key) {
		x = b.Must(G.Concat(1, st.Get(b, key), x))
	}
	st.Set(key, x)
	return x
}

// ropeAt returns rope with its offset at the state's position (0 in training).
func ropeAt(rope ops.RopeConfig, st *State) ops.RopeConfig {
	if st != nil {
		rope.Offset = st.Pos
	}
	return rope
}

// resolveScan fills the defaults the SSD mixer and the Mamba2 block share:
// d_state 16, one group, chunks of 64, conv kernel 4.
func resolveScan(dState, groups, chunkLen, convKernel *int) {
	for _, f := range []struct {
		v   *int
		def int
	}{{dState, 16}, {groups, 1}, {chunkLen, 64}, {convKernel, 4}} {
		if *f.v == 0 {
			*f.v = f.def
		}
	}
}

// narrowProjections are the narrow projections of SSD and Mamba2, B = x W_B,
// C = x W_C [b,t,g·n] and dt = softplus(x W_dt + dt_bias) [b,t,h] (listing
// 4), from one product of x with the three weights side by side
// (ops.LinearCat) taken apart by ops.Columns: a BLAS runs one product of
// width 2·g·n + h far better than three that narrow, and x gets one
// gradient from the three instead of three summed.
func narrowProjections(b *Builder, x *G.Node, wb, wc, wdt, dtBias *Param) (B, C, dt *G.Node) {
	gn, h := wb.Shape[1], wdt.Shape[1]
	all := b.Must(ops.LinearCat(x, b.Node(wb), b.Node(wc), b.Node(wdt)))
	B = b.Must(ops.Columns(all, 0, gn))
	C = b.Must(ops.Columns(all, gn, 2*gn))
	dt = b.Must(ops.Columns(all, 2*gn, 2*gn+h))
	return B, C, b.Must(ops.Softplus(b.Must(ops.AddBias(dt, b.Node(dtBias)))))
}

// decay is SSD's A = -exp(A_log), [h] (listing 4).
func decay(b *Builder, aLog *Param) *G.Node {
	return b.Must(G.Neg(b.Must(G.Exp(b.Node(aLog)))))
}

// dtBiasInit draws SSD's dt_bias as Mamba2 does (SPEC §3): dt log-uniform in
// [0.001, 0.1], floored at 1e-4, then the inverse softplus, so that
// softplus(dt_bias) = dt.
func dtBiasInit(r *rand.Rand, dst []float64) {
	lo, hi := math.Log(0.001), math.Log(0.1)
	for i := range dst {
		dt := math.Max(math.Exp(lo+(hi-lo)*r.Float64()), 1e-4)
		dst[i] = dt + math.Log(-math.Expm1(-dt))
	}
}

// aLogRange sets A_log = log(1..h), listing 4 of Wonderful Matrices.
func aLogRange(_ *rand.Rand, dst []float64) {
	for i := range dst {
		dst[i] = math.Log(float64(i + 1))
	}
}

// convInit is PyTorch's default for a depthwise Conv1d (fan_in = kernel):
// uniform in ±1/sqrt(k).
func convInit(k int) func(*rand.Rand, []float64) {
	a := 1 / math.Sqrt(float64(k))
	return uniformInit(-a, a)
}
