//go:build !openblas

package ops

import "math"

// expInPlace sets x[i] = e^x[i] in float64, through math.Exp in the
// pure-Go build (four lanes in C in the openblas build). The SSD scan's
// decays take it (decayChains).
func expInPlace(x []float64) {
	for i, v := range x {
		x[i] = math.Exp(v)
	}
}
