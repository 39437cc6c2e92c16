package ops

import (
	"testing"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// A fused op keeps its output buffer between runs and writes the next run
// into it; ReleaseBuffers drops every such buffer of a graph.
func TestReleaseBuffers(t *testing.T) {
	g := G.NewGraph()
	x := G.NewTensor(g, tensor.Float64, 2, G.WithShape(2, 3), G.WithName("x"),
		G.WithValue(tensor.New(tensor.WithShape(2, 3), tensor.WithBacking([]float64{1, 2, 3, 4, 5, 6}))))
	y, err := SiLU(x)
	if err != nil {
		t.Fatal(err)
	}
	cost, err := G.Sum(y)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := G.Grad(cost, x); err != nil {
		t.Fatal(err)
	}
	vm := G.NewTapeMachine(g)
	defer vm.Close()
	buffers := func() (held, ops int) {
		for _, n := range g.AllNodes() {
			switch op := n.Op().(type) {
			case fusedOp:
				ops++
				if op.out.buf != nil {
					held++
				}
			case fusedDiffOp:
				ops++
				if op.packed.buf != nil {
					held++
				}
			}
		}
		return held, ops
	}
	if err := vm.RunAll(); err != nil {
		t.Fatal(err)
	}
	first := &y.Value().Data().([]float64)[0]
	vm.Reset()
	if err := vm.RunAll(); err != nil {
		t.Fatal(err)
	}
	if &y.Value().Data().([]float64)[0] != first {
		t.Error("the second run did not write into the first run's buffer")
	}
	if held, n := buffers(); n != 2 || held != 2 {
		t.Fatalf("%d of %d fused ops hold a buffer after a run, want 2 of 2", held, n)
	}
	ReleaseBuffers(g)
	if held, _ := buffers(); held != 0 {
		t.Errorf("%d fused ops still hold a buffer after ReleaseBuffers", held)
	}
}

// Under the tests, a reused buffer of a kernel that says it writes its whole
// output comes back full of NaN (and one that does not say so, zeroed), so
// that a wrong claim shows in the results.
func TestReusedBufferPoisonedUnlessZeroed(t *testing.T) {
	var r reusedBuffer
	b := r.get(tensor.Float32, 4, false).([]float32)
	copy(b, []float32{1, 2, 3, 4})
	for i, v := range r.get(tensor.Float32, 4, false).([]float32) {
		if v == v {
			t.Fatalf("element %d = %v after a reuse without zeroing, want NaN", i, v)
		}
	}
	for i, v := range r.get(tensor.Float32, 4, true).([]float32) {
		if v != 0 {
			t.Fatalf("element %d = %v after a reuse with zeroing, want 0", i, v)
		}
	}
}
