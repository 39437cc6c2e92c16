package ops

import "math"

// ssdChunk is the per-(batch, head) scratch of one chunk of the scan. All
// matrices are row-major; L <= chunk is the chunk's length.
type ssdChunk[T floats] struct {
	cum  []float64 // [L]   cumulative sum of dt*A inside the chunk
	U    []T       // [L,p] dt_j * x_j
	Gm   []T       // [L,L] C B^T, then masked to M = G ∘ exp(segsum)
	tmp  []T       // [L,p] C H^T (state read-out before decay)
	W    []T       // [L,p] exp(cum_last - cum_j) * U_j
	Yc   []T       // [L,p]
	seg  []T       // [L,L] exp(cum_i - cum_j), i >= j
	dG   []T       // [L,L]
	dU   []T       // [L,p]
	dY   []T       // [L,p]
	dW   []T       // [L,p]
	dcum []float64 // [L]
	// segRow is row i of exp(segsum) in float64 while seg is filled.
	segRow []float64 // [L]
	// The chunk's decays in float64, from one exp per token: r_i =
	// exp(cum_i − cum_{i−1}) (r_0 = exp(cum_0)), e_i = exp(cum_i) =
	// r_0⋯r_i and w_j = exp(cum_last − cum_j) = r_{j+1}⋯r_last.
	r, e, w []float64 // [L]
}

// newSSDChunk takes the workspace from the scratch pools; release hands
// it back.
func newSSDChunk[T floats](chunk, p int) *ssdChunk[T] {
	return &ssdChunk[T]{
		cum: scratch[float64](chunk), U: scratch[T](chunk * p), Gm: scratch[T](chunk * chunk),
		tmp: scratch[T](chunk * p), W: scratch[T](chunk * p), Yc: scratch[T](chunk * p),
		seg: scratch[T](chunk * chunk), dG: scratch[T](chunk * chunk), dU: scratch[T](chunk * p),
		dY: scratch[T](chunk * p), dW: scratch[T](chunk * p), dcum: scratch[float64](chunk),
		segRow: scratch[float64](chunk),
		r:      scratch[float64](chunk), e: scratch[float64](chunk), w: scratch[float64](chunk),
	}
}

func (c *ssdChunk[T]) release() {
	for _, s := range [][]T{c.U, c.Gm, c.tmp, c.W, c.Yc, c.seg, c.dG, c.dU, c.dY, c.dW} {
		releaseScratch(s)
	}
	for _, s := range [][]float64{c.cum, c.dcum, c.segRow, c.r, c.e, c.w} {
		releaseScratch(s)
	}
}

// ssdView locates one (batch, head) inside the [b,t,h,*] tensors and its
// group inside B and C [b,t,g,n]. The gradients of B and C have their own
// offset and leading dimension: with fewer groups than heads each head
// writes its own [b,t,h,n] partial (ssdGroupGrads).
type ssdView struct {
	k          ssdKernel
	bi, hh, gi int // batch, head, and the head's group
	ldx, ldbc  int // leading dimensions: h*p and g*n
	xo, bo, do int // offsets of token 0 in x, in B/C and in dt
	dbo, lddbc int // offset and leading dimension of token 0 in dB/dC
}

func (k ssdKernel) view(bh int) ssdView {
	bi, hh := bh/k.h, bh%k.h
	gi := hh / (k.h / k.g)
	v := ssdView{k: k, bi: bi, hh: hh, gi: gi, ldx: k.h * k.p, ldbc: k.g * k.n,
		xo: bi*k.t*k.h*k.p + hh*k.p, bo: bi*k.t*k.g*k.n + gi*k.n, do: bi*k.t*k.h + hh}
	v.dbo, v.lddbc = v.bo, v.ldbc
	if k.g < k.h {
		v.dbo, v.lddbc = bi*k.t*k.h*k.n+hh*k.n, k.h*k.n
	}
	return v
}

