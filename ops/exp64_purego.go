//go:build !openblas

package ops

import "math"

// expInPlace64 is expInPlace through math.Exp (the pure-Go build).
func expInPlace64(x []float64) {
	for i, v := range x {
		x[i] = math.Exp(v)
	}
}
