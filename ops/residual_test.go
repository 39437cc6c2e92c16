package ops

import (
	"fmt"
	"math/rand"
	"strings"
	"testing"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// twoBlocks builds two pre-norm residual blocks on x [2,3,8], each with a
// linear sublayer, and the final x. With alsoReadsX the second sublayer is
// (h W2) ⊙ silu(x1) instead, which reads the residual stream a third time. With
// fold it uses PreNorm and Residual.Add; without, RMSNorm and Add, the
// graph Gorgonia sums x's gradients in.
func twoBlocks(in []*G.Node, fold, alsoReadsX bool) (*G.Node, error) {
	x, w0, W, w1, W2 := in[0], in[1], in[2], in[3], in[4]
	x1, err := normBlock(x, w0, fold, func(h *G.Node) (*G.Node, error) { return Linear(h, W) })
	if err != nil {
		return nil, err
	}
	return normBlock(x1, w1, fold, func(h *G.Node) (*G.Node, error) {
		y, err := Linear(h, W2)
		if err != nil || !alsoReadsX {
			return y, err
		}
		return GatedSiLU(y, x1)
	})
}

var twoBlocksInputs = []fdInput{
	{name: "x", shape: []int{2, 3, 8}},
	{name: "w0", shape: []int{8}, gen: uniformIn(0.5, 1.5)},
	{name: "W", shape: []int{8, 8}},
	{name: "w1", shape: []int{8}, gen: uniformIn(0.5, 1.5)},
	{name: "W2", shape: []int{8, 8}},
}

// The pre-norm block's gradients, with x's two parts summed in the norm's
// backward, match central finite differences in float64; also when a
// sublayer reads the residual stream itself, whose gradient Gorgonia then
// adds to the norm's.
func TestPreNormGradFD(t *testing.T) {
	for _, alsoReadsX := range []bool{false, true} {
		checkGradFD(t, 31, twoBlocksInputs, func(in []*G.Node) (*G.Node, error) { return twoBlocks(in, true, alsoReadsX) })
	}
}

// PreNorm and Residual.Add give the same output and gradients, bit for
// bit, as RMSNorm and Add with Gorgonia's sum of x's two gradients (run by
// this package's engine, as the trainers run it), in float32 and float64;
// and the folded graph has no Gorgonia add left in its gradient.
func TestPreNormSameBitsAsNormAndAdd(t *testing.T) {
	for _, dt := range []tensor.Dtype{tensor.Float32, tensor.Float64} {
		r := rand.New(rand.NewSource(32))
		data := drawInputs(r, twoBlocksInputs)
		upstream := randData(r, 2*3*8, nil)
		got := blockValues(t, dt.String(), dt, twoBlocksInputs, data, upstream,
			func(n []*G.Node) (*G.Node, error) { return twoBlocks(n, true, false) },
			func(y *G.Node) {
				for _, n := range y.Graph().AllNodes() {
					if op := n.Op(); op != nil && strings.HasPrefix(op.String(), "+") && n.Shape().TotalSize() == 2*3*8 {
						t.Errorf("%v: the folded graph still sums x's gradients in Gorgonia (%v)", dt, n)
					}
				}
			})
		want := blockValues(t, dt.String(), dt, twoBlocksInputs, data, upstream,
			func(n []*G.Node) (*G.Node, error) { return twoBlocks(n, false, false) }, nil)
		for i, what := range []string{"output", "dx", "dw0", "dW", "dw1", "dW2"} {
			assertSameBits(t, dt.String()+" "+what, got[i], want[i])
		}
	}
}

// blockValues builds y = build(inputs) in dt from data, and the gradient of
// sum(y ⊙ upstream) with respect to every input; runs the graph on
// NewTapeMachine, as the trainers do; and returns y and the gradients, in
// the inputs' order. inspect, when not nil, sees y after the gradient is
// built and before the run.
func blockValues(t *testing.T, name string, dt tensor.Dtype, inputs []fdInput, data [][]float64, upstream []float64,
	build func(n []*G.Node) (*G.Node, error), inspect func(y *G.Node)) []tensor.Tensor {
	t.Helper()
	return blockValuesBy(t, name, dt, inputs, data, upstream, build, inspect, G.Grad)
}

// blockValuesBy is blockValues with the gradients taken by grad.
func blockValuesBy(t *testing.T, name string, dt tensor.Dtype, inputs []fdInput, data [][]float64, upstream []float64,
	build func(n []*G.Node) (*G.Node, error), inspect func(y *G.Node), grad gradFunc) []tensor.Tensor {
	t.Helper()
	g := G.NewGraph()
	n := make([]*G.Node, len(inputs))
	for i, s := range inputs {
		n[i] = G.NewTensor(g, dt, len(s.shape), G.WithName(s.name), G.WithValue(tensorOf(dt, data[i], s.shape)))
	}
	y, err := build(n)
	if err != nil {
		t.Fatalf("%s: build: %+v", name, err)
	}
	u := G.NewTensor(g, dt, y.Dims(), G.WithName("u"), G.WithValue(tensorOf(dt, upstream, y.Shape())))
	cost, err := weightedSum(y, u)
	if err != nil {
		t.Fatal(err)
	}
	grads, err := grad(cost, n...)
	if err != nil {
		t.Fatalf("%s: grad: %+v", name, err)
	}
	if inspect != nil {
		inspect(y)
	}
	vm := NewTapeMachine(g)
	defer vm.Close()
	if err := vm.RunAll(); err != nil {
		t.Fatalf("%s: run: %+v", name, err)
	}
	out := []tensor.Tensor{y.Value().(tensor.Tensor).Clone().(tensor.Tensor)}
	for _, gn := range grads {
		out = append(out, gn.Value().(tensor.Tensor).Clone().(tensor.Tensor))
	}
	return out
}

// closedBy is an inspect for blockValues: y must be the output of the
// fused op named op, the op that closed the block.
func closedBy(t *testing.T, name, op string) func(y *G.Node) {
	return func(y *G.Node) {
		if f, ok := y.Op().(fusedOp); !ok || f.k.name() != op {
			t.Fatalf("%s: the block closed with %v, want %s", name, y.Op(), op)
		}
	}
}

// tensorOf is data as a tensor of dt and shape.
func tensorOf(dt tensor.Dtype, data []float64, shape []int) tensor.Tensor {
	if dt == tensor.Float32 {
		v := make([]float32, len(data))
		for i, x := range data {
			v[i] = float32(x)
		}
		return tensor.New(tensor.WithShape(shape...), tensor.WithBacking(v))
	}
	return tensor.New(tensor.WithShape(shape...), tensor.WithBacking(append([]float64(nil), data...)))
}

// A block whose sublayer ignores h closes with a plain add, so x still
// gets the residual's gradient (checked by finite differences); a second
// Add and a y of another shape are errors that say what was wrong.
func TestResidualAddEdges(t *testing.T) {
	checkGradFD(t, 33, []fdInput{
		{name: "x", shape: []int{3, 4}},
		{name: "w", shape: []int{4}, gen: uniformIn(0.5, 1.5)},
		{name: "z", shape: []int{3, 4}},
	}, func(in []*G.Node) (*G.Node, error) {
		h, r, err := PreNorm(in[0], in[1], DefaultRMSNormEps)
		if err != nil {
			return nil, err
		}
		y, err := r.Add(in[2]) // y does not depend on h
		if err != nil {
			return nil, err
		}
		return Add(y, h) // h still reaches the output, after the add
	})

	g := G.NewGraph()
	x := tensorNode(g, "x", make([]float64, 12), 3, 4)
	w := tensorNode(g, "w", []float64{1, 1, 1, 1}, 4)
	h, r, err := PreNorm(x, w, DefaultRMSNormEps)
	if err != nil {
		t.Fatal(err)
	}
	wide := tensorNode(g, "wide", make([]float64, 15), 3, 5)
	if _, err := r.Add(wide); err == nil || !strings.Contains(err.Error(), "wide") {
		t.Errorf("Add of a [3,5] y to a [3,4] block: error %v, want one naming the shapes", err)
	}
	if _, err := r.Add(h); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Add(h); err == nil || !strings.Contains(err.Error(), "closed already") {
		t.Errorf("second Add: error %v, want \"closed already\"", err)
	}
	var none *Residual
	if _, err := none.Add(h); err == nil {
		t.Error("Add on a nil Residual: no error")
	}
}

// BenchmarkPreNormBlocks times two pre-norm blocks, x + h ⊙ v with
// h = RMSNorm(x), forward and backward: folded (PreNorm, x's two gradients
// summed inside the norm's backward) and summed (RMSNorm and Add, the sum
// Gorgonia builds), at the bench's d_model 64 and 256 sizes.
func BenchmarkPreNormBlocks(b *testing.B) {
	for _, s := range []struct{ batch, t, d int }{{8, 256, 64}, {4, 1024, 256}} {
		inputs := []fdInput{
			{name: "x", shape: []int{s.batch, s.t, s.d}},
			{name: "w0", shape: []int{s.d}, gen: uniformIn(0.5, 1.5)},
			{name: "w1", shape: []int{s.d}, gen: uniformIn(0.5, 1.5)},
			{name: "v", shape: []int{s.batch, s.t, s.d}, noGrad: true},
		}
		for _, fold := range []bool{true, false} {
			name := fmt.Sprintf("d%d/summed", s.d)
			if fold {
				name = fmt.Sprintf("d%d/folded", s.d)
			}
			b.Run(name, func(b *testing.B) {
				benchOp(b, s.batch*s.t, inputs, true, func(in []*G.Node) (*G.Node, error) {
					x := in[0]
					for _, w := range in[1:3] {
						var err error
						if x, err = preNormBlock(x, w, in[3], fold); err != nil {
							return nil, err
						}
					}
					return x, nil
				})
			})
		}
	}
}

// preNormBlock is x + RMSNorm(x; w) ⊙ v, folded (PreNorm) or not.
func preNormBlock(x, w, v *G.Node, fold bool) (*G.Node, error) {
	return normBlock(x, w, fold, func(h *G.Node) (*G.Node, error) { return Mul(h, v) })
}

// normBlock is x + f(RMSNorm(x; w)), closed by PreNorm's Residual.Add
// (fold) or by RMSNorm and Add.
func normBlock(x, w *G.Node, fold bool, f func(h *G.Node) (*G.Node, error)) (*G.Node, error) {
	var h *G.Node
	var r *Residual
	var err error
	if fold {
		h, r, err = PreNorm(x, w, DefaultRMSNormEps)
	} else {
		h, err = RMSNorm(x, w, DefaultRMSNormEps)
	}
	if err != nil {
		return nil, err
	}
	y, err := f(h)
	if err != nil {
		return nil, err
	}
	if fold {
		return r.Add(y)
	}
	return Add(x, y)
}

// residualSwiGLUWithBlock builds x + SwiGLU(RMSNorm(x; w)) closed inside
// the op (Residual.SwiGLU) with SwiGLU's blocks of rows set by hand (0:
// whole), from x, w, W1, W3, W2.
func residualSwiGLUWithBlock(blk int) func(in []*G.Node) (*G.Node, error) {
	return func(in []*G.Node) (*G.Node, error) {
		h, r, err := PreNorm(in[0], in[1], DefaultRMSNormEps)
		if err != nil {
			return nil, err
		}
		ws := in[2].Shape()
		if err := r.close(in[0].Shape()); err != nil {
			return nil, err
		}
		k := swigluKernel{x: h.Shape().Clone(), d: ws[0], f: ws[1], blk: blk, saved: &swigluSaved{}, res: r.link}
		return apply(k, h, in[2], in[3], in[4], in[0])
	}
}

func residualSwiGLUInputs(shape []int, d, f int) []fdInput {
	in := swigluFDInputs(shape, d, f)
	return append([]fdInput{in[0], {name: "w", shape: []int{d}, gen: uniformIn(0.5, 1.5)}}, in[1:]...)
}

// A block closed by its MLP (x + SwiGLU(RMSNorm(x)), the residual added in
// SwiGLU's blocks) against central finite differences in float64, whole
// and by blocks of rows with a short last block.
func TestResidualSwiGLUGradFD(t *testing.T) {
	for _, blk := range []int{0, 3, 4} {
		t.Run(fmt.Sprintf("blk=%d", blk), func(t *testing.T) {
			checkGradFD(t, 34, residualSwiGLUInputs([]int{2, 5}, 4, 6), residualSwiGLUWithBlock(blk))
		})
	}
}

// Residual.SwiGLU gives the values and gradients of RMSNorm, SwiGLU and
// Add, bit for bit, in float32 and float64, on each path SwiGLU takes in
// this build (the small kernels' blocks, the packed kernels' blocks, the
// three nodes), with several blocks and a short last one, and whole.
func TestResidualSwiGLUSameBits(t *testing.T) { checkResidualSwiGLUSameBits(t, false) }

// Residual.SwiGLUPlus (MoE-SEI's block) gives the values and gradients of
// RMSNorm, SwiGLU, Add(other, ·) and Add(x, ·), bit for bit, on the same
// paths, with other = h Wo, so that h takes three gradients (SwiGLU's,
// Wo's and the residual's) and other the upstream one.
func TestResidualSwiGLUPlusSameBits(t *testing.T) { checkResidualSwiGLUSameBits(t, true) }

func checkResidualSwiGLUSameBits(t *testing.T, plus bool) {
	defer func(s, p bool) { blasSmallKernels, blasPackedBlocks = s, p }(blasSmallKernels, blasPackedBlocks)
	const d, f = 64, 176
	type path struct{ small, packed bool }
	paths := []path{{false, false}, {true, false}}
	if blasPackedBlocks {
		paths = append(paths, path{false, true})
	}
	grads := []string{"y", "dx", "dw", "dW1", "dW3", "dW2"}
	if plus {
		grads = append(grads, "dWo")
	}
	for _, p := range paths {
		blasSmallKernels, blasPackedBlocks = p.small, p.packed
		for _, shape := range [][]int{{2, 300}, {1, 40}} {
			for _, dt := range []tensor.Dtype{tensor.Float32, tensor.Float64} {
				name := fmt.Sprintf("plus=%v small=%v packed=%v shape=%v %v", plus, p.small, p.packed, shape, dt)
				inputs := residualSwiGLUInputs(shape, d, f)
				if plus {
					inputs = append(inputs, fdInput{name: "Wo", shape: []int{d, d}})
				}
				r := rand.New(rand.NewSource(35))
				data := drawInputs(r, inputs)
				for i := 2; i < len(inputs); i++ { // weights at 1/√fan-in
					for j := range data[i] {
						data[i][j] /= 10
					}
				}
				upstream := randData(r, len(data[0]), nil)
				closer := "residual_add" // after the three nodes
				if swigluRowBlock(f, d) > 0 {
					closer = "swiglu"
				}
				other := func(n []*G.Node, h *G.Node) *G.Node {
					if !plus {
						return nil
					}
					return G.Must(Linear(h, n[5]))
				}
				run := func(fold bool) []tensor.Tensor {
					if fold {
						return blockValues(t, name, dt, inputs, data, upstream, func(n []*G.Node) (*G.Node, error) {
							h, res, err := PreNorm(n[0], n[1], DefaultRMSNormEps)
							if err != nil {
								return nil, err
							}
							if plus {
								return res.SwiGLUPlus(n[2], n[3], n[4], other(n, h))
							}
							return res.SwiGLU(n[2], n[3], n[4])
						}, closedBy(t, name, closer))
					}
					return blockValues(t, name, dt, inputs, data, upstream, func(n []*G.Node) (*G.Node, error) {
						h := G.Must(RMSNorm(n[0], n[1], DefaultRMSNormEps))
						o := other(n, h) // built first, as MoE-SEI builds its routed experts
						y := G.Must(SwiGLU(h, n[2], n[3], n[4]))
						if plus {
							y = G.Must(Add(o, y))
						}
						return Add(n[0], y)
					}, nil)
				}
				got, want := run(true), run(false)
				for i, what := range grads {
					assertSameBits(t, name+" "+what, got[i], want[i])
				}
			}
		}
	}
}

// BenchmarkResidualMLP times a pre-norm MLP block, x + SwiGLU(RMSNorm(x)),
// at the bench's d_model 64 and 256 sizes, forward alone and forward and
// backward: folded (Residual.SwiGLU, the residual added in SwiGLU's blocks
// of rows) and summed (RMSNorm, SwiGLU and Add).
func BenchmarkResidualMLP(b *testing.B) {
	for _, s := range []struct{ batch, t, d int }{{8, 256, 64}, {4, 1024, 256}} {
		f := (8*s.d/3 + 7) / 8 * 8
		benchFoldedAndSummed(b, s.d, s.batch*s.t, residualSwiGLUInputs([]int{s.batch, s.t}, s.d, f), mlpBlock)
	}
}

// mlpBlock is x + SwiGLU(RMSNorm(x; w)) from x, w, W1, W3, W2, closed by
// Residual.SwiGLU (fold) or by Add.
func mlpBlock(fold bool) func(in []*G.Node) (*G.Node, error) {
	return func(in []*G.Node) (*G.Node, error) {
		if fold {
			_, r, err := PreNorm(in[0], in[1], DefaultRMSNormEps)
			if err != nil {
				return nil, err
			}
			return r.SwiGLU(in[2], in[3], in[4])
		}
		h, err := RMSNorm(in[0], in[1], DefaultRMSNormEps)
		if err != nil {
			return nil, err
		}
		y, err := SwiGLU(h, in[2], in[3], in[4])
		if err != nil {
			return nil, err
		}
		return Add(in[0], y)
	}
}

// benchFoldedAndSummed runs the block that block(fold) builds at d_model d
// over tokens, forward alone ("fwd") and forward and backward ("fwdbwd"),
// closed inside its last op ("folded") and by an add ("summed"), as
// sub-benchmarks d<d>/<pass>/<folded|summed>.
func benchFoldedAndSummed(b *testing.B, d, tokens int, inputs []fdInput, block func(fold bool) func(in []*G.Node) (*G.Node, error)) {
	for _, pass := range []string{"fwd", "fwdbwd"} {
		for _, fold := range []bool{true, false} {
			how := "summed"
			if fold {
				how = "folded"
			}
			b.Run(fmt.Sprintf("d%d/%s/%s", d, pass, how), func(b *testing.B) {
				benchOp(b, tokens, inputs, pass == "fwdbwd", block(fold))
			})
		}
	}
}

// linearBlock is x + Linear(Linear(RMSNorm(x; w), Win), Wo), closed by
// Residual.Linear (fold) or by Add, from x, w, Win, Wo.
func linearBlock(in []*G.Node, fold bool) (*G.Node, error) {
	if !fold {
		h, err := RMSNorm(in[0], in[1], DefaultRMSNormEps)
		if err != nil {
			return nil, err
		}
		a, err := Linear(h, in[2])
		if err != nil {
			return nil, err
		}
		y, err := Linear(a, in[3])
		if err != nil {
			return nil, err
		}
		return Add(in[0], y)
	}
	h, r, err := PreNorm(in[0], in[1], DefaultRMSNormEps)
	if err != nil {
		return nil, err
	}
	a, err := Linear(h, in[2])
	if err != nil {
		return nil, err
	}
	return r.Linear(a, in[3])
}

func linearBlockInputs(rows []int, d, din int) []fdInput {
	return []fdInput{
		{name: "x", shape: append(append([]int{}, rows...), d)},
		{name: "w", shape: []int{d}, gen: uniformIn(0.5, 1.5)},
		{name: "Win", shape: []int{d, din}},
		{name: "Wo", shape: []int{din, d}},
	}
}

// A block closed by its output projection (Residual.Linear) against
// central finite differences in float64.
func TestResidualLinearGradFD(t *testing.T) {
	checkGradFD(t, 36, linearBlockInputs([]int{2, 5}, 6, 10), func(in []*G.Node) (*G.Node, error) { return linearBlock(in, true) })
}

// Residual.Linear gives the values and gradients of Linear and Add, bit
// for bit, in float32 and float64, on each way gemmTall runs the product:
// OpenBLAS's small kernels by blocks (d_model 64), the 64-wide kernel by
// blocks (float32, din 256), one product a worker (din 512), and one
// product (a few rows); and closes with the op itself, not an add.
func TestResidualLinearSameBits(t *testing.T) {
	for _, c := range []struct{ rows, d, din int }{{600, 64, 64}, {600, 256, 256}, {300, 256, 512}, {6, 16, 24}} {
		for _, dt := range []tensor.Dtype{tensor.Float32, tensor.Float64} {
			name := fmt.Sprintf("rows=%d d=%d din=%d %v", c.rows, c.d, c.din, dt)
			inputs := linearBlockInputs([]int{c.rows}, c.d, c.din)
			r := rand.New(rand.NewSource(37))
			data := drawInputs(r, inputs)
			for _, i := range []int{2, 3} {
				for j := range data[i] {
					data[i][j] /= 16
				}
			}
			upstream := randData(r, len(data[0]), nil)
			run := func(fold bool) []tensor.Tensor {
				var inspect func(*G.Node)
				if fold {
					inspect = closedBy(t, name, "linear")
				}
				return blockValues(t, name, dt, inputs, data, upstream, func(n []*G.Node) (*G.Node, error) { return linearBlock(n, fold) }, inspect)
			}
			got, want := run(true), run(false)
			for i, what := range []string{"y", "dx", "dw", "dWin", "dWo"} {
				assertSameBits(t, name+" "+what, got[i], want[i])
			}
		}
	}
}
