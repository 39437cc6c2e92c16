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
