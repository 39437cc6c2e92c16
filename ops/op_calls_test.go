package ops

import (
	"testing"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// doubleKernel is y = 2x on a [2,3] float32 input, with dx = 2 dy: a
// kernel that allocates nothing, so that what its op's Do allocates is the
// wrapper's alone.
type doubleKernel struct{}

func (doubleKernel) name() string               { return "double" }
func (doubleKernel) attrs() string              { return "" }
func (doubleKernel) inShapes() []tensor.Shape   { return []tensor.Shape{{2, 3}} }
func (doubleKernel) outShape() tensor.Shape     { return tensor.Shape{2, 3} }
func (doubleKernel) diffWRT() []bool            { return []bool{true} }
func (doubleKernel) writesWholeOutput() bool    { return true }
func (doubleKernel) writesWholeGradients() bool { return true }
func (doubleKernel) forward(in []any, out any) error {
	x, y := in[0].([]float32), out.([]float32)
	for i := range y {
		y[i] = 2 * x[i]
	}
	return nil
}
func (doubleKernel) backward(in []any, out, dOut any, dIn []any) error {
	dy, dx := dOut.([]float32), dIn[0].([]float32)
	for i := range dx {
		dx[i] = 2 * dy[i]
	}
	return nil
}

func dense32(shape tensor.Shape, data ...float32) *tensor.Dense {
	return tensor.New(tensor.WithShape(shape...), tensor.WithBacking(data))
}

// wantValues fails unless v is a [2,3] float32 tensor holding want.
func wantValues(t *testing.T, what string, v G.Value, want ...float32) {
	t.Helper()
	if !v.Shape().Eq(tensor.Shape{2, 3}) {
		t.Fatalf("%s: shape %v, want (2, 3)", what, v.Shape())
	}
	got := v.Data().([]float32)
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("%s: %v, want %v", what, got, want)
		}
	}
}

// Once warm, a fused op's forward, its backward and an unpack of its
// gradient allocate nothing of their own: the kernel's shapes, the lists
// of buffers, the inputs' data as the kernel takes it and the output
// tensor are the previous call's.
func TestOpCallsAllocateNothingWhenWarm(t *testing.T) {
	k := doubleKernel{}
	fwd := fusedOp{k: k, out: new(reusedBuffer), calls: newOpCalls(k, 1)}
	diff := fusedDiffOp{k: k, packed: new(reusedBuffer), side: &sideGradients{}, calls: newOpCalls(k, 3)}
	unpack := unpackOp{of: k.name(), shape: tensor.Shape{2, 3}, side: diff.side, out: new(cachedDense)}
	x := dense32(tensor.Shape{2, 3}, 1, 2, 3, 4, 5, 6)
	dy := dense32(tensor.Shape{2, 3}, 1, 1, 1, 1, 1, 1)
	var y, packed, dx G.Value
	step := func() {
		var err error
		if y, err = fwd.Do(x); err != nil {
			t.Fatal(err)
		}
		if packed, err = diff.Do(x, y, dy); err != nil {
			t.Fatal(err)
		}
		if dx, err = unpack.Do(packed); err != nil {
			t.Fatal(err)
		}
	}
	step()
	if n := testing.AllocsPerRun(20, step); n != 0 {
		t.Errorf("a warm forward, backward and unpack allocated %v times, want 0", n)
	}
	wantValues(t, "y", y, 2, 4, 6, 8, 10, 12)
	wantValues(t, "dx", dx, 2, 2, 2, 2, 2, 2)
	// Without the caches (ops built before them) Do still works, allocating.
	bare := fusedOp{k: k, out: new(reusedBuffer)}
	v, err := bare.Do(x)
	if err != nil {
		t.Fatal(err)
	}
	wantValues(t, "y without a cache", v, 2, 4, 6, 8, 10, 12)
}

// The caches never stand for a value that changed: a new input in other
// memory, a view, an output tensor whose shape a Gorgonia op changed in
// place, or one handed back to tensor's pool, each gets what a fresh Do
// would give.
func TestOpCallsFollowChanges(t *testing.T) {
	k := doubleKernel{}
	op := fusedOp{k: k, out: new(reusedBuffer), calls: newOpCalls(k, 1)}
	do := func(x G.Value) G.Value {
		t.Helper()
		v, err := op.Do(x)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	a := dense32(tensor.Shape{2, 3}, 1, 2, 3, 4, 5, 6)
	first := do(a)
	if again := do(a); again != first {
		t.Error("the same input's second run returned a new tensor over the same buffer")
	}
	// The same tensor with new contents: the kernel reads them.
	copy(a.Data().([]float32), []float32{6, 5, 4, 3, 2, 1})
	wantValues(t, "new contents", do(a), 12, 10, 8, 6, 4, 2)
	// Another tensor in other memory.
	b := dense32(tensor.Shape{2, 3}, 0, 1, 0, 1, 0, 1)
	wantValues(t, "another input", do(b), 0, 2, 0, 2, 0, 2)
	// A view: rows 1 and 2 of a [3,3] tensor, materialised.
	big := dense32(tensor.Shape{3, 3}, 9, 9, 9, 1, 2, 3, 4, 5, 6)
	view, err := big.Slice(G.S(1, 3))
	if err != nil {
		t.Fatal(err)
	}
	wantValues(t, "a view", do(view.(*tensor.Dense)), 2, 4, 6, 8, 10, 12)
	// The output reshaped in place (Gorgonia's reshape run unsafely).
	y := do(b).(*tensor.Dense)
	if err := y.Reshape(3, 2); err != nil {
		t.Fatal(err)
	}
	wantValues(t, "after the output was reshaped", do(b), 0, 2, 0, 2, 0, 2)
	// The output handed back to tensor's pool (Gorgonia's UnbindAll).
	tensor.ReturnTensor(do(b).(*tensor.Dense))
	wantValues(t, "after the output went back to the pool", do(b), 0, 2, 0, 2, 0, 2)
	// ReleaseBuffers' forget: nothing held, the next run still right.
	op.calls.forget()
	if op.calls.out.d != nil || op.calls.boxes[0].box != nil {
		t.Error("forget kept a tensor or a box")
	}
	wantValues(t, "after forget", do(a), 12, 10, 8, 6, 4, 2)
}
