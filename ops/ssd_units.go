package ops

import (
	"runtime"
	"sync"
)

// The SSD scan's parallel loop: its units of heads, their scratch, and the
// partial gradients of groups split across units. The scan itself is in
// ssd_chunked.go.

// ssdUnit is one unit of the scan's parallel loop: hb consecutive heads of
// one group of one batch row. The heads of a unit share B and C, so their
// state products (C Hᵀ, Wᵀ B and their gradients) are one product over the
// unit's [L, hb·p] matrices instead of one per head, and their dB and dC
// sum over the heads inside the product (Wonderful Matrices listing 3 with
// Mamba2's ngroups: heads of a group read the same B and C).
//
// A group is split into several units only when the batch and the groups
// alone give fewer units than GOMAXPROCS; then each unit writes its own
// partial dB and dC (ssdGroupGrads), summed after the loop in unit order.
type ssdUnit struct {
	k          ssdKernel
	bi, gi     int // batch row and group
	h0, hb     int // first head and number of heads
	P          int // hb·p, the width of the unit's [L, hb·p] matrices
	ldx, ldbc  int // leading dimensions of x (h·p) and of B and C (g·n)
	xo, bo, do int // offsets of token 0 of head h0 in x, of the group in B/C, of head h0 in dt
	dbo, lddbc int // offset and leading dimension of token 0 in dB/dC (or the unit's partial)
}

// withUnits returns k with the split of its parallel loop chosen for one
// pass: each group in the fewest blocks of heads (a divisor of heads per
// group) that give at least GOMAXPROCS units, or one unit per head. Larger
// units batch more heads into each state product; enough of them keep
// every core busy. The split, and so the order of dB's and dC's sums,
// depends on GOMAXPROCS, as the package's other splits do (doc.go).
func (k ssdKernel) withUnits() ssdKernel {
	hpg, workers := k.h/k.g, runtime.GOMAXPROCS(0)
	k.blocks = hpg
	for nb := 1; nb < hpg; nb++ {
		if hpg%nb == 0 && k.b*k.g*nb >= workers {
			k.blocks = nb
			break
		}
	}
	return k
}

// units is the number of units of the scan's parallel loop.
func (k ssdKernel) units() int { return k.b * k.g * k.blocks }

// unit locates unit i: batch-major, then group, then block of heads.
func (k ssdKernel) unit(i int) ssdUnit {
	nb := k.blocks
	hb := k.h / k.g / nb
	bi, gi, blk := i/(k.g*nb), i/nb%k.g, i%nb
	h0 := gi*(k.h/k.g) + blk*hb
	u := ssdUnit{k: k, bi: bi, gi: gi, h0: h0, hb: hb, P: hb * k.p, ldx: k.h * k.p, ldbc: k.g * k.n,
		xo: bi*k.t*k.h*k.p + h0*k.p, bo: bi*k.t*k.g*k.n + gi*k.n, do: bi*k.t*k.h + h0}
	u.dbo, u.lddbc = u.bo, u.ldbc
	if nb > 1 {
		u.lddbc = k.g * nb * k.n
		u.dbo = bi*k.t*u.lddbc + (gi*nb+blk)*k.n
	}
	return u
}

// headsAt is the slice of a [b, *, h, ...] buffer holding the unit's heads
// at index r of the second dimension, with per elements per head.
func headsAt[T floats](u ssdUnit, buf []T, rows, r, per int) []T {
	o := ((u.bi*rows+r)*u.k.h + u.h0) * per
	return buf[o : o+u.hb*per]
}

// ssdChunk is one unit's scratch for one chunk of the scan. Matrices are
// row-major; L <= chunk is the chunk's length. Per-head vectors are hb
// blocks of chunk; per-head L×L matrices are hb blocks of chunk² (head j's
// uses the first L² of its block); the [L, hb·p] matrices hold head j in
// columns j·p to (j+1)·p.
type ssdChunk[T floats] struct {
	chunk, p, hb int
	// Per head: cum is the cumulative sum of dt*A inside the chunk, r_i =
	// exp(cum_i − cum_{i−1}) (r_0 = exp(cum_0)), e_i = exp(cum_i) =
	// r_0⋯r_i, w_j = exp(cum_last − cum_j) = r_{j+1}⋯r_last, and dcum the
	// gradient of cum. E is exp(cum_last) per head.
	cum, r, e, w, dcum []float64
	E                  []float64
	segRow             []float64 // [chunk] row i of exp(segsum) in float64 while seg is filled
	G                  []T       // [L,L] C Bᵀ of the group (units of one head use Gm alone)
	Gm, seg, dG        []T       // per head: G masked to M = G ∘ exp(segsum); exp(segsum); dG
	dGs                []T       // [L,L] Σ_j dG_j
	U, W, tmp, Yc      []T       // [L, hb·p]: dt·x; exp(cum_last − cum_j)·U_j; C Hᵀ; the diagonal blocks' output (factored: Gl·W)
	dU, dY, dW         []T       // [L, hb·p]
	// The backward's row passes: dots [hb·chunk] their float64 dot products,
	// scale [hb·chunk] their float32 factors (ssdRowsDotScale).
	dots  []float64
	scale []T
	// The diagonal blocks in one product for all heads (ssdFactorable): iw
	// [hb·chunk] is 1/w per head, and factored says the chunk in hand takes
	// that path, with G's lower triangle in Gm's first block.
	iw       []float64
	factored bool
}

