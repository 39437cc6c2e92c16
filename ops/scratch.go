package ops

import (
	"math"
	"math/bits"
	"sync"
	"unsafe"
)

// The kernels' temporary buffers (attention's probability blocks, SSD's
// chunk workspaces, CDMoE's hidden activations) come from size-classed
// pools instead of make, so that a training step reuses the memory of the
// step before: at d_model 256 they were hundreds of MB per step of fresh
// pages, each one faulted in and zeroed by the kernel, and garbage for the
// collector. A buffer is handed back with releaseScratch when its kernel
// call is done and must not be used after that.

// scratchPools[0] holds []float32, [1] []float64; index c is the size
// class, capacity 2^c. A pool holds pointers to slice headers (a slice
// put in an interface would be an allocation of its own); the headers
// themselves go round through scratchHeaders, so that neither taking a
// buffer nor handing it back allocates once the pools are warm.
var scratchPools [2][48]sync.Pool

// scratchHeaders[k] holds empty *[]T of scratchPools[k]'s element type:
// the headers of buffers handed out, waiting for the next release.
var scratchHeaders [2]sync.Pool

// takeScratch is a buffer of size class c from its pool (its header goes
// back to scratchHeaders), nil when the pool is empty.
func takeScratch[T floats](c int) []T {
	k := scratchKind[T]()
	p, ok := scratchPools[k][c].Get().(*[]T)
	if !ok {
		return nil
	}
	s := *p
	*p = nil
	scratchHeaders[k].Put(p)
	return s
}

func scratchKind[T floats]() int {
	var z T
	if unsafe.Sizeof(z) == 4 {
		return 0
	}
	return 1
}

// scratch returns a zeroed []T of length n, from the pool when one of its
// size class is there.
func scratch[T floats](n int) []T {
	if n == 0 {
		return nil
	}
	c := bits.Len(uint(n - 1))
	if s := takeScratch[T](c); s != nil {
		s = s[:n]
		clear(s)
		return s
	}
	return make([]T, n, 1<<c)
}

// scratchUninit is scratch without the clearing, for a buffer its caller
// overwrites whole before reading (a gemm with beta 0, a gather, an
// elementwise kernel's output): its contents are whatever the pool held.
func scratchUninit[T floats](n int) []T {
	if n == 0 {
		return nil
	}
	c := bits.Len(uint(n - 1))
	s := takeScratch[T](c)
	if s == nil {
		s = make([]T, n, 1<<c)
	}
	s = s[:n]
	if poisonUninitScratch {
		poison(s)
	}
	return s
}

// poisonUninitScratch fills scratchUninit's buffers with NaN, so that a
// caller reading an element before writing it shows in the results. The
// package's tests set it.
var poisonUninitScratch = false

// poison fills b with NaN.
func poison[T floats](b []T) {
	for i := range b {
		b[i] = T(math.NaN())
	}
}

// releaseScratchAny is releaseScratch of a save held as an any: a
// []float32 or []float64 from scratch goes back to its pool; nil or
// anything else is left alone.
func releaseScratchAny(b any) {
	switch s := b.(type) {
	case []float32:
		releaseScratch(s)
	case []float64:
		releaseScratch(s)
	}
}

// releaseScratch hands s (from scratch) back to its pool.
func releaseScratch[T floats](s []T) {
	c := cap(s)
	if c == 0 || c&(c-1) != 0 {
		return // not from scratch
	}
	k := scratchKind[T]()
	p, ok := scratchHeaders[k].Get().(*[]T)
	if !ok {
		p = new([]T)
	}
	*p = s[:c]
	scratchPools[k][bits.Len(uint(c-1))].Put(p)
}
