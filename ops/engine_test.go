package ops

import (
	"fmt"
	"math"
	"math/rand"
	"testing"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// Engine.Add gives Gorgonia's standard engine's result, to the bit and in
// the tensor Gorgonia would return, for every way Gorgonia calls it: into a
// reuse tensor, in place (unsafe), into a new tensor, as an increment, on a
// transposed view, and in float64; the first two are the fast case.
func TestEngineAddMatchesStdEng(t *testing.T) {
	r := rand.New(rand.NewSource(15))
	dense := func(dt tensor.Dtype, n int) *tensor.Dense {
		v := spreadFloat32s(r, n)
		if dt == tensor.Float64 {
			w := make([]float64, n)
			for i := range v {
				w[i] = float64(v[i])
			}
			return tensor.New(tensor.WithShape(3, n/3), tensor.WithBacking(w))
		}
		return tensor.New(tensor.WithShape(3, n/3), tensor.WithBacking(v))
	}
	for _, dt := range []tensor.Dtype{tensor.Float32, tensor.Float64} {
		for _, mode := range []string{"reuse", "unsafe", "safe", "incr", "view"} {
			name := fmt.Sprintf("%v %s", dt, mode)
			a, b, dst := dense(dt, 33), dense(dt, 33), dense(dt, 33)
			a2, b2, dst2 := a.Clone().(*tensor.Dense), b.Clone().(*tensor.Dense), dst.Clone().(*tensor.Dense)
			call := func(e tensor.Adder, a, b, dst *tensor.Dense) tensor.Tensor {
				var opts []tensor.FuncOpt
				var x, y tensor.Tensor = a, b
				switch mode {
				case "reuse":
					opts = append(opts, tensor.WithReuse(dst))
				case "unsafe":
					opts = append(opts, tensor.UseUnsafe())
				case "incr":
					opts = append(opts, tensor.WithIncr(dst))
				case "view":
					a.T()
					b.T()
				}
				out, err := e.Add(x, y, opts...)
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				return out
			}
			got, want := call(Engine{}, a, b, dst), call(tensor.StdEng{}, a2, b2, dst2)
			switch mode {
			case "reuse", "incr":
				if got != tensor.Tensor(dst) {
					t.Errorf("%s: Add returned another tensor than the reuse one", name)
				}
			case "unsafe":
				if got != tensor.Tensor(a) {
					t.Errorf("%s: Add returned another tensor than a", name)
				}
			}
			assertSameBits(t, name, got, want)
		}
	}
}

// A graph whose gradient Gorgonia sums (x is read twice) computes the same
// bits on a machine with Engine as on Gorgonia's own.
func TestEngineRunsGradientSums(t *testing.T) {
	run := func(newVM func(*G.ExprGraph, ...G.VMOpt) G.VM) (loss float32, grad tensor.Tensor) {
		g := G.NewGraph()
		v := spreadFloat32s(rand.New(rand.NewSource(16)), 40)
		x := G.NewTensor(g, tensor.Float32, 2, G.WithName("x"), G.WithValue(tensor.New(tensor.WithShape(4, 10), tensor.WithBacking(v))))
		sq, err := Mul(x, x)
		if err != nil {
			t.Fatal(err)
		}
		s, err := Add(sq, x)
		if err != nil {
			t.Fatal(err)
		}
		cost := G.Must(G.Sum(s))
		if _, err := G.Grad(cost, x); err != nil {
			t.Fatal(err)
		}
		vm := newVM(g)
		defer vm.Close()
		if err := vm.RunAll(); err != nil {
			t.Fatalf("run: %+v", err)
		}
		gx, err := x.Grad()
		if err != nil {
			t.Fatal(err)
		}
		return cost.Value().Data().(float32), gx.(tensor.Tensor)
	}
	l1, g1 := run(NewTapeMachine)
	l2, g2 := run(func(g *G.ExprGraph, opts ...G.VMOpt) G.VM { return G.NewTapeMachine(g, opts...) })
	if math.Float32bits(l1) != math.Float32bits(l2) {
		t.Errorf("loss %v, Gorgonia's engine gives %v (bit-identical)", l1, l2)
	}
	assertSameBits(t, "gradient", g1, g2)
	// dx = 2x + 1 for each value, summed by Gorgonia from the three reads.
	xs := spreadFloat32s(rand.New(rand.NewSource(16)), 40)
	for i, d := range g1.Data().([]float32) {
		if want := 2*xs[i] + 1; math.Abs(float64(d-want)) > 1e-6*math.Abs(float64(want)) {
			t.Fatalf("gradient[%d] = %v, want 2x+1 = %v", i, d, want)
		}
	}
}

// assertSameBits fails unless a and b hold the same values, bit for bit, in
// the order of their elements (views are read through their layout).
func assertSameBits(t *testing.T, name string, a, b tensor.Tensor) {
	t.Helper()
	if !a.Shape().Eq(b.Shape()) {
		t.Fatalf("%s: shape %v, Gorgonia gives %v", name, a.Shape(), b.Shape())
	}
	va, vb := asFloat64s(tensor.Materialize(a).Data()), asFloat64s(tensor.Materialize(b).Data())
	for i := range va {
		if math.Float64bits(va[i]) != math.Float64bits(vb[i]) {
			t.Fatalf("%s: value %d = %v, Gorgonia gives %v (bit-identical)", name, i, va[i], vb[i])
		}
	}
}

// asFloat64s is a tensor's float32 or float64 values as float64 (exact).
func asFloat64s(data any) []float64 {
	switch d := data.(type) {
	case []float64:
		return d
	case []float32:
		w := make([]float64, len(d))
		for i, v := range d {
			w[i] = float64(v)
		}
		return w
	}
	return nil
}