// newSSDChunk takes the workspace of a unit of hb heads from the scratch
// pools, the backward's buffers only for the backward; release hands it
// back (the struct to ssdChunkPools, its buffers to the scratch pools).
// Every buffer is written before it is read, so none is cleared (the
// package's tests fill scratchUninit's buffers with NaN to check that).
func newSSDChunk[T floats](k ssdKernel, hb int, backward bool) *ssdChunk[T] {
	ch, cc, wide := k.chunk, k.chunk*k.chunk, k.chunk*hb*k.p
	c, ok := ssdChunkPools[scratchKind[T]()].Get().(*ssdChunk[T])
	if !ok {
		c = new(ssdChunk[T])
	}
	*c = ssdChunk[T]{chunk: ch, p: k.p, hb: hb,
		cum: scratchUninit[float64](hb * ch), r: scratchUninit[float64](hb * ch), e: scratchUninit[float64](hb * ch),
		w: scratchUninit[float64](hb * ch), E: scratchUninit[float64](hb), segRow: scratchUninit[float64](ch),
		Gm: scratchUninit[T](hb * cc),
		U:  scratchUninit[T](wide), W: scratchUninit[T](wide), tmp: scratchUninit[T](wide),
	}
	if hb > 1 {
		c.G = scratchUninit[T](cc) // the unit's G, masked into each head's Gm
	}
	if backward {
		c.dcum = scratchUninit[float64](hb * ch)
		c.seg, c.dG, c.dGs = scratchUninit[T](hb*cc), scratchUninit[T](hb*cc), scratchUninit[T](cc)
		c.dU, c.dY, c.dW = scratchUninit[T](wide), scratchUninit[T](wide), scratchUninit[T](wide)
		c.dots, c.scale = scratchUninit[float64](hb*ch), scratchUninit[T](hb*ch)
	}
	c.Yc, c.iw = scratchUninit[T](wide), scratchUninit[float64](hb*ch)
	return c
}

func (c *ssdChunk[T]) release() {
	for _, s := range [][]T{c.G, c.Gm, c.seg, c.dG, c.dGs, c.U, c.W, c.tmp, c.Yc, c.dU, c.dY, c.dW, c.scale} {
		releaseScratch(s)
	}
	for _, s := range [][]float64{c.cum, c.r, c.e, c.w, c.dcum, c.E, c.segRow, c.dots, c.iw} {
		releaseScratch(s)
	}
	*c = ssdChunk[T]{}
	ssdChunkPools[scratchKind[T]()].Put(c)
}

// ssdChunkPools hold released workspaces' headers (*ssdChunk[float32] in
// [0], *ssdChunk[float64] in [1]), so that a step does not allocate one
// per unit and chunk; their buffers go back to the scratch pools.
var ssdChunkPools [2]sync.Pool

// scalesOf writes the first L values of each head's block of the per-head
// vector v into scale, as T (head j's at j·chunk), and returns scale: the
// factors of ssdRowsDotScale.
func (c *ssdChunk[T]) scalesOf(v []float64, L int) []T {
	for j := 0; j < c.hb; j++ {
		for i, x := range c.vec(v, j)[:L] {
			c.scale[j*c.chunk+i] = T(x)
		}
	}
	return c.scale
}

// vec is head j's block of a per-head vector.
func (c *ssdChunk[T]) vec(s []float64, j int) []float64 { return s[j*c.chunk : (j+1)*c.chunk] }

// sq is head j's L×L matrix of a per-head square buffer.
func (c *ssdChunk[T]) sq(s []T, j, L int) []T { return s[j*c.chunk*c.chunk : j*c.chunk*c.chunk+L*L] }

// ssdGroupGrads are the units' partials of dB and dC, [b, t, g·blocks, n],
// when a group is split into several units (nil otherwise), so that units
// run in parallel never write the same rows; sum adds them to dB and dC in
// unit order.
type ssdGroupGrads[T floats] struct{ dB, dC []T }

func newSSDGroupGrads[T floats](k ssdKernel) ssdGroupGrads[T] {
	nb := k.blocks
	if nb == 1 {
		return ssdGroupGrads[T]{}
	}
	n := k.b * k.t * k.g * nb * k.n
	return ssdGroupGrads[T]{scratch[T](n), scratch[T](n)}
}

// sum adds the partials into d.B and d.C and hands them back to the pools.
func (gg ssdGroupGrads[T]) sum(k ssdKernel, d ssdArgs[T]) {
	if gg.dB == nil {
		return
	}
	nb := k.blocks
	for _, pair := range [][2][]T{{d.B, gg.dB}, {d.C, gg.dC}} {
		dst, src := pair[0], pair[1]
		if dst != nil {
			for r := 0; r < k.b*k.t; r++ {
				for gi := 0; gi < k.g; gi++ {
					gr := dst[(r*k.g+gi)*k.n : (r*k.g+gi+1)*k.n]
					for blk := 0; blk < nb; blk++ {
						o := ((r*k.g+gi)*nb + blk) * k.n
						for j, v := range src[o : o+k.n] {
							gr[j] += v
						}
					}
				}
			}
		}
		releaseScratch(src)
	}
}
