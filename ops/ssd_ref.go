package ops

import "math"

// ssdRef is the SSD recurrence token by token, a straight port of
// SPEC §2 in float64 (the slow reference of SSD and SSDStep):
// H_s = exp(dt_s*A) H_{s-1} + (dt_s x_s) ⊗ B_s, y_s = H_s·C_s + D x_s.
// x [b,t,h,p], dt [b,t,h], A [h], B, C [b,t,h,n], D [h] or nil, h0 [b,h,p,n]
// or nil. It returns y and the final state.
func ssdRef(b, t, h, p, n int, x, dt, A, B, C, D, h0 []float64) (y, state []float64) {
	y = make([]float64, b*t*h*p)
	state = make([]float64, b*h*p*n)
	if h0 != nil {
		copy(state, h0)
	}
	for bi := 0; bi < b; bi++ {
		for s := 0; s < t; s++ {
			for hh := 0; hh < h; hh++ {
				H := state[(bi*h+hh)*p*n : (bi*h+hh+1)*p*n]
				d := dt[(bi*t+s)*h+hh]
				decay := math.Exp(d * A[hh])
				xo, bo := ((bi*t+s)*h+hh)*p, ((bi*t+s)*h+hh)*n
				for pi := 0; pi < p; pi++ {
					var acc float64
					for ni := 0; ni < n; ni++ {
						H[pi*n+ni] = decay*H[pi*n+ni] + d*x[xo+pi]*B[bo+ni]
						acc += H[pi*n+ni] * C[bo+ni]
					}
					if D != nil {
						acc += D[hh] * x[xo+pi]
					}
					y[xo+pi] = acc
				}
			}
		}
	}
	return y, state
}