// ssdGroupBlocks computes G = C Bᵀ of every chunk of every (batch, group)
// once, [b, g, chunks, chunk, chunk] (a chunk of L tokens uses the first L²
// as an L×L matrix), when heads share groups: every head of a group has the
// same G. It returns nil when each head has its own B and C.
func ssdGroupBlocks[T floats](k ssdKernel, a ssdArgs[T]) []T {
	if k.g == k.h {
		return nil
	}
	nc, cc := k.chunks(), k.chunk*k.chunk
	blocks := scratchUninit[T](k.b * k.g * nc * cc) // each block written whole by its gemm
	ld := k.g * k.n
	parallelFor(k.b*k.g*nc, func(i int) {
		bg, ci := i/nc, i%nc
		bi, gi := bg/k.g, bg%k.g
		s0 := ci * k.chunk
		L := min(k.chunk, k.t-s0)
		o := bi*k.t*ld + gi*k.n + s0*ld
		gemm(false, true, L, L, k.n, 1, a.C[o:], ld, a.B[o:], ld, 0, blocks[i*cc:], L)
	})
	return blocks
}

// groupBlock is chunk ci's G for the head of v, from ssdGroupBlocks' blocks
// (nil when there are none).
func groupBlock[T floats](v ssdView, blocks []T, ci int) []T {
	if blocks == nil {
		return nil
	}
	k, cc := v.k, v.k.chunk*v.k.chunk
	o := ((v.bi*k.g+v.gi)*k.chunks() + ci) * cc
	return blocks[o : o+cc]
}

// ssdGroupGrads are per-head partials of dB and dC [b,t,h,n] when heads share
// groups (nil otherwise), so that the heads, run in parallel, never write
// the same group's rows; sum adds them to dB and dC in head order.
type ssdGroupGrads[T floats] struct{ dB, dC []T }

func newSSDGroupGrads[T floats](k ssdKernel) ssdGroupGrads[T] {
	if k.g == k.h {
		return ssdGroupGrads[T]{}
	}
	n := k.b * k.t * k.h * k.n
	return ssdGroupGrads[T]{scratch[T](n), scratch[T](n)}
}

// sum adds the partials into d.B and d.C (each group's heads in order) and
// hands them back to the pools.
func (gg ssdGroupGrads[T]) sum(k ssdKernel, d ssdArgs[T]) {
	if gg.dB == nil {
		return
	}
	per := k.h / k.g
	for _, pair := range [][2][]T{{d.B, gg.dB}, {d.C, gg.dC}} {
		dst, src := pair[0], pair[1]
		if dst != nil {
			for r := 0; r < k.b*k.t; r++ {
				for hh := 0; hh < k.h; hh++ {
					gr := dst[(r*k.g+hh/per)*k.n : (r*k.g+hh/per+1)*k.n]
					for j, v := range src[(r*k.h+hh)*k.n : (r*k.h+hh+1)*k.n] {
						gr[j] += v
					}
				}
			}
		}
		releaseScratch(src)
	}
}

// prepare fills cum, U, W and, when withG, the masked G of the chunk starting
// at token s0 with L tokens (G copied from shared when not nil), and when
// withSeg also seg (only the backward pass reads it). It returns
// exp(cum_last), the chunk's decay.
func prepare[T floats](v ssdView, a ssdArgs[T], c *ssdChunk[T], s0, L int, withG, withSeg bool, shared []T) float64 {
	k := v.k
	A := float64(a.A[v.hh])
	// 1. cumulative decay inside the chunk, in float64 (listing 3's A_cumsum)
	var acc float64
	for i := 0; i < L; i++ {
		acc += float64(a.dt[v.do+(s0+i)*k.h]) * A
		c.cum[i] = acc
	}
	// The decays as running products of one exp per token: the factors are
	// ≤ 1 for SSD's A < 0 and dt > 0, so the products only shrink (where
	// one underflows, the direct exp is as small), and float64 keeps their
	// relative error near L·2⁻⁵³.
	prev := 0.0
	for i := 0; i < L; i++ {
		c.r[i] = math.Exp(c.cum[i] - prev)
		prev = c.cum[i]
		if i == 0 {
			c.e[0] = c.r[0]
		} else {
			c.e[i] = c.e[i-1] * c.r[i]
		}
	}
	c.w[L-1] = 1
	for j := L - 2; j >= 0; j-- {
		c.w[j] = c.w[j+1] * c.r[j+1]
	}
	// 2. U = dt*x and W = exp(cum_last - cum_j) * U (decay_states of listing 3)
	for i := 0; i < L; i++ {
		d := a.dt[v.do+(s0+i)*k.h]
		o := v.xo + (s0+i)*v.ldx
		xr := a.x[o : o+k.p]
		U, W := c.U[i*k.p:(i+1)*k.p], c.W[i*k.p:(i+1)*k.p]
		w := T(c.w[i])
		for j, xv := range xr {
			u := d * xv
			U[j] = u
			W[j] = w * u
		}
	}
	if withG {
		// 3. G = C B^T, then M = G ∘ exp(segsum): the stable segment sum
		// exp(cum_i - cum_j) is formed from the difference, never from
		// exp(cum_i)*exp(-cum_j), so strong decay cannot overflow.
		//
		// Row i is row i−1 times r_i = exp(cum_i − cum_{i−1}) = exp(dt_i·A),
		// so no exp per element (they were most of the exponentials of a
		// d_model-64 step).
		if shared != nil {
			copy(c.Gm[:L*L], shared[:L*L]) // the group's G, computed once for its heads
		} else {
			gemm(false, true, L, L, k.n, 1, a.C[v.bo+s0*v.ldbc:], v.ldbc, a.B[v.bo+s0*v.ldbc:], v.ldbc, 0, c.Gm, L)
		}
		var seg []T
		if withSeg {
			seg = c.seg
		}
		ssdMask(c.Gm, seg, c.segRow, c.r, L)
	}
	return c.e[L-1]
}

