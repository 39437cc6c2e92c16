package ops

import (
	"sync/atomic"
	"time"

	"github.com/pkg/errors"
)

// ReplayGemmShapesCold is ReplayGemmShapes with every operand out of
// cache. Each goroutine takes each product's a, b and c from the next
// place along buffers of at least span bytes per operand (wrapping round),
// so that an operand was last touched some span bytes of traffic ago: with
// span above the last-level cache (ColdSpan), every product reads and
// writes memory, as a step's products do when their operands were written
// by passes long before (a layer's input, saved by the forward for the
// weights' gradient). Inside a step some operands are warm (the weights,
// an output just written), so the step's products should take between
// ReplayGemmShapes' time and this one; near this one, they lose to the
// memory their operands come from, not to the other work of the step.
// Each goroutine's buffers are allocated and filled before the clock
// starts (some 3·span bytes each) and dropped after: to replay many sets
// of shapes one after another, a ColdReplay keeps them.
func ReplayGemmShapesCold(shapes GemmShapes, goroutines, rounds, span int) (time.Duration, error) {
	r, err := NewColdReplay(span)
	if err != nil {
		return 0, errors.Wrap(err, "replay gemm shapes cold")
	}
	return r.Replay(shapes, goroutines, rounds)
}

// ColdReplay replays sets of product shapes as ReplayGemmShapesCold does,
// keeping each goroutine's buffers from one call to the next, so that
// replaying many small sets (wm products times each site of a step on its
// own, some hundreds of them) does not allocate and fill 3·span bytes per
// goroutine every time. A buffer grows only when a shape needs more than
// half of it. Not safe for concurrent calls.
type ColdReplay struct {
	span  int
	pools []coldGoroutinePools // one per goroutine of the widest replay so far
}

// coldGoroutinePools are one goroutine's pools, one per element type.
type coldGoroutinePools struct {
	p32 coldPools[float32]
	p64 coldPools[float64]
}

// NewColdReplay returns a ColdReplay whose operands come from buffers of
// at least span bytes per role (ColdSpan gives one that leaves the
// last-level cache cold). Nothing is allocated until the first Replay.
func NewColdReplay(span int) (*ColdReplay, error) {
	if span < 1 {
		return nil, errors.Errorf("cold replay: span %d bytes must be >= 1 (ops.ColdSpan gives one that leaves the last-level cache cold)", span)
	}
	return &ColdReplay{span: span}, nil
}

// Replay times shapes on goroutines as ReplayGemmShapesCold does: the wall
// time of the fastest of rounds replays.
func (r *ColdReplay) Replay(shapes GemmShapes, goroutines, rounds int) (time.Duration, error) {
	if goroutines > len(r.pools) {
		r.pools = append(r.pools, make([]coldGoroutinePools, goroutines-len(r.pools))...)
	}
	var i atomic.Int64
	return replayShapes("replay gemm shapes cold", shapes, goroutines, rounds, func(sh shapeShare) []replayRun {
		// replayShapes prepares each share once, on its own goroutine:
		// each takes the next goroutine's pools.
		p := &r.pools[i.Add(1)-1]
		need32, need64 := sh.operandNeeds()
		p.p32.fit(need32, r.span/4)
		p.p64.fit(need64, r.span/8)
		return sh.ready(p.p32.product, p.p64.product)
	})
}

// coldPools are one goroutine's buffers for a, b and c of one element type,
// and where the next product takes each from.
type coldPools[T floats] struct {
	buf  [3][]T
	next [3]int
}

// fit makes each role's buffer with a need at least max(spanElems, 2·need)
// elements long: a buffer already that long is kept, with its cursor; a
// shorter one (or none) is replaced by a new one, filled as
// replayOperands fills, with its cursor at 0.
func (p *coldPools[T]) fit(need [3]int, spanElems int) {
	var lens [3]int
	for r, n := range need {
		if want := max(spanElems, 2*n); n > 0 && len(p.buf[r]) < want {
			lens[r] = want
		}
	}
	if lens == [3]int{} {
		return
	}
	fresh := [3][]T{}
	fresh[0], fresh[1], fresh[2] = replayOperands[T](lens)
	for r := range lens {
		if lens[r] > 0 {
			p.buf[r], p.next[r] = fresh[r], 0
		}
	}
}

// coldAlign is the step, in elements, that places along a buffer are
// rounded up to: a cache line of float32s, so that successive places do
// not share a line.
const coldAlign = 16

// place returns where along a buffer of length size an operand of n
// elements starts, given the cursor next, and the cursor after it: the
// cursor itself when n fits before the end, 0 otherwise; the cursor moves
// on by n rounded up to coldAlign.
func place(next, n, size int) (at, after int) {
	if next+n > size {
		next = 0
	}
	return next, next + (n+coldAlign-1)/coldAlign*coldAlign
}

// product is one product of shape s whose operands, at each call, are the
// next places along the pools.
func (p *coldPools[T]) product(s GemmShape) func() {
	n := s.operandElems()
	beta := T(0)
	if s.Accumulate {
		beta = 1
	}
	return func() {
		var at [3]int
		for r := range at {
			at[r], p.next[r] = place(p.next[r], n[r], len(p.buf[r]))
		}
		a, b, c := p.buf[0][at[0]:at[0]+n[0]], p.buf[1][at[1]:at[1]+n[1]], p.buf[2][at[2]:at[2]+n[2]]
		shapeProduct(s, 1, a, b, beta, c)
	}
}
