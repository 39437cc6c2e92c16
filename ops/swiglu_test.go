package ops

import (
	"fmt"
	"math"
	"math/rand"
	"runtime"
	"testing"

	G "gorgonia.org/gorgonia"
)

func swigluFDInputs(shape []int, d, f int) []fdInput {
	return []fdInput{
		{name: "x", shape: append(append([]int{}, shape...), d)},
		{name: "W1", shape: []int{d, f}},
		{name: "W3", shape: []int{d, f}},
		{name: "W2", shape: []int{f, d}},
	}
}

// swigluWithBlock is SwiGLU with the blocks of rows set by hand, so that a
// finite-difference check small enough to run covers several blocks, both
// gradient groups and a short last block.
func swigluWithBlock(blk int) func(in []*G.Node) (*G.Node, error) {
	return func(in []*G.Node) (*G.Node, error) {
		xs, ws := in[0].Shape(), in[1].Shape()
		return apply(swigluKernel{x: xs.Clone(), d: ws[0], f: ws[1], blk: blk, saved: &swigluSaved{}}, in...)
	}
}

// SwiGLU's four gradients against central finite differences (float64),
// run whole and by blocks of rows.
func TestSwiGLUGradFD(t *testing.T) {
	for _, blk := range []int{0, 3, 4} {
		t.Run(fmt.Sprintf("blk=%d", blk), func(t *testing.T) {
			checkGradFD(t, 31, swigluFDInputs([]int{2, 5}, 4, 6), swigluWithBlock(blk))
		})
	}
}

// SwiGLU computes what Linear, GatedSiLU and Linear compute in turn, values
// and gradients, at d_model 64's sizes (float64, so that only the order of
// the sums differs): one op in the small kernels' blocks, in
// swigluPackedRows blocks (300 and 264 rows: a short last block) and (40
// rows) whole; and with both paths off, the three nodes themselves.
//
// The swigluPackedRows blocks are compared only in the build that runs them
// (OpenBLAS's). Forced on in the pure-Go build, gonum's dgemm sums these
// 256-row products' inner dimension in blocks of 64 into the output, and
// one dx value of 1.8e-3, left by terms of about 1e2, came out 1.3e-12 from
// the nodes'; the blocked backward's bits are still checked there
// (TestSwiGLUBackwardPaths), and its gradients by finite differences
// (TestSwiGLUGradFD).
func TestSwiGLUMatchesLinearGateLinear(t *testing.T) {
	defer func(s, p bool) { blasSmallKernels, blasPackedBlocks = s, p }(blasSmallKernels, blasPackedBlocks)
	const d, f = 64, 176
	type path struct {
		small, packed bool // blasSmallKernels, blasPackedBlocks
		blk           int  // the blocks SwiGLU must choose (0: the nodes)
	}
	paths := []path{{false, false, 0}, {true, false, tallRowBlockFor(t, f, d)}}
	if blasPackedBlocks {
		paths = append(paths, path{false, true, swigluPackedRows})
	}
	for _, path := range paths {
		blasSmallKernels, blasPackedBlocks = path.small, path.packed
		blocked := path.blk > 0
		for _, shape := range [][]int{{2, 150}, {3, 88}, {1, 40}} {
			name := fmt.Sprintf("small=%v packed=%v shape=%v", path.small, path.packed, shape)
			r := rand.New(rand.NewSource(3))
			data := drawInputs(r, swigluFDInputs(shape, d, f))
			dy := randData(r, len(data[0]), nil)
			run := func(fused bool) [][]float64 {
				g := G.NewGraph()
				in := fdNodes(g, swigluFDInputs(shape, d, f), data)
				var y *G.Node
				if fused {
					y = G.Must(SwiGLU(in[0], in[1], in[2], in[3]))
					op, _ := y.Op().(fusedOp)
					sk, one := op.k.(swigluKernel)
					if one != blocked || sk.blk != path.blk {
						t.Fatalf("%s: SwiGLU built %v (blocks of %d rows), want blocks of %d", name, y.Op(), sk.blk, path.blk)
					}
				} else {
					y = G.Must(Linear(G.Must(GatedSiLU(G.Must(Linear(in[0], in[2])), G.Must(Linear(in[0], in[1])))), in[3]))
				}
				cost := G.Must(weightedSum(y, tensorNode(g, "dy", dy, y.Shape()...)))
				grads, err := G.Grad(cost, in...)
				if err != nil {
					t.Fatal(err)
				}
				return evaluate(t, g, append(G.Nodes{y}, grads...)...)
			}
			got, want := run(true), run(false)
			for i, what := range []string{"y", "dx", "dW1", "dW3", "dW2"} {
				assertClose(t, name+" "+what, got[i], want[i], 1e-12, 1e-12)
			}
		}
	}
}