// ssdMask multiplies gm [L,L] by exp(segsum), whose row i is row i−1 times
// r_i with a 1 on the diagonal (row is float64 scratch of L), zeroes gm above
// the diagonal, and writes exp(segsum) into seg when seg is not nil. Float32
// goes to C under the openblas build (ssdMask32).
func ssdMask[T floats](gm, seg []T, row, r []float64, L int) {
	if g32, ok := any(gm).([]float32); ok {
		s32, _ := any(seg).([]float32)
		ssdMask32(g32, s32, row, r, L)
		return
	}
	ssdMaskGo(gm, seg, row, r, L)
}

func ssdMaskGo[T floats](gm, seg []T, row, r []float64, L int) {
	row = row[:L]
	for i := 0; i < L; i++ {
		if i > 0 {
			ri := r[i]
			for j := 0; j < i; j++ {
				row[j] *= ri
			}
		}
		row[i] = 1
		g := gm[i*L : i*L+L]
		for j, e := range row[:i+1] {
			g[j] *= T(e)
		}
		clear(g[i+1:])
		if seg != nil {
			s := seg[i*L : i*L+L]
			for j, e := range row[:i+1] {
				s[j] = T(e)
			}
			clear(s[i+1:])
		}
	}
}

// advance moves the state across the chunk: H = E*H + W^T B.
func advance[T floats](v ssdView, a ssdArgs[T], c *ssdChunk[T], H []T, s0, L int, E float64) {
	for i := range H {
		H[i] *= T(E)
	}
	gemm(true, false, v.k.p, v.k.n, L, 1, c.W, v.k.p, a.B[v.bo+s0*v.ldbc:], v.ldbc, 1, H, v.k.n)
}

func ssdForward[T floats](k ssdKernel, a ssdArgs[T], out []T) {
	states := statesBuffer(k, a) // the state entering each chunk, for the backward
	var blocks []T
	if k.out == ssdOutY {
		blocks = ssdGroupBlocks(k, a)
		defer releaseScratch(blocks)
	}
	span := (k.chunks() + 1) * k.p * k.n
	parallelFor(k.b*k.h, func(bh int) {
		v := k.view(bh)
		c := newSSDChunk[T](k.chunk, k.p)
		defer c.release()
		H := scratch[T](k.p * k.n)
		defer releaseScratch(H)
		if a.H0 != nil {
			copy(H, a.H0[bh*k.p*k.n:])
		}
		for s0 := 0; s0 < k.t; s0 += k.chunk {
			L := min(k.chunk, k.t-s0)
			if states != nil {
				copy(states[bh*span+s0/k.chunk*len(H):], H)
			}
			E := prepare(v, a, c, s0, L, k.out == ssdOutY, false, groupBlock(v, blocks, s0/k.chunk))
			if k.out == ssdOutY {
				ssdChunkOutput(v, a, c, H, s0, L, out)
			}
			advance(v, a, c, H, s0, L, E)
		}
		if states != nil {
			copy(states[(bh+1)*span-len(H):], H)
		}
		if k.out == ssdOutState {
			copy(out[bh*k.p*k.n:(bh+1)*k.p*k.n], H)
		}
	})
}

