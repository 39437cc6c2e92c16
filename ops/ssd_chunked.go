package ops

// ssdPrep says what prepare forms besides a chunk's decays, U and W.
type ssdPrep int

const (
	// prepDecays: nothing more (the state passing alone).
	prepDecays ssdPrep = iota
	// prepForward: G = C Bᵀ and, where the decays allow it
	// (ssdFactorable), its lower triangle alone (c.factored), else each
	// head's mask.
	prepForward
	// prepBackward: G, each head's mask and each head's seg.
	prepBackward
	// prepBackwardFactored: as prepForward where the decays allow it, else
	// as prepBackward (ssdBackwardFactored).
	prepBackwardFactored
)

// prepare fills, for each head of the unit, cum, the decays r, e, w and E,
// and U and W of the chunk starting at token s0 with L tokens, and what
// mode asks for besides (ssdPrep).
func prepare[T floats](u ssdUnit, a ssdArgs[T], c *ssdChunk[T], s0, L int, mode ssdPrep) {
	k := u.k
	// 1. the decays, heads four at a time (decayChains)
	for j := 0; j < u.hb; j += 4 {
		decayChains(u, a, c, s0, L, j, min(4, u.hb-j))
	}
	// 2. U = dt*x and W = exp(cum_last - cum_j) * U (decay_states of listing
	// 3); in a forward (a chunk without the backward's buffers) W alone
	// where nothing reads U: the state passing, and the factored product
	withG := mode != prepDecays
	c.factored = (mode == prepForward || mode == prepBackwardFactored) && ssdFactorable(c, L)
	withSeg := mode == prepBackward || mode == prepBackwardFactored && !c.factored
	U := c.U
	if c.dU == nil && (!withG || c.factored) {
		U = nil
	}
	ssdScaleInputs(U, c.W, a.x[u.xo+s0*u.ldx:], u.ldx, a.dt[u.do+s0*k.h:], k.h, c.w, c.chunk, L, u.hb, k.p, u.P)
	if !withG {
		return
	}
	// 3. G = C B^T once for the unit's heads, then each head's M = G ∘
	// exp(segsum): the stable segment sum exp(cum_i - cum_j) is formed from
	// the difference, never from exp(cum_i)*exp(-cum_j), so strong decay
	// cannot overflow. Row i is row i−1 times r_i = exp(dt_i·A), so no exp
	// per element.
	cb := u.bo + s0*u.ldbc
	G := c.sq(c.Gm, 0, L) // one head, or the factored path: masked in place
	if u.hb > 1 && !c.factored {
		G = c.G[:L*L]
	}
	gemm(false, true, L, L, k.n, 1, a.C[cb:], u.ldbc, a.B[cb:], u.ldbc, 0, G, L)
	if c.factored {
		for i := 0; i < L-1; i++ {
			clear(G[i*L+i+1 : (i+1)*L])
		}
		return
	}
	for j := 0; j < u.hb; j++ {
		var seg []T
		if withSeg {
			seg = c.sq(c.seg, j, L)
		}
		ssdMask(c.sq(c.Gm, j, L), G, seg, c.segRow, c.vec(c.r, j), L)
	}
}

