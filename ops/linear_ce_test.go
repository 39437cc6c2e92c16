package ops

import (
	"fmt"
	"math"
	"math/rand"
	"runtime"
	"strings"
	"testing"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// linearCEInputs are x [shape..., d], W [d, V] and targets [shape...] with
// about one target in V+1 ignored (-1).
func linearCEInputs(shape []int, d, v int) []fdInput {
	targets := func(r *rand.Rand) float64 { return float64(r.Intn(v+1) - 1) }
	return []fdInput{
		{name: "x", shape: append(append([]int{}, shape...), d)},
		{name: "W", shape: []int{d, v}, gen: func(r *rand.Rand) float64 { return 2 * r.NormFloat64() }},
		{name: "targets", shape: shape, gen: targets, noGrad: true},
	}
}

// linearCEWithBlock is LinearCrossEntropy with the blocks of rows set by
// hand, so that a finite-difference check small enough to run covers
// several blocks, both groups and a short last block.
func linearCEWithBlock(blk int, red Reduction) func(in []*G.Node) (*G.Node, error) {
	return func(in []*G.Node) (*G.Node, error) {
		xs, ws := in[0].Shape(), in[1].Shape()
		return apply(linearCEKernel{x: xs.Clone(), d: ws[0], v: ws[1], red: red, blk: blk, saved: &linearCESaved{}}, in...)
	}
}

// The gradients of x and W against central finite differences (float64),
// by blocks of 3 and 4 rows of 10, for both reductions; the check's
// upstream gradient is not 1, so the backward's scaling is covered.
func TestLinearCrossEntropyGradFD(t *testing.T) {
	for _, red := range []Reduction{ReduceMean, ReduceSum} {
		for _, blk := range []int{3, 4} {
			t.Run(fmt.Sprintf("%s/blk=%d", red, blk), func(t *testing.T) {
				checkGradFD(t, 41, linearCEInputs([]int{2, 5}, 4, 7), linearCEWithBlock(blk, red))
			})
		}
	}
}

// LinearCrossEntropy computes what Linear and CrossEntropy compute in turn,
// loss and gradients, at d_model 64's sizes and the byte vocabulary, with
// the blocked path forced on (float64: only the order of the sums differs)
// and, with it off, as the two nodes themselves. Shapes leave a short last
// block, and one has a single block.
func TestLinearCrossEntropyMatchesLinearThenCE(t *testing.T) {
	defer func(v bool) { blasSmallKernels = v }(blasSmallKernels)
	const d, v = 64, 260
	for _, blocked := range []bool{false, true} {
		blasSmallKernels = blocked
		for _, red := range []Reduction{ReduceMean, ReduceSum} {
			for _, shape := range [][]int{{2, 150}, {3, 61}, {1, 40}} {
				name := fmt.Sprintf("blocked=%v %s shape=%v", blocked, red, shape)
				r := rand.New(rand.NewSource(5))
				data := drawInputs(r, linearCEInputs(shape, d, v))
				run := func(fused bool) [][]float64 {
					g := G.NewGraph()
					in := fdNodes(g, linearCEInputs(shape, d, v), data)
					var loss *G.Node
					if fused {
						loss = G.Must(LinearCrossEntropy(in[0], in[1], in[2], red))
						op, _ := loss.Op().(fusedOp)
						if _, one := op.k.(linearCEKernel); one != blocked {
							t.Fatalf("%s: LinearCrossEntropy built %v", name, loss.Op())
						}
					} else {
						loss = G.Must(CrossEntropy(G.Must(Linear(in[0], in[1])), in[2], red))
					}
					grads, err := G.Grad(loss, in[0], in[1])
					if err != nil {
						t.Fatal(err)
					}
					return evaluate(t, g, append(G.Nodes{loss}, grads...)...)
				}
				got, want := run(true), run(false)
				for i, what := range []string{"loss", "dx", "dW"} {
					assertClose(t, name+" "+what, got[i], want[i], 1e-12, 1e-12)
				}
			}
		}
	}
}

// In float32 the one op gives the bits of Linear and CrossEntropy for dx
// (the same products in the same blocks, on the same gradient rows, ignored
// rows among them), and a loss and dW within float32 rounding of theirs.
func TestLinearCrossEntropyFloat32Bits(t *testing.T) {
	if tallRowBlock(260, 64) == 0 {
		t.Skip("this build's BLAS does not run the head in row blocks")
	}
	const d, v, rows = 64, 260, 2 * 150
	r := rand.New(rand.NewSource(6))
	data := drawInputs(r, linearCEInputs([]int{2, 150}, d, v))
	data[2][0], data[2][77], data[2][rows-1] = -1, -1, -1 // ignored rows, in two blocks and the last
	run := func(fused bool) [][]float32 {
		g := G.NewGraph()
		in := make([]*G.Node, 3)
		for i, s := range linearCEInputs([]int{2, 150}, d, v) {
			f := make([]float32, len(data[i]))
			for j, x := range data[i] {
				f[j] = float32(x)
			}
			in[i] = G.NewTensor(g, tensor.Float32, len(s.shape), G.WithName(s.name),
				G.WithValue(tensor.New(tensor.WithShape(s.shape...), tensor.WithBacking(f))))
		}
		var loss *G.Node
		if fused {
			loss = G.Must(LinearCrossEntropy(in[0], in[1], in[2], ReduceMean))
		} else {
			loss = G.Must(CrossEntropy(G.Must(Linear(in[0], in[1])), in[2], ReduceMean))
		}
		grads, err := G.Grad(loss, in[0], in[1])
		if err != nil {
			t.Fatal(err)
		}
		vm := G.NewTapeMachine(g)
		defer vm.Close()
		if err := vm.RunAll(); err != nil {
			t.Fatal(err)
		}
		out := [][]float32{{loss.Value().Data().(float32)}}
		for _, n := range grads {
			out = append(out, append([]float32(nil), n.Value().Data().([]float32)...))
		}
		return out
	}
	got, want := run(true), run(false)
	for j := range want[1] {
		if math.Float32bits(got[1][j]) != math.Float32bits(want[1][j]) {
			t.Fatalf("dx[%d] = %v, Linear then CrossEntropy %v", j, got[1][j], want[1][j])
		}
	}
	if e := ulps32(got[0][0], float64(want[0][0])); e > 2 {
		t.Errorf("loss %v, Linear then CrossEntropy %v: %.0f ulps apart", got[0][0], want[0][0], e)
	}
	for j := range want[2] {
		if diff := math.Abs(float64(got[2][j] - want[2][j])); diff > 1e-5*(1+math.Abs(float64(want[2][j]))) {
			t.Fatalf("dW[%d] = %v, Linear then CrossEntropy %v (sums of %d rows)", j, got[2][j], want[2][j], rows)
		}
	}
}

// A backward that finds no save for its inputs (an evaluation forward ran)
// computes the gradients again with the bits of one that used the save; an
// evaluation forward keeps nothing; the loss and the gradients do not
// depend on how many workers run the groups.
func TestLinearCrossEntropyBackwardPaths(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	const d, v = 64, 260
	shape := []int{2, 150}
	r := rand.New(rand.NewSource(7))
	data := drawInputs(r, linearCEInputs(shape, d, v))
	in := []any{data[0], data[1], data[2]}
	var refLoss float64
	var ref [][]float64
	for _, c := range []struct {
		save  bool
		procs int
	}{{true, 1}, {false, 1}, {true, 3}, {false, 2}} {
		runtime.GOMAXPROCS(c.procs)
		k := linearCEKernel{x: []int{2, 150, d}, d: d, v: v, red: ReduceMean, blk: 60, saved: &linearCESaved{}}
		k.saved.wanted = c.save
		y := make([]float64, 1)
		if err := k.forward(in, y); err != nil {
			t.Fatal(err)
		}
		if kept := k.saved.dx != nil; kept != c.save {
			t.Fatalf("save %v: forward kept dx %v", c.save, kept)
		}
		grads := kernelGrads(t, k, in, []float64{1})
		if k.saved.dx != nil || k.saved.dw != nil {
			t.Fatalf("save %v: the backward left its save in place", c.save)
		}
		if ref == nil {
			refLoss, ref = y[0], grads
			continue
		}
		what := fmt.Sprintf("save %v GOMAXPROCS %d, against the first run:", c.save, c.procs)
		assertSameFloat64s(t, what+" loss", y, []float64{refLoss})
		assertSameFloat64s(t, what+" dx", grads[0], ref[0])
		assertSameFloat64s(t, what+" dW", grads[1], ref[1])
	}
}

// Bad shapes and reductions are refused with what was wrong named, and a
// target that is not a class index stops the forward with its position.
func TestLinearCrossEntropyErrors(t *testing.T) {
	g := G.NewGraph()
	x := tensorNode(g, "x", make([]float64, 2*3*4), 2, 3, 4)
	w := tensorNode(g, "w", make([]float64, 4*5), 4, 5)
	tg := tensorNode(g, "t", make([]float64, 2*3), 2, 3)
	for _, c := range []struct {
		name     string
		x, w, tg *G.Node
		red      Reduction
		want     string
	}{
		{"W rows", x, tensorNode(g, "w2", make([]float64, 3*5), 3, 5), tg, ReduceMean, "W (3, 5)"},
		{"targets", x, w, tensorNode(g, "t2", make([]float64, 3*2), 3, 2), ReduceMean, "targets (3, 2)"},
		{"reduction", x, w, tg, Reduction("max"), `reduction "max"`},
	} {
		if _, err := LinearCrossEntropy(c.x, c.w, c.tg, c.red); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one naming %q", c.name, err, c.want)
		}
	}
	k := linearCEKernel{x: []int{2, 3, 4}, d: 4, v: 5, red: ReduceMean, blk: 2, saved: &linearCESaved{}}
	targets := []float64{0, 1, 2, 5, 4, -1}
	err := k.forward([]any{make([]float64, 24), make([]float64, 20), targets}, make([]float64, 1))
	if err == nil || !strings.Contains(err.Error(), "target 3 is 5") {
		t.Fatalf("target 5 of a vocabulary of 5: error %v", err)
	}
}