// ssdChunkOutput writes y for the chunk: Y = M U (diagonal block) +
// exp(cum_i) C_i H^T (state from earlier chunks) + D x.
func ssdChunkOutput[T floats](v ssdView, a ssdArgs[T], c *ssdChunk[T], H []T, s0, L int, out []T) {
	k := v.k
	gemm(false, false, L, k.p, L, 1, c.Gm, L, c.U, k.p, 0, c.Yc, k.p)
	gemm(false, true, L, k.p, k.n, 1, a.C[v.bo+s0*v.ldbc:], v.ldbc, H, k.n, 0, c.tmp, k.p)
	for i := 0; i < L; i++ {
		e := T(c.e[i])
		o := v.xo + (s0+i)*v.ldx
		yr, yc, tm := out[o:o+k.p], c.Yc[i*k.p:(i+1)*k.p], c.tmp[i*k.p:(i+1)*k.p]
		if a.D == nil {
			for j, yv := range yc {
				yr[j] = yv + e*tm[j]
			}
			continue
		}
		Dh, xr := a.D[v.hh], a.x[o:o+k.p]
		for j, yv := range yc {
			yr[j] = yv + e*tm[j] + Dh*xr[j]
		}
	}
}

// ssdBackward computes every gradient of the scan in one reverse pass over the
// chunks. g is dL/dy ([b,t,h,p]) or dL/dH_final ([b,h,p,n]) as k.out says.
//
// Per chunk, with U_j = dt_j x_j, cum the in-chunk cumsum of dt*A,
// seg_ij = exp(cum_i - cum_j), e_i = exp(cum_i), w_j = exp(cum_L - cum_j),
// E = exp(cum_L):
//
//	Y_i    = Σ_{j<=i} (C_i·B_j) seg_ij U_j + e_i H C_i + D x_i
//	H_next = E H + Σ_j w_j U_j ⊗ B_j
//
// The reverse pass starts from dH_next, adds the terms of both lines to dU,
// dB, dC, dD and to dcum (each exp's derivative is itself), turns dcum into
// d(dt*A) by a reverse cumsum, and hands dH (E dH_next + Σ e_i dY_i ⊗ C_i) to
// the previous chunk; what is left after the first chunk is dH0.
func ssdBackward[T floats](k ssdKernel, a ssdArgs[T], g []T, d ssdArgs[T]) {
	nChunks := k.chunks()
	dAparts := make([]float64, k.b*k.h)
	dDparts := make([]float64, k.b*k.h)
	saved := savedStates(k, a)
	var blocks []T
	if k.out == ssdOutY {
		blocks = ssdGroupBlocks(k, a)
		defer releaseScratch(blocks)
	}
	gg := newSSDGroupGrads[T](k)
	dg := d // the heads' dB and dC: d's own, or per-head partials
	if gg.dB != nil {
		dg.B, dg.C = gg.dB, gg.dC
	}
	parallelFor(k.b*k.h, func(bh int) {
		v := k.view(bh)
		c := newSSDChunk[T](k.chunk, k.p)
		defer c.release()
		pn := k.p * k.n
		var states []T
		if saved != nil {
			states = saved[bh*(nChunks+1)*pn : (bh+1)*(nChunks+1)*pn]
		} else {
			states = ssdChunkStates(k, v, a, c, bh, nChunks)
			defer releaseScratch(states)
		}
		dH := make([]T, pn) // dL/d(state leaving the current chunk)
		if k.out == ssdOutState {
			copy(dH, g[bh*pn:(bh+1)*pn])
		}
		dHin := make([]T, pn)
		var dA, dD float64
		for ci := nChunks - 1; ci >= 0; ci-- {
			s0 := ci * k.chunk
			L := min(k.chunk, k.t-s0)
			H := states[ci*pn : (ci+1)*pn]
			E := prepare(v, a, c, s0, L, k.out == ssdOutY, k.out == ssdOutY, groupBlock(v, blocks, ci))
			ssdStatePassingBackward(k, v, a, dg, c, H, dH, dHin, s0, L, E)
			if k.out == ssdOutY {
				ssdChunkOutputBackward(v, a, dg, c, g, H, dHin, s0, L, &dD)
			}
			ssdDecayBackward(k, v, a, d, c, s0, L, &dA)
			dH, dHin = dHin, dH
		}
		if d.H0 != nil {
			copy(d.H0[bh*pn:(bh+1)*pn], dH)
		}
		dAparts[bh], dDparts[bh] = dA, dD
	})
	gg.sum(k, d)
	for bh := range dAparts {
		d.A[bh%k.h] += T(dAparts[bh])
		if d.D != nil {
			d.D[bh%k.h] += T(dDparts[bh])
		}
	}
}

