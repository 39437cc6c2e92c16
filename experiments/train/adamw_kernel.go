package train

import "math"

// adamwStep holds what one AdamW update applies to every element: the
// gradient's scale, β1 and β2, the learning rate, the weight decay (0 for a
// parameter without decay), the bias corrections c1 = 1−β1^t and
// c2 = 1−β2^t, and ε.
type adamwStep struct {
	scale, beta1, beta2, lr, decay, c1, c2, eps float64
}

// adamwGo is the AdamW update of SPEC §5 (Loshchilov & Hutter 2019,
// algorithm 2) on weights w with gradients g of the model's dtype and
// float64 moments m, v, element by element, in float64:
//
//	g ← g·scale;  m ← β1 m + (1−β1) g;  v ← β2 v + (1−β2) g²
//	w ← w − lr·decay·w;  w ← w − lr·(m/c1)/(√(v/c2) + ε)
//
// It is the definition; the openblas build runs the same arithmetic on
// float32 weights in C (adamw32), vectorised, and TestAdamWKernelMatchesGo
// holds the two equal to the bit.
func adamwGo[T float32 | float64](w, g []T, m, v []float64, s adamwStep) {
	g, m, v = g[:len(w)], m[:len(w)], v[:len(w)]
	ob1, ob2, lrDecay := 1-s.beta1, 1-s.beta2, s.lr*s.decay
	for j := range w {
		gj := float64(g[j]) * s.scale
		mj := s.beta1*m[j] + ob1*gj
		vj := s.beta2*v[j] + ob2*gj*gj
		m[j], v[j] = mj, vj
		wj := float64(w[j])
		wj -= lrDecay * wj
		w[j] = T(wj - s.lr*(mj/s.c1)/(math.Sqrt(vj/s.c2)+s.eps))
	}
}