// A backward that finds no save for its inputs (an evaluation forward ran,
// or none) computes x W1 and x W3 again, and gives the bits of one that
// used the save; and the blocked backward's weight gradients do not depend
// on how many workers run its groups. Both block sizes: the small kernels'
// and swigluPackedRows (300 rows: a block of 256 and one of 44); float64
// and float32 (where OpenBLAS's packed kernels round a row by its place in
// the product, so the backward must run the forward's blocks).
func TestSwiGLUBackwardPaths(t *testing.T) {
	swigluBackwardPaths[float64](t)
	swigluBackwardPaths[float32](t)
}

func swigluBackwardPaths[T floats](t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	const d, f = 64, 176
	r := rand.New(rand.NewSource(4))
	var in []any
	for _, v := range drawInputs(r, swigluFDInputs([]int{2, 150}, d, f)) {
		in = append(in, floatsAs[T](v))
	}
	dy := floatsAs[T](randData(r, 300*d, nil))
	for _, blk := range []int{tallRowBlockFor(t, f, d), swigluPackedRows} {
		if blk >= 300 {
			t.Fatalf("blocks of %d rows: the case does not block", blk)
		}
		var ref [][]T
		for _, c := range []struct {
			save  bool
			procs int
		}{{true, 1}, {false, 1}, {true, 3}, {false, 2}} {
			runtime.GOMAXPROCS(c.procs)
			k := swigluKernel{x: []int{2, 150, d}, d: d, f: f, blk: blk, saved: &swigluSaved{}}
			k.saved.wanted = c.save
			what := fmt.Sprintf("%T, blocks of %d, save %v", T(0), blk, c.save)
			if err := k.forward(in, make([]T, 300*d)); err != nil {
				t.Fatal(err)
			}
			if kept := k.saved.h1 != nil; kept != c.save {
				t.Fatalf("%s: forward kept H1 %v", what, kept)
			}
			grads := make([][]T, len(in))
			dIn := make([]any, len(in))
			for j := range in {
				grads[j] = make([]T, len(in[j].([]T)))
				dIn[j] = grads[j]
			}
			if err := k.backward(in, nil, dy, dIn); err != nil {
				t.Fatal(err)
			}
			if k.saved.h1 != nil || k.saved.h3 != nil {
				t.Fatalf("%s: the backward left its save in place", what)
			}
			if ref == nil {
				ref = grads
				continue
			}
			for i := range grads {
				for j := range grads[i] {
					if math.Float64bits(float64(grads[i][j])) != math.Float64bits(float64(ref[i][j])) {
						t.Fatalf("%s GOMAXPROCS %d: gradient of input %d [%d] = %v, against the save at 1: %v", what, c.procs, i, j, grads[i][j], ref[i][j])
					}
				}
			}
		}
	}
}

// tallRowBlockFor is tallRowBlock(n, k) with the small kernels on; the
// test fails if that does not block.
func tallRowBlockFor(t *testing.T, n, k int) int {
	defer func(v bool) { blasSmallKernels = v }(blasSmallKernels)
	blasSmallKernels = true
	blk := tallRowBlock(n, k)
	if blk == 0 {
		t.Fatalf("tallRowBlock(%d, %d) does not block with the small kernels on", n, k)
	}
	return blk
}

// Bad shapes are refused with the shapes named.
func TestSwiGLUShapes(t *testing.T) {
	g := G.NewGraph()
	x := tensorNode(g, "x", make([]float64, 2*3*4), 2, 3, 4)
	w := func(name string, r, c int) *G.Node { return tensorNode(g, name, make([]float64, r*c), r, c) }
	for _, c := range []struct{ w1, w3, w2 *G.Node }{
		{w("a", 5, 6), w("b", 4, 6), w("c", 6, 4)},
		{w("d", 4, 6), w("e", 4, 5), w("f", 6, 4)},
		{w("g", 4, 6), w("h", 4, 6), w("i", 4, 6)},
	} {
		if _, err := SwiGLU(x, c.w1, c.w3, c.w2); err == nil {
			t.Errorf("W1 %v W3 %v W2 %v: no error", c.w1.Shape(), c.w3.Shape(), c.w2.Shape())
		}
	}
}