// ssdChunkStates runs the forward again for one (batch, head), keeping the
// state entering every chunk (nChunks+1 states of p·n, from scratch).
func ssdChunkStates[T floats](k ssdKernel, v ssdView, a ssdArgs[T], c *ssdChunk[T], bh, nChunks int) []T {
	pn := k.p * k.n
	states := scratch[T]((nChunks + 1) * pn)
	if a.H0 != nil {
		copy(states, a.H0[bh*pn:(bh+1)*pn])
	}
	for ci := 0; ci < nChunks; ci++ {
		s0 := ci * k.chunk
		L := min(k.chunk, k.t-s0)
		copy(states[(ci+1)*pn:(ci+2)*pn], states[ci*pn:(ci+1)*pn])
		E := prepare(v, a, c, s0, L, false, false, nil)
		advance(v, a, c, states[(ci+1)*pn:(ci+2)*pn], s0, L, E)
	}
	return states
}

// ssdStatePassingBackward is the gradient of the state passing
// H_next = E*H + W^T B for one chunk: dHin = E dH, dB += W dH, dU = w dW,
// and the decays' part of dcum (cleared first).
func ssdStatePassingBackward[T floats](k ssdKernel, v ssdView, a, d ssdArgs[T], c *ssdChunk[T], H, dH, dHin []T, s0, L int, E float64) {
	Bc, dBc := a.B[v.bo+s0*v.ldbc:], d.B[v.dbo+s0*v.lddbc:]
	for i := range c.dcum[:L] {
		c.dcum[i] = 0
	}
	for i := range dHin {
		dHin[i] = T(E) * dH[i]
	}
	var dE float64
	for i := range dH {
		dE += float64(dH[i]) * float64(H[i])
	}
	c.dcum[L-1] += dE * E
	// dW = B dH^T; dB += W dH; dU += w*dW; dw_j = dW_j·U_j
	gemm(false, true, L, k.p, k.n, 1, Bc, v.ldbc, dH, k.n, 0, c.dW, k.p)
	gemm(false, false, L, k.n, k.p, 1, c.W, k.p, dH, k.n, 1, dBc, v.lddbc)
	for j := 0; j < L; j++ {
		w := c.w[j]
		dW, U, dU := c.dW[j*k.p:(j+1)*k.p], c.U[j*k.p:(j+1)*k.p], c.dU[j*k.p:(j+1)*k.p]
		var dw float64
		for q, dv := range dW {
			dw += float64(dv) * float64(U[q])
			dU[q] = T(w) * dv
		}
		c.dcum[L-1] += dw * w
		c.dcum[j] -= dw * w
	}
}

// ssdDecayBackward turns the chunk's dcum and dU into dx and ddt (cum_i =
// Σ_{r<=i} dt_r A, so da_r = Σ_{i>=r} dcum_i; U = dt·x) and adds the
// chunk's terms of dA to *dA, in the order the loop over chunks always did.
func ssdDecayBackward[T floats](k ssdKernel, v ssdView, a, d ssdArgs[T], c *ssdChunk[T], s0, L int, dA *float64) {
	A := float64(a.A[v.hh])
	var da float64
	for r := L - 1; r >= 0; r-- {
		da += c.dcum[r]
		dto := v.do + (s0+r)*k.h
		dtv := float64(a.dt[dto])
		xr := a.x[v.xo+(s0+r)*v.ldx:]
		dxr := d.x[v.xo+(s0+r)*v.ldx:]
		// U = dt*x: dx += dt*dU, ddt += dU·x
		dU := c.dU[r*k.p : (r+1)*k.p]
		xr, dxr = xr[:len(dU)], dxr[:len(dU)]
		var ddt float64
		for q, u := range dU {
			ddt += float64(u) * float64(xr[q])
			dxr[q] += T(dtv) * u
		}
		d.dt[dto] += T(ddt + da*A)
		*dA += da * dtv
	}
}

