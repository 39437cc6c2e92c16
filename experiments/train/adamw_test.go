package train

import (
	"testing"

	"gorgonia.org/tensor"

	"github.com/wonderful-matrices/wonderful-matrices-go/layers"
)

// With zero gradients only weight decay moves a parameter: the ones with
// Decay shrink by lr·wd, norms and masks stay (SPEC §5).
func TestAdamWDecayExclusions(t *testing.T) {
	w := layers.LinearWeight("w", 1, 2, 2)
	n := layers.NormWeight("norm", 3)
	ps := layers.Params{w, n}
	if err := ps.Initialize(tensor.Float64, 1); err != nil {
		t.Fatal(err)
	}
	w0 := append([]float64(nil), w.Data().([]float64)...)
	o := NewAdamW(ps, 0.01)
	o.Update(ps, []any{make([]float64, 4), make([]float64, 3)}, 1, 0.5)
	for i, v := range w.Data().([]float64) {
		if want := w0[i] * (1 - 0.5*0.01); v != want {
			t.Errorf("w[%d] = %v, want %v", i, v, want)
		}
	}
	for i, v := range n.Data().([]float64) {
		if v != 1 {
			t.Errorf("norm[%d] = %v, want 1 (no decay)", i, v)
		}
	}
}

// A graph lists its parameters in the order it uses them, which is not the
// model's order (SSD's D is declared before its conv but used after):
// Update must find each parameter's moments by name, so the same step in
// either order gives the same weights.
func TestAdamWParamOrder(t *testing.T) {
	mk := func() layers.Params {
		ps := layers.Params{layers.LinearWeight("a", 1, 2, 3), layers.LinearWeight("b", 1, 4, 1)}
		if err := ps.Initialize(tensor.Float64, 7); err != nil {
			t.Fatal(err)
		}
		return ps
	}
	ga, gb := []float64{1, -2, 3, -4, 5, -6}, []float64{0.5, 0.25, -1, 2}
	p1, p2 := mk(), mk()
	o1, o2 := NewAdamW(p1, 0.01), NewAdamW(p2, 0.01)
	for step := 0; step < 3; step++ {
		o1.Update(p1, []any{ga, gb}, 1, 0.1)
		o2.Update(layers.Params{p2[1], p2[0]}, []any{gb, ga}, 1, 0.1)
	}
	for i := range p1 {
		a, b := p1[i].Data().([]float64), p2[i].Data().([]float64)
		for j := range a {
			if a[j] != b[j] {
				t.Fatalf("%s[%d]: %v in model order, %v in reversed order", p1[i].Name, j, a[j], b[j])
			}
		}
	}
}