// decayChains fills cum, r, e and w, and E, of the n ≤ 4 heads j0… of a
// unit's chunk of L tokens from s0:
//
//	cum_i = Σ_{k≤i} dt_k·A (float64, listing 3's A_cumsum inside the chunk),
//	r_i = exp(cum_i − cum_{i−1}) (r_0 = exp(cum_0)),
//	e_i = r_0⋯r_i = exp(cum_i),  w_j = r_{j+1}⋯r_last = exp(cum_last − cum_j).
//
// The decays are running products of one exp per token: the factors are ≤ 1
// for SSD's A < 0 and dt > 0, so the products only shrink (where one
// underflows, the direct exp is as small), and float64 keeps their relative
// error near L·2⁻⁵³. Each of the three is a chain of dependent adds or
// multiplies along the tokens, and one head at a time waited on its chain:
// four heads' chains side by side took 2.5% off a (SM)4 evaluation step at
// d_model 64. Each head's arithmetic and its order are those of one head
// alone (decayChain), so the values do not depend on the grouping. The
// exponentials are taken after the cumulative sums, a head's L at once
// (expInPlace: four lanes in C under the openblas build).
func decayChains[T floats](u ssdUnit, a ssdArgs[T], c *ssdChunk[T], s0, L, j0, n int) {
	if n < 4 {
		for q := 0; q < n; q++ {
			decayChain(u, a, c, s0, L, j0+q)
		}
		return
	}
	// Four heads in scalars (an array indexed by head kept the chains in
	// memory, each step a store and a load).
	A0, A1, A2, A3 := float64(a.A[u.h0+j0]), float64(a.A[u.h0+j0+1]), float64(a.A[u.h0+j0+2]), float64(a.A[u.h0+j0+3])
	cum0, cum1, cum2, cum3 := c.vec(c.cum, j0)[:L], c.vec(c.cum, j0+1)[:L], c.vec(c.cum, j0+2)[:L], c.vec(c.cum, j0+3)[:L]
	r0, r1, r2, r3 := c.vec(c.r, j0)[:L], c.vec(c.r, j0+1)[:L], c.vec(c.r, j0+2)[:L], c.vec(c.r, j0+3)[:L]
	e0, e1, e2, e3 := c.vec(c.e, j0)[:L], c.vec(c.e, j0+1)[:L], c.vec(c.e, j0+2)[:L], c.vec(c.e, j0+3)[:L]
	var c0, c1, c2, c3, p0, p1, p2, p3 float64
	for i := 0; i < L; i++ {
		dt := a.dt[u.do+j0+(s0+i)*u.k.h:]
		dt = dt[:4]
		c0 += float64(dt[0]) * A0
		c1 += float64(dt[1]) * A1
		c2 += float64(dt[2]) * A2
		c3 += float64(dt[3]) * A3
		cum0[i], cum1[i], cum2[i], cum3[i] = c0, c1, c2, c3
		r0[i], r1[i], r2[i], r3[i] = c0-p0, c1-p1, c2-p2, c3-p3 // exponentiated below
		p0, p1, p2, p3 = c0, c1, c2, c3
	}
	expInPlace(r0)
	expInPlace(r1)
	expInPlace(r2)
	expInPlace(r3)
	var x0, x1, x2, x3 float64 = 1, 1, 1, 1
	for i := 0; i < L; i++ {
		if i == 0 {
			x0, x1, x2, x3 = r0[0], r1[0], r2[0], r3[0]
		} else {
			x0, x1, x2, x3 = x0*r0[i], x1*r1[i], x2*r2[i], x3*r3[i]
		}
		e0[i], e1[i], e2[i], e3[i] = x0, x1, x2, x3
	}
	c.E[j0], c.E[j0+1], c.E[j0+2], c.E[j0+3] = x0, x1, x2, x3
	w0, w1, w2, w3 := c.vec(c.w, j0)[:L], c.vec(c.w, j0+1)[:L], c.vec(c.w, j0+2)[:L], c.vec(c.w, j0+3)[:L]
	x0, x1, x2, x3 = 1, 1, 1, 1
	w0[L-1], w1[L-1], w2[L-1], w3[L-1] = 1, 1, 1, 1
	for i := L - 2; i >= 0; i-- {
		x0, x1, x2, x3 = x0*r0[i+1], x1*r1[i+1], x2*r2[i+1], x3*r3[i+1]
		w0[i], w1[i], w2[i], w3[i] = x0, x1, x2, x3
	}
}

// decayChain is decayChains for one head j.
func decayChain[T floats](u ssdUnit, a ssdArgs[T], c *ssdChunk[T], s0, L, j int) {
	A := float64(a.A[u.h0+j])
	cum, r, e, w := c.vec(c.cum, j)[:L], c.vec(c.r, j)[:L], c.vec(c.e, j)[:L], c.vec(c.w, j)[:L]
	var acc, prev, run float64
	for i := 0; i < L; i++ {
		acc += float64(a.dt[u.do+j+(s0+i)*u.k.h]) * A
		cum[i] = acc
		r[i] = acc - prev
		prev = acc
	}
	expInPlace(r)
	for i := 0; i < L; i++ {
		if i == 0 {
			run = r[0]
		} else {
			run *= r[i]
		}
		e[i] = run
	}
	c.E[j] = run
	w[L-1], run = 1, 1
	for i := L - 2; i >= 0; i-- {
		run *= r[i+1]
		w[i] = run
	}
}

