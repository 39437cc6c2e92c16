package ops

import (
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
// starts (some 3·span bytes each).
func ReplayGemmShapesCold(shapes GemmShapes, goroutines, rounds, span int) (time.Duration, error) {
	if span < 1 {
		return 0, errors.Errorf("replay gemm shapes cold: span %d bytes must be >= 1 (ops.ColdSpan gives one that leaves the last-level cache cold)", span)
	}
	return replayShapes("replay gemm shapes cold", shapes, goroutines, rounds, func(sh shapeShare) []replayRun {
		return sh.prepareCold(span)
	})
}

// prepareCold is prepare with operands taken from successive places along
// buffers of at least span bytes per role (per element type present), and
// runs each shape once.
func (sh shapeShare) prepareCold(span int) []replayRun {
	need32, need64 := sh.operandNeeds()
	p32, p64 := newColdPools[float32](need32, span/4), newColdPools[float64](need64, span/8)
	return sh.ready(p32.product, p64.product)
}

// coldPools are one goroutine's buffers for a, b and c of one element type,
// and where the next product takes each from.
type coldPools[T floats] struct {
	buf  [3][]T
	next [3]int
}

// newColdPools makes buffers of max(spanElems, 2·need) elements for each
// role with a need (none where need is 0), filled as replayOperands fills.
func newColdPools[T floats](need [3]int, spanElems int) *coldPools[T] {
	p := &coldPools[T]{}
	var lens [3]int
	for r, n := range need {
		if n > 0 {
			lens[r] = max(spanElems, 2*n)
		}
	}
	p.buf[0], p.buf[1], p.buf[2] = replayOperands[T](lens)
	return p
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
		blasGemm(s.TransA, s.TransB, s.M, s.N, s.K, 1, a, s.LDA, b, s.LDB, beta, c, s.LDC)
	}
}
