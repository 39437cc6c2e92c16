package ops

import (
	"math"
	"math/rand"
	"testing"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// randData draws n values with gen (N(0,1) when nil).
func randData(r *rand.Rand, n int, gen func(*rand.Rand) float64) []float64 {
	if gen == nil {
		gen = normal
	}
	d := make([]float64, n)
	for i := range d {
		d[i] = gen(r)
	}
	return d
}

// tensorNode makes a float64 input node holding data.
func tensorNode(g *G.ExprGraph, name string, data []float64, shape ...int) *G.Node {
	if data == nil {
		return nil
	}
	v := tensor.New(tensor.WithShape(shape...), tensor.WithBacking(data))
	return G.NewTensor(g, tensor.Float64, len(shape), G.WithName(name), G.WithValue(v))
}

// evaluate runs the graph and returns the float64 data of each node.
func evaluate(t *testing.T, g *G.ExprGraph, nodes ...*G.Node) [][]float64 {
	t.Helper()
	vm := G.NewTapeMachine(g)
	defer vm.Close()
	if err := vm.RunAll(); err != nil {
		t.Fatalf("run: %+v", err)
	}
	r := make([][]float64, len(nodes))
	for i, n := range nodes {
		switch d := n.Value().Data().(type) {
		case []float64:
			r[i] = append([]float64(nil), d...)
		case float64:
			r[i] = []float64{d}
		default:
			t.Fatalf("evaluate %v: data %T, want float64", n, d)
		}
	}
	return r
}

// assertClose fails when got and want differ by more than atol+rtol*|want|
// anywhere, or when got holds a NaN or an Inf.
func assertClose(t *testing.T, what string, got, want []float64, rtol, atol float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d values, want %d", what, len(got), len(want))
	}
	for i := range got {
		if math.IsNaN(got[i]) || math.IsInf(got[i], 0) {
			t.Fatalf("%s[%d] = %v", what, i, got[i])
		}
		if d := math.Abs(got[i] - want[i]); d > atol+rtol*math.Abs(want[i]) {
			t.Fatalf("%s[%d] = %.15g, want %.15g (diff %.3g)", what, i, got[i], want[i], d)
		}
	}
}

// kernelGrads runs k's backward on float64 inputs in and upstream gradient
// dOut, and returns every input's gradient (zeroed buffers, as the fused op
// hands them).
func kernelGrads(t *testing.T, k kernel, in []any, dOut []float64) [][]float64 {
	t.Helper()
	dIn := make([]any, len(in))
	gs := make([][]float64, len(in))
	for j := range in {
		gs[j] = make([]float64, len(in[j].([]float64)))
		dIn[j] = gs[j]
	}
	if err := k.backward(in, nil, dOut, dIn); err != nil {
		t.Fatal(err)
	}
	return gs
}

// ulps32 is |got − want| in units of the last place of want (float32).
func ulps32(got float32, want float64) float64 {
	w := float32(want)
	ulp := float64(math.Nextafter32(w, float32(math.Inf(1))) - w)
	return math.Abs(float64(got)-want) / ulp
}

// normalFloat32s draws n standard normal values.
func normalFloat32s(r *rand.Rand, n int) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(r.NormFloat64())
	}
	return v
}

// spreadFloat32s draws n normal values scaled by 10^-3 … 10^3 in turn, so
// that a kernel's sums mix values of very different sizes.
func spreadFloat32s(r *rand.Rand, n int) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(r.NormFloat64() * math.Pow(10, float64(i%7-3)))
	}
	return v
}

// assertSameFloat64s fails t at the first value of got that is not want's
// to the bit; what names the case.
func assertSameFloat64s(t *testing.T, what string, got, want []float64) {
	t.Helper()
	for j := range want {
		if math.Float64bits(got[j]) != math.Float64bits(want[j]) {
			t.Fatalf("%s [%d] = %v, want %v to the bit", what, j, got[j], want[j])
		}
	}
}