// ssdMask writes src [L,L] times exp(segsum) into gm (src may be gm), where
// row i of exp(segsum) is row i−1 times r_i with a 1 on the diagonal (row is
// float64 scratch of L), zeroes gm above the diagonal, and writes
// exp(segsum) into seg when seg is not nil. Float32 goes to C under the
// openblas build (ssdMask32).
func ssdMask[T floats](gm, src, seg []T, row, r []float64, L int) {
	if g32, ok := any(gm).([]float32); ok {
		s32, _ := any(seg).([]float32)
		ssdMask32(g32, any(src).([]float32), s32, row, r, L)
		return
	}
	ssdMaskGo(gm, src, seg, row, r, L)
}

func ssdMaskGo[T floats](gm, src, seg []T, row, r []float64, L int) {
	row = row[:L]
	for i := 0; i < L; i++ {
		if i > 0 {
			ri := r[i]
			for j := 0; j < i; j++ {
				row[j] *= ri
			}
		}
		row[i] = 1
		g, sr := gm[i*L:i*L+L], src[i*L:i*L+L]
		for j, e := range row[:i+1] {
			g[j] = sr[j] * T(e)
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

// advance moves the unit's states [hb, p, n] across the chunk: H = E*H +
// Wᵀ B, one product for all its heads.
func advance[T floats](u ssdUnit, a ssdArgs[T], c *ssdChunk[T], H []T, s0, L int) {
	pn := u.k.p * u.k.n
	for j := 0; j < u.hb; j++ {
		E, hs := T(c.E[j]), H[j*pn:(j+1)*pn]
		for i := range hs {
			hs[i] *= E
		}
	}
	gemm(true, false, u.P, u.k.n, L, 1, c.W, u.P, a.B[u.bo+s0*u.ldbc:], u.ldbc, 1, H, u.k.n)
}

func ssdForward[T floats](k ssdKernel, a ssdArgs[T], out []T) {
	k = k.withUnits()
	states := statesBuffer(k, a) // the state entering each chunk, for the backward
	nc, pn := k.chunks(), k.p*k.n
	parallelFor(k.units(), func(i int) {
		u := k.unit(i)
		c := newSSDChunk[T](k, u.hb, false)
		defer c.release()
		H := scratch[T](u.hb * pn) // the unit's heads' states, [hb, p, n]
		defer releaseScratch(H)
		if a.H0 != nil {
			copy(H, headsAt(u, a.H0, 1, 0, pn))
		}
		for ci := 0; ci < nc; ci++ {
			s0 := ci * k.chunk
			L := min(k.chunk, k.t-s0)
			if states != nil {
				copy(headsAt(u, states, nc+1, ci, pn), H)
			}
			if k.out != ssdOutY {
				prepare(u, a, c, s0, L, prepDecays)
			} else {
				prepare(u, a, c, s0, L, prepForward)
				ssdChunkOutput(u, a, c, H, s0, L, out)
			}
			advance(u, a, c, H, s0, L)
		}
		if states != nil {
			copy(headsAt(u, states, nc+1, nc, pn), H)
		}
		if k.out == ssdOutState {
			copy(headsAt(u, out, 1, 0, pn), H)
		}
	})
}

// ssdChunkOutput writes y for the chunk: Y = M U (diagonal block, per head)
// + exp(cum_i) C_i Hᵀ (state from earlier chunks, one product for the
// unit) + D x. On the factored path (prepare) the diagonal blocks of all
// the unit's heads are one product, Gl W, each row scaled by its head's
// 1/w_i as the three terms are added.
func ssdChunkOutput[T floats](u ssdUnit, a ssdArgs[T], c *ssdChunk[T], H []T, s0, L int, out []T) {
	k := u.k
	yc := c.Yc
	var s []float64
	if c.factored {
		ssdFactoredProduct(u, c, L, yc)
		s = c.iw
	} else {
		for j := 0; j < u.hb; j++ {
			gemm(false, false, L, k.p, L, 1, c.sq(c.Gm, j, L), L, c.U[j*k.p:], u.P, 0, yc[j*k.p:], u.P)
		}
	}
	gemm(false, true, L, u.P, k.n, 1, a.C[u.bo+s0*u.ldbc:], u.ldbc, H, k.n, 0, c.tmp, u.P)
	var D []T
	if a.D != nil {
		D = a.D[u.h0:]
	}
	o := u.xo + s0*u.ldx
	ssdCombineOutput(out[o:], u.ldx, yc, c.tmp, u.P, c.e, s, c.chunk, D, a.x[o:], L, u.hb, k.p)
}

// ssdFactoredProduct writes Gl·W, the factored path's diagonal blocks of
// the unit's heads before their rows' 1/w, to yc ([L, hb·p]), in products
// of ssdFactoredHeads heads; the backward forms it again through this too.
func ssdFactoredProduct[T floats](u ssdUnit, c *ssdChunk[T], L int, yc []T) {
	p := u.k.p
	q := ssdFactoredHeads(L, p, u.hb)
	for j := 0; j < u.hb; j += q {
		gemm(false, false, L, q*p, L, 1, c.sq(c.Gm, 0, L), L, c.W[j*p:], u.P, 0, yc[j*p:], u.P)
	}
}

// ssdBackwardFactored says whether the backward of a scan whose units have
// hb heads of p values takes the factored path (ssdDiagonalBackwardFactored)
// for the chunks the decays allow: on OpenBLAS's small-matrix kernels, and
// where the forward's product Gl·W takes all hb heads at once
// (ssdFactoredHeads), as at d_model 64's four heads of 16, where a (SM)4
// training step on one core ran 0.7–1.0% faster. Elsewhere the per-head
// masks are faster: at d_model 256 (four heads of 64) the products over
// all heads fall out of the small kernels, and with OpenBLAS's Haswell
// kernels the scan's forward and backward at d_model 256 ran 10% slower
// factored.
func ssdBackwardFactored(chunk, p, hb int) bool {
	return blasSmallKernels && !ssdFactorOff && ssdFactoredHeads(chunk, p, hb) == hb
}

// ssdFactoredHeads is how many of a unit's hb heads one product of the
// factored path takes: all of them, or, where this build's BLAS has
// small-matrix kernels, the most that divide hb and keep the product
// [L, L] × [L, q·p] within them (blasSmallMNK). At d_model 64 (p 16) that
// is the unit's four heads in one product, faster than four; at d_model
// 256 (p 64) one product of the four fell out of the small kernels and ran
// slower than the masks it spared.
func ssdFactoredHeads(L, p, hb int) int {
	if !blasSmallKernels {
		return hb
	}
	q := max(1, min(hb, blasSmallMNK/(L*L*p)))
	for hb%q != 0 {
		q--
	}
	return q
}

// ssdFactorBound bounds the decays w_i = exp(cum_last − cum_i) of a chunk
// that takes the factored path (ssdFactorable): within [2⁻⁶⁰, 2⁶⁰], so
// that W = w·U and 1/w stay far inside float32's range.
const ssdFactorBound = 0x1p-60

// ssdFactorOff sends every chunk through the per-head masks; the package's
// tests set it to compare the two paths.
var ssdFactorOff = false

// ssdFactorable says whether the forward of the chunk in c (its decays
// filled by prepare) may compute its diagonal blocks in one product for
// all the unit's heads, and if so fills c.iw with 1/w.
//
// Head j's diagonal block is Y_j = (G ∘ S_j) U_j with S_j[i,l] =
// exp(cum_i − cum_l) for l ≤ i (listing 3's exp(segsum)), masked per head.
// Since exp(cum_i − cum_l) = w_l / w_i, it is also diag(1/w) Gl (w·U_j),
// with Gl G's lower triangle: one product Gl·W for every head of the unit
// (W = w·U is prepare's, made for the state passing anyway), each row
// scaled by its head's 1/w_i afterwards. With SSD's decays (A < 0, dt >
// 0) every term Gl[i,l]·w_l·U_j[l] of row i has w_l ≤ w_i, so dividing by
// w_i restores each term's own magnitude and the sum rounds as the masked
// one does. Only the range is at stake: w may underflow where the decay
// within a chunk is strong, so a chunk whose decays leave
// [ssdFactorBound, 1/ssdFactorBound] for any of its heads takes the
// per-head masks instead (the stable form of prepare, built from the
// differences of cum). The choice depends on the values, never on timing,
// so the same inputs always give the same bits.
func ssdFactorable[T floats](c *ssdChunk[T], L int) bool {
	if ssdFactorOff {
		return false
	}
	for j := 0; j < c.hb; j++ {
		w, iw := c.vec(c.w, j)[:L], c.vec(c.iw, j)[:L]
		for i, v := range w {
			if !(v >= ssdFactorBound && v <= 1/ssdFactorBound) {
				return false
			}
			iw[i] = 1 / v
		}
	}
	return true
}

// ssdBackward computes every gradient of the scan in one reverse pass over the
// chunks. g is dL/dy ([b,t,h,p]) or dL/dH_final ([b,h,p,n]) as k.out says.
//
// Per chunk and head, with U_j = dt_j x_j, cum the in-chunk cumsum of dt*A,
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
	k = k.withUnits()
	nc, pn := k.chunks(), k.p*k.n
	dAparts := make([]float64, k.b*k.h)
	dDparts := make([]float64, k.b*k.h)
	saved := savedStates(k, a)
	mode := prepDecays // what prepare forms for every chunk of this pass
	if k.out == ssdOutY {
		mode = prepBackward
		if ssdBackwardFactored(k.chunk, k.p, k.h/k.g/k.blocks) {
			mode = prepBackwardFactored
		}
	}
	gg := newSSDGroupGrads[T](k)
	dg := d // the units' dB and dC: d's own, or the units' partials
	if gg.dB != nil {
		dg.B, dg.C = gg.dB, gg.dC
	}
	parallelFor(k.units(), func(i int) {
		u := k.unit(i)
		c := newSSDChunk[T](k, u.hb, true)
		defer c.release()
		hpn := u.hb * pn
		stateAt := func(ci int) []T { return headsAt(u, saved, nc+1, ci, pn) }
		if saved == nil {
			states := ssdUnitStates(u, a, c, nc)
			defer releaseScratch(states)
			stateAt = func(ci int) []T { return states[ci*hpn : (ci+1)*hpn] }
		}
		dH := make([]T, hpn) // dL/d(states leaving the current chunk)
		if k.out == ssdOutState {
			copy(dH, headsAt(u, g, 1, 0, pn))
		}
		dHin := make([]T, hpn)
		dA, dD := make([]float64, u.hb), make([]float64, u.hb)
		for ci := nc - 1; ci >= 0; ci-- {
			s0 := ci * k.chunk
			L := min(k.chunk, k.t-s0)
			H := stateAt(ci)
			prepare(u, a, c, s0, L, mode)
			ssdStatePassingBackward(u, a, dg, c, H, dH, dHin, s0, L)
			if k.out == ssdOutY {
				ssdChunkOutputBackward(u, a, dg, c, g, H, dHin, s0, L, dD)
			}
			ssdDecayBackward(u, a, d, c, s0, L, dA)
			dH, dHin = dHin, dH
		}
		if d.H0 != nil {
			copy(headsAt(u, d.H0, 1, 0, pn), dH)
		}
		copy(dAparts[u.bi*k.h+u.h0:], dA)
		copy(dDparts[u.bi*k.h+u.h0:], dD)
	})
	gg.sum(k, d)
	for bh := range dAparts {
		d.A[bh%k.h] += T(dAparts[bh])
		if d.D != nil {
			d.D[bh%k.h] += T(dDparts[bh])
		}
	}
}

// ssdUnitStates runs the forward again for one unit, keeping its heads'
// states entering every chunk ([chunks+1, hb, p, n], from scratch).
func ssdUnitStates[T floats](u ssdUnit, a ssdArgs[T], c *ssdChunk[T], nc int) []T {
	k := u.k
	hpn := u.hb * k.p * k.n
	states := scratch[T]((nc + 1) * hpn)
	if a.H0 != nil {
		copy(states, headsAt(u, a.H0, 1, 0, k.p*k.n))
	}
	for ci := 0; ci < nc; ci++ {
		s0 := ci * k.chunk
		L := min(k.chunk, k.t-s0)
		next := states[(ci+1)*hpn : (ci+2)*hpn]
		copy(next, states[ci*hpn:(ci+1)*hpn])
		prepare(u, a, c, s0, L, prepDecays)
		advance(u, a, c, next, s0, L)
	}
	return states
}

// ssdStatePassingBackward is the gradient of the state passing
// H_next = E*H + Wᵀ B for one chunk and the unit's heads: dHin = E dH,
// dW = B dHᵀ and dB += W dH (one product each for all heads), dU = w dW,
// and the decays' part of dcum (cleared first).
func ssdStatePassingBackward[T floats](u ssdUnit, a, d ssdArgs[T], c *ssdChunk[T], H, dH, dHin []T, s0, L int) {
	k, pn := u.k, u.k.p*u.k.n
	Bc, dBc := a.B[u.bo+s0*u.ldbc:], d.B[u.dbo+s0*u.lddbc:]
	// dHin = E·dH and dE = dH·H, each head's state as one row of p·n.
	for j := 0; j < u.hb; j++ {
		c.scale[j] = T(c.E[j])
	}
	ssdRowsDotScale(c.dots, dH, 0, H, 0, dHin, 0, c.scale, 0, 1, 1, u.hb, pn, false)
	for j := 0; j < u.hb; j++ {
		dcum := c.vec(c.dcum, j)
		clear(dcum[:L])
		dcum[L-1] += c.dots[j] * c.E[j]
	}
	gemm(false, true, L, u.P, k.n, 1, Bc, u.ldbc, dH, k.n, 0, c.dW, u.P)
	gemm(false, false, L, k.n, u.P, 1, c.W, u.P, dH, k.n, 1, dBc, u.lddbc)
	// dU = w·dW and dw = dW·U per token and head; w_i = exp(cum_last −
	// cum_i), so w·dw goes to both ends of the span.
	ssdRowsDotScale(c.dots, c.dW, u.P, c.U, u.P, c.dU, u.P, c.scalesOf(c.w, L), 1, c.chunk, L, u.hb, k.p, false)
	for j := 0; j < u.hb; j++ {
		dcum, ws := c.vec(c.dcum, j), c.vec(c.w, j)
		for i := 0; i < L; i++ {
			dw := c.dots[j*L+i] * ws[i]
			dcum[L-1] += dw
			dcum[i] -= dw
		}
	}
}

// ssdDecayBackward turns the chunk's dcum and dU into dx and ddt (cum_i =
// Σ_{r<=i} dt_r A, so da_r = Σ_{i>=r} dcum_i; U = dt·x) for each head of the
// unit and adds the chunk's terms of dA to dA[j], in the order the loop over
// chunks always did.
func ssdDecayBackward[T floats](u ssdUnit, a, d ssdArgs[T], c *ssdChunk[T], s0, L int, dA []float64) {
	k := u.k
	// U = dt·x: dx += dt·dU and ddt = dU·x per token and head.
	xo, dto := u.xo+s0*u.ldx, u.do+s0*k.h
	ssdRowsDotScale(c.dots, c.dU, u.P, a.x[xo:], u.ldx, d.x[xo:], u.ldx, a.dt[dto:], k.h, 1, L, u.hb, k.p, true)
	for j := 0; j < u.hb; j++ {
		A := float64(a.A[u.h0+j])
		dcum := c.vec(c.dcum, j)
		var da float64
		for r := L - 1; r >= 0; r-- {
			da += dcum[r]
			o := dto + j + r*k.h
			d.dt[o] += T(c.dots[j*L+r] + da*A)
			dA[j] += da * float64(a.dt[o])
		}
	}
}

// ssdChunkOutputBackward adds the gradients of the chunk's output
// Y_i = Σ_{j<=i} G_ij seg_ij U_j + e_i H C_i + D x_i, given dY from g, for
// the unit's heads. It accumulates into dU (which it expects to hold the
// state-passing part), dcum, dB, dC, dx, dHin (the states entering the
// chunk) and dD[j].
func ssdChunkOutputBackward[T floats](u ssdUnit, a, d ssdArgs[T], c *ssdChunk[T], g, H, dHin []T, s0, L int, dD []float64) {
	k := u.k
	Cc, Bc := a.C[u.bo+s0*u.ldbc:], a.B[u.bo+s0*u.ldbc:]
	dCc, dBc := d.C[u.dbo+s0*u.lddbc:], d.B[u.dbo+s0*u.lddbc:]
	for i := 0; i < L; i++ {
		o := u.xo + (s0+i)*u.ldx
		copy(c.dY[i*u.P:(i+1)*u.P], g[o:o+u.P])
	}
	if a.D != nil {
		// The skip term D·x: dx += D·dY, and the chunk's dD sums dY·x over
		// its tokens in order.
		o := u.xo + s0*u.ldx
		ssdRowsDotScale(c.dots, g[o:], u.ldx, a.x[o:], u.ldx, d.x[o:], u.ldx, a.D[u.h0:], 0, 1, L, u.hb, k.p, true)
		for j := 0; j < u.hb; j++ {
			var dDc float64
			for _, v := range c.dots[j*L : (j+1)*L] {
				dDc += v
			}
			dD[j] += dDc
		}
	}
	// Diagonal blocks: either form adds to dU and dcum and returns dGs =
	// Σ_j dG_j. B and C are the group's, so dC += dGs B and dB += dGsᵀ C.
	var dGs []T
	if c.factored {
		dGs = ssdDiagonalBackwardFactored(u, c, L)
	} else {
		dGs = ssdDiagonalBackwardMasked(u, c, L)
	}
	gemm(false, false, L, k.n, L, 1, dGs, L, Bc, u.ldbc, 1, dCc, u.lddbc)
	gemm(true, false, L, k.n, L, 1, dGs, L, Cc, u.ldbc, 1, dBc, u.lddbc)
	// State read-out Y_i += e_i H C_i: dY scaled by e_i is dYe.
	gemm(false, true, L, u.P, k.n, 1, Cc, u.ldbc, H, k.n, 0, c.tmp, u.P)
	// de = dY·(C Hᵀ), then dY becomes e·dY, in place.
	ssdRowsDotScale(c.dots, c.dY, u.P, c.tmp, u.P, c.dY, u.P, c.scalesOf(c.e, L), 1, c.chunk, L, u.hb, k.p, false)
	for j := 0; j < u.hb; j++ {
		es, dcum := c.vec(c.e, j), c.vec(c.dcum, j)
		for i := 0; i < L; i++ {
			dcum[i] += c.dots[j*L+i] * es[i]
		}
	}
	gemm(true, false, u.P, k.n, L, 1, c.dY, u.P, Cc, u.ldbc, 1, dHin, k.n)
	gemm(false, false, L, k.n, u.P, 1, c.dY, u.P, H, k.n, 1, dCc, u.lddbc)
}

// ssdDiagonalBackwardMasked is the diagonal blocks' gradient, per head:
// Q = dY Uᵀ; dG = seg∘Q; dU += Mᵀ dY; R = M∘Q feeds dcum. It returns
// Σ_j dG_j, from which dB and dC follow (B and C are the group's): the
// mask gradient adds each dG_j after the first to that sum.
func ssdDiagonalBackwardMasked[T floats](u ssdUnit, c *ssdChunk[T], L int) []T {
	k := u.k
	dGs := c.sq(c.dG, 0, L)
	for j := 0; j < u.hb; j++ {
		dG := c.sq(c.dG, j, L)
		gemm(false, true, L, L, k.p, 1, c.dY[j*k.p:], u.P, c.U[j*k.p:], u.P, 0, dG, L)
		gemm(true, false, L, k.p, L, 1, c.sq(c.Gm, j, L), L, c.dY[j*k.p:], u.P, 1, c.dU[j*k.p:], u.P)
		var acc []T
		if j > 0 {
			acc = dGs
		}
		ssdMaskGrad(c.sq(c.Gm, j, L), c.sq(c.seg, j, L), dG, c.vec(c.dcum, j), acc, L)
		if j == 0 && u.hb > 1 {
			dGs = c.dGs[:L*L]
			copy(dGs, dG)
		}
	}
	return dGs
}

// ssdDiagonalBackwardFactored is the diagonal blocks' gradient on the
// factored path (ssdFactorable), every head of the unit at once. Head j's
// block is M_j = diag(1/w) Gl diag(w) (ssdFactorable), so with dYs = dY/w
// (each head's rows by its own 1/w_i):
//
//	R row sums:    dcum_i += Σ_l M_il dY_i·U_l = dYs_i · (Gl W)_i   (Gl W: yc)
//	Mᵀ dY:         Z = Glᵀ dYs;  dU_l += w_l Z_l
//	R column sums: dcum_l −= Σ_i M_il dY_i·U_l = W_l · Z_l
//	Σ_j seg_j∘Q_j: dGs = lower(dYs Wᵀ), the heads' sum inside the product
//
// two products over [L, hb·p] in place of two per head and the heads'
// masks. It returns dGs. Gl W is formed again into c.Yc, by the forward's
// call (ssdFactoredProduct): keeping it from the forward (an activation of
// x's size per layer) ran the training step slower.
func ssdDiagonalBackwardFactored[T floats](u ssdUnit, c *ssdChunk[T], L int) []T {
	k := u.k
	yc := c.Yc
	ssdFactoredProduct(u, c, L, yc)
	// dYs into tmp (free until the read-out), and dY·(Gl W) per row.
	ssdRowsDotScale(c.dots, c.dY, u.P, yc, u.P, c.tmp, u.P, c.scalesOf(c.iw, L), 1, c.chunk, L, u.hb, k.p, false)
	for j := 0; j < u.hb; j++ {
		dcum, iw := c.vec(c.dcum, j), c.vec(c.iw, j)
		for i := 0; i < L; i++ {
			dcum[i] += c.dots[j*L+i] * iw[i]
		}
	}
	// Z into dW (the state passing's, read before this).
	gemm(true, false, L, u.P, L, 1, c.sq(c.Gm, 0, L), L, c.tmp, u.P, 0, c.dW, u.P)
	ssdRowsDotScale(c.dots, c.dW, u.P, c.W, u.P, c.dU, u.P, c.scalesOf(c.w, L), 1, c.chunk, L, u.hb, k.p, true)
	for j := 0; j < u.hb; j++ {
		dcum := c.vec(c.dcum, j)
		for i := 0; i < L; i++ {
			dcum[i] -= c.dots[j*L+i]
		}
	}
	dGs := c.dGs[:L*L]
	gemm(false, true, L, L, u.P, 1, c.tmp, u.P, c.W, u.P, 0, dGs, L)
	for i := 0; i < L-1; i++ {
		clear(dGs[i*L+i+1 : (i+1)*L])
	}
	return dGs
}

// ssdMaskGrad takes dG = Q = dY Uᵀ [L,L] of the diagonal block and turns it
// into seg∘Q (zero above the diagonal), adding R = M∘Q (M = G∘seg, in gm)
// to dcum: dcum_i += Σ_j R_ij and dcum_j −= Σ_i R_ij; when acc is not nil
// it also adds seg∘Q to acc's lower triangle. Float32 goes to C under the
// openblas build (ssdMaskGrad32).
func ssdMaskGrad[T floats](gm, seg, dG []T, dcum []float64, acc []T, L int) {
	if g32, ok := any(gm).([]float32); ok {
		a32, _ := any(acc).([]float32)
		ssdMaskGrad32(g32, any(seg).([]float32), any(dG).([]float32), dcum, a32, L)
		return
	}
	ssdMaskGradGo(gm, seg, dG, dcum, acc, L)
}

func ssdMaskGradGo[T floats](gm, seg, dG []T, dcum []float64, acc []T, L int) {
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
		if acc != nil {
			for j, v := range d[:i+1] {
				acc[i*L+j] += v
			}
		}
	}
}