// ssdChunkOutputBackward adds the gradients of the chunk's output
// Y_i = Σ_{j<=i} G_ij seg_ij U_j + e_i H C_i + D x_i, given dY from g.
// It accumulates into dU (which it expects to hold the state-passing part),
// dcum, dB, dC, dx, dHin (the state entering the chunk) and *dD.
func ssdChunkOutputBackward[T floats](v ssdView, a, d ssdArgs[T], c *ssdChunk[T], g, H, dHin []T, s0, L int, dD *float64) {
	k := v.k
	Cc, Bc := a.C[v.bo+s0*v.ldbc:], a.B[v.bo+s0*v.ldbc:]
	dCc, dBc := d.C[v.dbo+s0*v.lddbc:], d.B[v.dbo+s0*v.lddbc:]
	var dDc float64 // the chunk's dD, summed in the order of the loop
	for i := 0; i < L; i++ {
		o := v.xo + (s0+i)*v.ldx
		gr := g[o : o+k.p]
		copy(c.dY[i*k.p:(i+1)*k.p], gr)
		if a.D != nil {
			Dh := a.D[v.hh]
			xr, dxr := a.x[o:o+k.p], d.x[o:o+k.p]
			for q, gv := range gr {
				dDc += float64(gv) * float64(xr[q])
				dxr[q] += Dh * gv
			}
		}
	}
	*dD += dDc
	// Diagonal block. Q = dY U^T; dG = seg∘Q; dU += M^T dY; R = G∘dG feeds dcum.
	gemm(false, true, L, L, k.p, 1, c.dY, k.p, c.U, k.p, 0, c.dG, L)
	gemm(true, false, L, k.p, L, 1, c.Gm, L, c.dY, k.p, 1, c.dU, k.p)
	ssdMaskGrad(c.Gm, c.seg, c.dG, c.dcum, L)
	gemm(false, false, L, k.n, L, 1, c.dG, L, Bc, v.ldbc, 1, dCc, v.lddbc)
	gemm(true, false, L, k.n, L, 1, c.dG, L, Cc, v.ldbc, 1, dBc, v.lddbc)
	// State read-out Y_i += e_i H C_i: dY scaled by e_i is dYe.
	gemm(false, true, L, k.p, k.n, 1, Cc, v.ldbc, H, k.n, 0, c.tmp, k.p)
	for i := 0; i < L; i++ {
		e := c.e[i]
		dy, tm := c.dY[i*k.p:(i+1)*k.p], c.tmp[i*k.p:(i+1)*k.p]
		var de float64
		for q, yv := range dy {
			de += float64(yv) * float64(tm[q])
			dy[q] = yv * T(e)
		}
		c.dcum[i] += de * e
	}
	gemm(true, false, k.p, k.n, L, 1, c.dY, k.p, Cc, v.ldbc, 1, dHin, k.n)
	gemm(false, false, L, k.n, k.p, 1, c.dY, k.p, H, k.n, 1, dCc, v.lddbc)
}

// ssdMaskGrad takes dG = Q = dY Uᵀ [L,L] of the diagonal block and turns it
// into seg∘Q (zero above the diagonal), adding R = M∘Q (M = G∘seg, in gm)
// to dcum: dcum_i += Σ_j R_ij and dcum_j −= Σ_i R_ij. Float32 goes to C
// under the openblas build (ssdMaskGrad32).
func ssdMaskGrad[T floats](gm, seg, dG []T, dcum []float64, L int) {
	if g32, ok := any(gm).([]float32); ok {
		ssdMaskGrad32(g32, any(seg).([]float32), any(dG).([]float32), dcum, L)
		return
	}
	ssdMaskGradGo(gm, seg, dG, dcum, L)
}

func ssdMaskGradGo[T floats](gm, seg, dG []T, dcum []float64, L int) {
	for i := 0; i < L; i++ {
		g, s, d := gm[i*L:i*L+i+1], seg[i*L:i*L+i+1], dG[i*L:i*L+L]
		dc := dcum[:i+1]
		var ri float64 // row i's share of dcum[i], summed apart from the column updates
		for j, gv := range g {
			q := d[j]
			r := float64(gv) * float64(q) // G*seg*Q
			ri += r
			dc[j] -= r
			d[j] = q * s[j]
		}
		dcum[i] += ri
		clear(d[i+1:])
	}
}
