package ops

import (
	"math/rand"
	"testing"

	"github.com/pkg/errors"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// planChain is a graph of fused ops in a chain, x → silu → silu → ... → a
// sum that a Gorgonia op takes, with w's gradient when grad is set: every
// link's value is dead once the next link has run, so all but the keep
// nodes and the value the Gorgonia op reads can share buffers.
type planChain struct {
	g     *G.ExprGraph
	x     *G.Node
	links G.Nodes
	cost  *G.Node
	grad  *G.Node
}

func newPlanChain(t *testing.T, n int, grad bool) planChain {
	t.Helper()
	g := G.NewGraph()
	r := rand.New(rand.NewSource(1))
	xs := make([]float64, 4*6)
	for i := range xs {
		xs[i] = r.NormFloat64()
	}
	x := G.NewTensor(g, tensor.Float64, 2, G.WithShape(4, 6), G.WithName("x"),
		G.WithValue(tensor.New(tensor.WithShape(4, 6), tensor.WithBacking(xs))))
	ws := make([]float64, 6*6)
	for i := range ws {
		ws[i] = r.NormFloat64() / 3
	}
	// Values, not an initialiser, so that two chains compute the same.
	w := G.NewMatrix(g, tensor.Float64, G.WithShape(6, 6), G.WithName("w"),
		G.WithValue(tensor.New(tensor.WithShape(6, 6), tensor.WithBacking(ws))))
	c := planChain{g: g, x: x}
	h := x
	for i := 0; i < n; i++ {
		var err error
		if i%2 == 0 {
			h, err = SiLU(h)
		} else {
			h, err = Linear(h, w)
		}
		if err != nil {
			t.Fatal(err)
		}
		c.links = append(c.links, h)
	}
	var err error
	if c.cost, err = G.Sum(h); err != nil {
		t.Fatal(err)
	}
	if grad {
		gs, err := G.Grad(c.cost, w)
		if err != nil {
			t.Fatal(err)
		}
		c.grad = gs[0]
	}
	return c
}

// values runs the chain once and copies every link's value, the cost and
// the gradient.
func (c planChain) values(t *testing.T, vm G.VM) [][]float64 {
	t.Helper()
	if err := vm.RunAll(); err != nil {
		t.Fatal(err)
	}
	defer vm.Reset()
	var out [][]float64
	for _, n := range append(G.Nodes{c.cost}, c.links[len(c.links)-1]) {
		out = append(out, append([]float64(nil), toFloat64s(n.Value())...))
	}
	if c.grad != nil {
		out = append(out, append([]float64(nil), toFloat64s(c.grad.Value())...))
	}
	return out
}

func toFloat64s(v G.Value) []float64 {
	if s, ok := v.Data().([]float64); ok {
		return s
	}
	return []float64{v.Data().(float64)}
}

// Values whose lives do not overlap share buffers after PlanBuffers, and
// the results stay the same to the bit, in a forward graph and in one with
// its gradient (where the chain's values live until the backward).
func TestPlanBuffersSameBits(t *testing.T) {
	for _, grad := range []bool{false, true} {
		c := newPlanChain(t, 8, grad)
		vm := G.NewTapeMachine(c.g)
		want := c.values(t, vm)
		keep := G.Nodes{c.cost}
		if c.grad != nil {
			keep = append(keep, c.grad)
		}
		var got [][]float64
		plans, err := PlanBuffers(func() error { got = c.values(t, vm); return nil }, keep, c.g)
		if err != nil {
			t.Fatalf("%+v", err)
		}
		p := plans[0]
		// The last link is read by Gorgonia's Sum, so it keeps its own
		// buffer; without gradients the other seven alternate between two
		// shapes' buffers: silu [4,6] and linear [4,6] share, so two
		// buffers serve them all.
		if !grad && (p.Planned != 7 || p.Buffers != 2) {
			t.Errorf("forward chain: planned %d outputs in %d buffers, want 7 in 2", p.Planned, p.Buffers)
		}
		if grad && p.Planned <= 7 {
			t.Errorf("with gradients %d values were planned: the backward's packed gradients should take part", p.Planned)
		}
		for run := 0; run < 2; run++ {
			for i, v := range [][][]float64{got, c.values(t, vm)}[run] {
				for j := range v {
					if v[j] != want[i][j] {
						t.Fatalf("grad %v, run %d after planning: value %d[%d] = %v, unplanned %v", grad, run, i, j, v[j], want[i][j])
					}
				}
			}
		}
		if grad {
			// Every link lives until the backward: no two share a buffer.
			if err := vm.RunAll(); err != nil {
				t.Fatal(err)
			}
			seen := map[*float64]int{}
			for i, n := range c.links {
				a := &n.Value().Data().([]float64)[0]
				if j, ok := seen[a]; ok {
					t.Errorf("with gradients, links %d and %d share a buffer", j, i)
				}
				seen[a] = i
			}
			vm.Reset()
		}
		vm.Close()
	}
}

// Shared buffers really are shared: two links of a forward chain write into
// one buffer, while a kept node and the value a Gorgonia op reads keep their
// own; ReleaseBuffers drops the shared ones too.
func TestPlanBuffersSharesOnlyDeadValues(t *testing.T) {
	c := newPlanChain(t, 6, false)
	vm := G.NewTapeMachine(c.g)
	defer vm.Close()
	keep := c.links[1]
	if _, err := PlanBuffers(func() error { c.values(t, vm); return nil }, G.Nodes{keep}, c.g); err != nil {
		t.Fatalf("%+v", err)
	}
	// The shared buffers are the recorded run's: planning allocates none.
	for i, n := range c.links {
		if op := n.Op().(fusedOp); op.out.shared != nil && op.out.shared.buf == nil {
			t.Errorf("link %d's shared buffer is empty after planning: the next run would allocate it", i)
		}
	}
	if err := vm.RunAll(); err != nil {
		t.Fatal(err)
	}
	addr := func(n *G.Node) *float64 { return &n.Value().Data().([]float64)[0] }
	if addr(c.links[2]) != addr(c.links[4]) {
		t.Error("links 2 and 4 (silu, dead once read) do not share a buffer")
	}
	for i, n := range c.links {
		if n != keep && addr(n) == addr(keep) {
			t.Errorf("link %d shares the kept node's buffer", i)
		}
		if last := c.links[len(c.links)-1]; n != last && addr(n) == addr(last) {
			t.Errorf("link %d shares the buffer of the value Gorgonia's Sum reads", i)
		}
	}
	vm.Reset()
	ReleaseBuffers(c.g)
	for _, n := range c.links {
		if op := n.Op().(fusedOp); op.out.buf != nil || (op.out.shared != nil && op.out.shared.buf != nil) {
			t.Fatalf("%s holds a buffer after ReleaseBuffers", n.Name())
		}
	}
}

// A failing recorded run is reported, and only one plan is recorded at a
// time.
func TestPlanBuffersErrors(t *testing.T) {
	c := newPlanChain(t, 2, false)
	vm := G.NewTapeMachine(c.g)
	defer vm.Close()
	_, err := PlanBuffers(func() error {
		if _, err := PlanBuffers(func() error { return nil }, nil, c.g); err != ErrPlanBusy {
			t.Errorf("a plan inside a plan gave %v, want ErrPlanBusy", err)
		}
		return vm.RunAll()
	}, nil, c.g)
	if err != nil {
		t.Fatalf("%+v", err)
	}
	vm.Reset()
	if _, err := PlanBuffers(func() error { return errors.New("the run failed") }, nil, c.g); err == nil {
		t.Error("a failing run gave no error")
	}
}

// A reshape is a view: a value read only through reshapes that fused ops
// read takes part in a plan, unless a reshape of it is kept.
func TestPlanBuffersSeesThroughReshapes(t *testing.T) {
	build := func() (*G.ExprGraph, G.Nodes, *G.Node) {
		g := G.NewGraph()
		x := G.NewTensor(g, tensor.Float64, 2, G.WithShape(4, 6), G.WithName("x"), G.WithInit(G.GlorotN(1)))
		a, err := SiLU(x)
		if err != nil {
			t.Fatal(err)
		}
		ra, err := G.Reshape(a, tensor.Shape{6, 4})
		if err != nil {
			t.Fatal(err)
		}
		b, err := SiLU(ra)
		if err != nil {
			t.Fatal(err)
		}
		rb, err := G.Reshape(b, tensor.Shape{4, 6})
		if err != nil {
			t.Fatal(err)
		}
		c, err := SiLU(rb)
		if err != nil {
			t.Fatal(err)
		}
		cost, err := G.Sum(c)
		if err != nil {
			t.Fatal(err)
		}
		return g, G.Nodes{ra, rb}, cost
	}
	for _, keepReshape := range []bool{false, true} {
		g, reshapes, cost := build()
		vm := G.NewTapeMachine(g)
		keep := G.Nodes{cost}
		if keepReshape {
			keep = append(keep, reshapes[0])
		}
		var want float64
		plans, err := PlanBuffers(func() error {
			err := vm.RunAll()
			want = cost.Value().Data().(float64)
			vm.Reset()
			return err
		}, keep, g)
		if err != nil {
			t.Fatalf("%+v", err)
		}
		// a and b are read through reshapes; c by Gorgonia's Sum.
		if wantPlanned := map[bool]int{false: 2, true: 1}[keepReshape]; plans[0].Planned != wantPlanned {
			t.Errorf("reshape kept %v: %d values planned, want %d", keepReshape, plans[0].Planned, wantPlanned)
		}
		if err := vm.RunAll(); err != nil {
			t.Fatal(err)
		}
		if got := cost.Value().Data().(float64); got != want {
			t.Errorf("reshape kept %v: cost %v after planning, %v before", keepReshape, got, want)
		}
		vm.Close()
	}
}

// A dry plan (PlanBuffersDry) runs no kernel and leaves no fused op holding
// a buffer, plans the same sharing as a recorded run, and the runs after it
// give an unplanned run's values to the bit. Another graph run during the
// dry trace computes as usual.
func TestPlanBuffersDry(t *testing.T) {
	ref := newPlanChain(t, 8, true)
	refVM := G.NewTapeMachine(ref.g)
	defer refVM.Close()
	want := ref.values(t, refVM) // unplanned
	recorded := newPlanChain(t, 8, true)
	recVM := G.NewTapeMachine(recorded.g)
	defer recVM.Close()
	recPlans, err := PlanBuffers(func() error { recorded.values(t, recVM); return nil }, G.Nodes{recorded.cost, recorded.grad}, recorded.g)
	if err != nil {
		t.Fatalf("%+v", err)
	}

	c := newPlanChain(t, 8, true)
	vm := G.NewTapeMachine(c.g)
	defer vm.Close()
	other := newPlanChain(t, 8, true)
	otherVM := G.NewTapeMachine(other.g)
	defer otherVM.Close()
	var otherGot [][]float64
	var dryFLOPs int64
	plans, err := PlanBuffersDry(func() error {
		before := GemmFLOPs()
		if err := vm.RunAll(); err != nil {
			return err
		}
		dryFLOPs = GemmFLOPs() - before
		vm.Reset()
		otherGot = other.values(t, otherVM)
		return nil
	}, G.Nodes{c.cost, c.grad}, c.g)
	if err != nil {
		t.Fatalf("%+v", err)
	}
	if dryFLOPs != 0 {
		t.Errorf("the dry run did %d FLOPs of products: its kernels ran", dryFLOPs)
	}
	if plans[0] != recPlans[0] {
		t.Errorf("dry plan %+v, a recorded run's %+v", plans[0], recPlans[0])
	}
	for _, n := range c.g.AllNodes() {
		if r := ownBuffer(n.Op()); r != nil && (r.buf != nil || (r.shared != nil && r.shared.buf != nil)) {
			t.Errorf("%v holds a buffer after a dry plan", n.Op())
		}
	}
	same := func(what string, got [][]float64) {
		t.Helper()
		for i, v := range got {
			for j := range v {
				if v[j] != want[i][j] {
					t.Fatalf("%s: value %d[%d] = %v, unplanned %v", what, i, j, v[j], want[i][j])
				}
			}
		}
	}
	same("the graph run during the dry trace", otherGot)
	same("first run after the dry plan", c.values(t, vm))
	same("second run after the dry plan", c.values(t, vm))
}

// A backward op whose input gradient fused ops read, but whose weight
// gradient Gorgonia sums (w is read by several links) or the caller keeps,
// is planned: the weight gradient moves to a buffer of its own
// (sideGradients), which no other value shares, and the results keep their
// bits.
func TestPlanBuffersMovesKeptGradients(t *testing.T) {
	c := newPlanChain(t, 8, true)
	vm := G.NewTapeMachine(c.g)
	defer vm.Close()
	want := c.values(t, vm)
	if _, err := PlanBuffers(func() error { c.values(t, vm); return nil }, G.Nodes{c.cost, c.grad}, c.g); err != nil {
		t.Fatalf("%+v", err)
	}
	// Four linears; the first one's input gradient is read by nothing, so
	// its vector stays its own, and the other three are planned with their
	// weight gradients moved.
	planned, moved := 0, 0
	for _, n := range c.g.AllNodes() {
		d, ok := n.Op().(fusedDiffOp)
		if !ok || d.k.name() != "linear" {
			continue
		}
		if d.packed.shared != nil {
			planned++
		}
		if d.side.of(1) != nil {
			moved++
		}
	}
	if planned != 3 || moved != 3 {
		t.Fatalf("%d of 4 linears' gradients planned and %d weight gradients moved, want 3 and 3", planned, moved)
	}
	for run := 0; run < 2; run++ {
		got := c.values(t, vm)
		for i, v := range got {
			for j := range v {
				if v[j] != want[i][j] {
					t.Fatalf("run %d after planning: value %d[%d] = %v, unplanned %v", run, i, j, v[j], want[i][j])
				}
			}
		}
	}
	// No shared buffer is a moved gradient's.
	if err := vm.RunAll(); err != nil {
		t.Fatal(err)
	}
	shared := map[*float64]bool{}
	for _, n := range c.g.AllNodes() {
		if r := ownBuffer(n.Op()); r != nil && r.shared != nil {
			shared[&n.Value().Data().([]float64)[0]] = true
		}
	}
	for _, n := range c.g.AllNodes() {
		if u, ok := n.Op().(unpackOp); ok && u.side.of(u.index) != nil && shared[&n.Value().Data().([]float64)[0]] {
			t.Errorf("%v's moved gradient is in a shared buffer", u)
		}
	}
	vm.Reset()
	ReleaseBuffers(c.g)
	for _, n := range c.g.AllNodes() {
		if d, ok := n.Op().(fusedDiffOp); ok {
			for i, r := range d.side.by {
				if r.buf != nil {
					t.Errorf("%v holds gradient %d's own buffer after ReleaseBuffers", d, i)
				}
			}
		}
	}
}
