package graph_test

import (
	"math"
	"math/rand"
	"testing"

	"gorgonia.org/tensor"
)

// The whole model's gradient (embedding, every block's norms, mixers and
// residual sums, the final norm and the head) against central finite
// differences of the loss in float64, at random coordinates of every
// parameter. The residual stream's gradient is handed on by the sums
// without a copy (ops.Add), so this is where a mistake there would show.
func TestModelGradFD(t *testing.T) {
	for _, pattern := range []string{"(SM)2 AM", "(AM)2"} {
		t.Run(pattern, func(t *testing.T) {
			m := newModel(t, tinyConfig("", pattern), tensor.Float64, 5)
			ids, targets := fixedBatch(2, 6, 32)
			tr := newTrainer(t, m, ids, targets)
			loss := func() float64 {
				tr.vm.Reset()
				if err := tr.vm.RunAll(); err != nil {
					t.Fatalf("run: %+v", err)
				}
				return toF64(tr.loss.Value().Data())[0]
			}
			loss()
			symbolic := make([][]float64, len(tr.params))
			for i := range tr.params {
				symbolic[i] = append([]float64(nil), toF64(tr.grads[i].Value().Data())...) // a copy: the next runs reuse the buffer
			}
			r := rand.New(rand.NewSource(1))
			const h = 1e-6
			for i, p := range tr.params {
				data := p.Data().([]float64)
				for c := 0; c < 4; c++ {
					j := r.Intn(len(data))
					orig := data[j]
					data[j] = orig + h
					up := loss()
					data[j] = orig - h
					down := loss()
					data[j] = orig
					numeric := (up - down) / (2 * h)
					if s := symbolic[i][j]; math.Abs(s-numeric) > 1e-6+1e-4*math.Abs(numeric) {
						t.Errorf("%s[%d]: symbolic %.8g, finite differences %.8g", p.Name, j, s, numeric)
					}
				}
			}
		})
	}
}
