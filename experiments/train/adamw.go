package train

import (
	"fmt"
	"math"

	"github.com/wonderful-matrices/wonderful-matrices-go/layers"
)

// AdamW is Adam with decoupled weight decay (Loshchilov & Hutter 2019), the
// optimiser of SPEC §5: β = (0.9, 0.999), decay 0.01 applied only to
// parameters whose Decay flag is set. Its moments are float64 whatever the
// model's dtype.
type AdamW struct {
	Beta1, Beta2, Eps, WeightDecay float64
	// Step counts the updates made (for bias correction).
	Step int
	// M and V are the moments, in the order of the params given to
	// NewAdamW; Names lists those params so that Update finds each one's
	// moments whatever order its caller lists them in (a graph's order of
	// use differs from the model's order of declaration).
	M, V  [][]float64
	Names []string
	index map[string]int
}

// NewAdamW returns the optimiser for params with SPEC §5's settings.
func NewAdamW(params layers.Params, weightDecay float64) *AdamW {
	o := &AdamW{Beta1: 0.9, Beta2: 0.999, Eps: 1e-8, WeightDecay: weightDecay}
	for _, p := range params {
		o.Names = append(o.Names, p.Name)
		o.M = append(o.M, make([]float64, p.Size()))
		o.V = append(o.V, make([]float64, p.Size()))
	}
	return o
}

// Update applies one step at learning rate lr with gradients grads (one
// buffer per parameter, []float32 or []float64, already clipped and scaled
// by scale).
func (o *AdamW) Update(params layers.Params, grads []any, scale, lr float64) {
	o.Step++
	c1 := 1 - math.Pow(o.Beta1, float64(o.Step))
	c2 := 1 - math.Pow(o.Beta2, float64(o.Step))
	if o.index == nil {
		o.index = map[string]int{}
		for i, n := range o.Names {
			o.index[n] = i
		}
	}
	moments := make([]int, len(params))
	for i, p := range params {
		k, ok := o.index[p.Name]
		if !ok || len(o.M[k]) != p.Size() {
			panic(fmt.Sprintf("adamw: parameter %s (%d values) is not one the optimiser was made for", p.Name, p.Size()))
		}
		moments[i] = k
	}
	// Every element's update is independent, so the parameters are shared
	// out to GOMAXPROCS goroutines; the result does not depend on the split.
	largestFirst(len(params), func(i int) int { return params[i].Size() }, func(i int) {
		o.updateOne(params[i], grads[i], moments[i], scale, lr, c1, c2)
	})
}

// updateOne applies the step to one parameter whose moments are M[k], V[k].
func (o *AdamW) updateOne(p *layers.Param, grad any, k int, scale, lr, c1, c2 float64) {
	s := adamwStep{scale: scale, beta1: o.Beta1, beta2: o.Beta2, lr: lr, c1: c1, c2: c2, eps: o.Eps}
	if p.Decay {
		s.decay = o.WeightDecay
	}
	switch w := p.Data().(type) {
	case []float32:
		adamw32(w, grad.([]float32), o.M[k], o.V[k], s)
	case []float64:
		adamwGo(w, grad.([]float64), o.M[k], o.V[k], s)
	}
}
