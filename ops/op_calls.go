package ops

import (
	"unsafe"

	"github.com/pkg/errors"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// opCalls is what one fused op's Do keeps from one run of its graph to the
// next so as not to allocate it again on every call: the kernel's shapes
// (a kernel builds them anew each time it is asked), the list of input
// buffers handed to the kernel, each input's data as the kernel takes it
// (a []float32 put in an interface is an allocation, and Gorgonia's
// Dense.Data builds it through reflection, which is two), and the
// *tensor.Dense that wraps the op's output. At (SM)4 d_model 64 these were
// most of an evaluation step's 2,605 allocations (docs/performance.md,
// "Allocations between the products"). Nothing here changes a value: a
// cached box or tensor is used only when it describes the same memory, the
// same length and the same shape as a fresh one would. An op's Do runs
// once per run of its graph and a graph is never run by two machines at
// once (see reusedBuffer), so opCalls has no lock. A nil *opCalls
// allocates everything, as Do did before.
type opCalls struct {
	inShapes []tensor.Shape
	outShape tensor.Shape
	in, dIn  []any
	terms    []any
	boxes    []boxedBuffer
	out      cachedDense
	// diff is the kernel's diffWRT, packed the length of a backward op's
	// packed gradients (packedSize) and packedShape its shape.
	diff        []bool
	packed      int
	packedShape tensor.Shape
	// slices are the views of the packed gradients handed to a backward
	// kernel last time, by input, and slicedFrom the packed vector they
	// view.
	slices     []any
	slicedFrom any
}

// newOpCalls is the cache of an op on kernel k that reads reads values.
func newOpCalls(k kernel, reads int) *opCalls {
	packed := packedSize(k)
	return &opCalls{inShapes: k.inShapes(), outShape: k.outShape(), boxes: make([]boxedBuffer, reads),
		diff: k.diffWRT(), packed: packed, packedShape: tensor.Shape{packed}}
}

// kernelDiffWRT is k's diffWRT, asked once.
func (c *opCalls) kernelDiffWRT(k kernel) []bool {
	if c == nil {
		return k.diffWRT()
	}
	return c.diff
}

// packedSize is packedSize(k), computed once.
func (c *opCalls) packedSize(k kernel) int {
	if c == nil {
		return packedSize(k)
	}
	return c.packed
}

// packedSlice is packed[lo:hi], input i's gradient in a backward op's
// packed vector: the previous call's when packed is the same vector.
func (c *opCalls) packedSlice(i int, packed any, lo, hi int) any {
	if c == nil {
		return sliceBuffer(packed, lo, hi)
	}
	if len(c.slices) != len(c.inShapes) || !sameBuffer(c.slicedFrom, packed) {
		c.slices = make([]any, len(c.inShapes))
		c.slicedFrom = packed
	}
	if c.slices[i] == nil {
		c.slices[i] = sliceBuffer(packed, lo, hi)
	}
	return c.slices[i]
}

// kernelInShapes is k's input shapes, asked once.
func (c *opCalls) kernelInShapes(k kernel) []tensor.Shape {
	if c == nil {
		return k.inShapes()
	}
	return c.inShapes
}

// kernelOutShape is k's output shape, asked once. The caller must not
// change it.
func (c *opCalls) kernelOutShape(k kernel) tensor.Shape {
	if c == nil {
		return k.outShape()
	}
	return c.outShape
}

// inputs is a list of n input buffers for the kernel, the same list on
// every call: the kernel must not keep it past its call.
func (c *opCalls) inputs(n int) []any {
	if c == nil {
		return make([]any, n)
	}
	return clearedList(&c.in, n)
}

// gradients is a list of n cleared gradient buffers for a backward
// kernel, the same list on every call.
func (c *opCalls) gradients(n int) []any {
	if c == nil {
		return make([]any, n)
	}
	return clearedList(&c.dIn, n)
}

// termList is a list of n cleared buffers for the gradient terms a
// backward kernel sums (gradientTerms), the same list on every call.
func (c *opCalls) termList(n int) []any {
	if c == nil {
		return make([]any, n)
	}
	return clearedList(&c.terms, n)
}

// clearedList is *l with n cleared elements, made anew only when its
// length differs.
func clearedList(l *[]any, n int) []any {
	if len(*l) != n {
		*l = make([]any, n)
	}
	clear(*l)
	return *l
}

// bufferOf is bufferOf of the i-th value the op reads, through that
// value's box.
func (c *opCalls) bufferOf(i int, v G.Value, dt tensor.Dtype) (any, error) {
	if c == nil || i >= len(c.boxes) {
		return bufferOf(v, dt)
	}
	return c.boxes[i].of(v, dt)
}

// output wraps buf (of the op's output shape s) as a value, the previous
// call's tensor when it still describes buf.
func (c *opCalls) output(buf any, s tensor.Shape) G.Value {
	if c == nil {
		return valueOf(buf, s)
	}
	return c.out.of(buf, s)
}

// packedOutput wraps a backward op's packed gradients (size values) as a
// vector, the previous call's tensor when it still describes packed.
func (c *opCalls) packedOutput(packed any, size int) G.Value {
	if c == nil {
		return valueOf(packed, tensor.Shape{size})
	}
	return c.out.of(packed, c.packedShape)
}

// forget lets go of every buffer the cache refers to (ReleaseBuffers,
// and a new plan), so that it holds no memory between runs.
func (c *opCalls) forget() {
	if c == nil {
		return
	}
	clear(c.in)
	clear(c.dIn)
	clear(c.boxes)
	c.out = cachedDense{}
	c.slices, c.slicedFrom = nil, nil
}

// boxedBuffer is one value's data as a kernel takes it (a []float32 or
// []float64 in an any), with the address, length and dtype it was taken
// from. The box keeps that memory alive, so while it is held no other
// allocation can start at the same address: equal address, length and
// dtype mean the same slice.
type boxedBuffer struct {
	at  uintptr
	n   int
	dt  tensor.Dtype
	box any
}

// of is bufferOf(v, dt), the box of the previous call when v's data is the
// same slice. Anything but a plain row-major dense tensor of dt (a scalar,
// a view, a transposed tensor) goes through bufferOf.
func (b *boxedBuffer) of(v G.Value, dt tensor.Dtype) (any, error) {
	x, ok := v.(*tensor.Dense)
	if !ok || x.Dtype() != dt || x.IsScalar() || x.IsMaterializable() || !x.DataOrder().IsRowMajor() || x.MemSize() == 0 {
		return bufferOf(v, dt)
	}
	at, n := x.Uintptr(), x.DataSize()
	if b.box != nil && b.at == at && b.n == n && b.dt == dt {
		return b.box, nil
	}
	var box any
	switch dt {
	case tensor.Float32:
		box = x.Float32s()
	case tensor.Float64:
		box = x.Float64s()
	default:
		return nil, errors.Errorf("dtype %v, want float32 or float64", dt)
	}
	*b = boxedBuffer{at: at, n: n, dt: dt, box: box}
	return box, nil
}

// cachedDense is the tensor an op last returned for its output; a nil
// *cachedDense makes a new one every time.
type cachedDense struct {
	d *tensor.Dense
}

// of wraps buf as a value of shape s (valueOf), returning the previous
// tensor when it still is exactly that: the same memory, length, dtype
// and shape, row-major, not a view, not transposed. A Gorgonia op
// downstream may change a tensor it reads in place (a reshape run unsafely
// changes its shape; UnbindAll hands it back to tensor's pool, which
// empties it); such a tensor fails the checks and a new one is made.
func (c *cachedDense) of(buf any, s tensor.Shape) G.Value {
	switch b := buf.(type) {
	case []float32:
		return cachedOf(c, b, s)
	case []float64:
		return cachedOf(c, b, s)
	}
	return valueOf(buf, s)
}

// cachedOf is c.of on a typed buffer, which it puts in an interface (an
// allocation) only when it makes a new tensor.
func cachedOf[T floats](c *cachedDense, buf []T, s tensor.Shape) G.Value {
	if c == nil || s.IsScalar() {
		return valueOf(buf, s)
	}
	if d := c.d; d != nil && d.MemSize() > 0 && !d.IsMaterializable() && d.DataOrder().IsRowMajor() &&
		d.Shape().Eq(s) && d.Dtype() == dtypeOf[T]() && len(buf) > 0 && d.DataSize() == len(buf) &&
		d.Uintptr() == uintptr(unsafe.Pointer(&buf[0])) {
		return d
	}
	v := valueOf(buf, s)
	c.d, _ = v.(*tensor.Dense)
	return v
}

// dtypeOf is T's tensor dtype.
func dtypeOf[T floats]() tensor.Dtype {
	if scratchKind[T]() == 0 {
		return tensor.Float32
	}
	return tensor.Float64
}

// forget lets go of the tensor.
func (c *cachedDense) forget() {
	if c != nil {
		c.d = nil
	}
}
