package ops

// The SSD scan's elementwise passes over a chunk's [L, hb·p] rows, one head
// of p values per (token, head): the scaled inputs U and W of prepare, and
// the combination of the output's three terms in ssdChunkOutput (Wonderful
// Matrices listing 3; Mamba2's SSD). Under the openblas build their float32
// form runs in C (ssd_rows_openblas.go), with the same float32 operations in
// the same order, so C and Go agree to the bit (TestSSDRowsMatchGo); in Go
// they were about a sixth of a (SM)4 evaluation step at d_model 64.

// ssdScaleInputs sets, for L tokens and hb heads of p values, U = dt·x and
// W = w·U (U and W with leading dimension P; x with ldx; dt[i·ldt + j] the
// step of token i, head j; w[j·wst + i] the decay to the chunk's end). U
// may be nil: then W alone is written, with the same bits.
func ssdScaleInputs[T floats](U, W, x []T, ldx int, dt []T, ldt int, w []float64, wst, L, hb, p, P int) {
	if W32, ok := any(W).([]float32); ok {
		U32, _ := any(U).([]float32)
		ssdScaleInputs32(U32, W32, any(x).([]float32), ldx, any(dt).([]float32), ldt, w, wst, L, hb, p, P)
		return
	}
	ssdScaleInputsGo(U, W, x, ldx, dt, ldt, w, wst, L, hb, p, P)
}

// ssdScaleInputsGo is ssdScaleInputs in Go, for any float type.
func ssdScaleInputsGo[T floats](U, W, x []T, ldx int, dt []T, ldt int, w []float64, wst, L, hb, p, P int) {
	for i := 0; i < L; i++ {
		xr := x[i*ldx:]
		for j := 0; j < hb; j++ {
			d, wv := dt[i*ldt+j], T(w[j*wst+i])
			o := i*P + j*p
			Wr, xh := W[o:o+p], xr[j*p:(j+1)*p]
			if U == nil {
				for q, xv := range xh {
					Wr[q] = wv * (d * xv)
				}
				continue
			}
			Ur := U[o : o+p]
			for q, xv := range xh {
				uv := d * xv
				Ur[q] = uv
				Wr[q] = wv * uv
			}
		}
	}
}

// ssdCombineOutput writes y = s·Yc + e·tmp + D·x for L tokens and hb
// heads of p values: Yc, the diagonal blocks' output, and tmp, C Hᵀ of the
// earlier chunks' state, with leading dimension P; e[j·est + i] the decay
// from the chunk's start; s (nil: 1, and y = Yc + e·tmp + D·x exactly as
// written) the diagonal blocks' row scale, laid out as e (1/w when Yc is
// Gl W, see ssdFactorable); D (nil when the mixer has no skip) the heads'
// skip weights; y and x with leading dimension ld.
func ssdCombineOutput[T floats](y []T, ld int, Yc, tmp []T, P int, e, s []float64, est int, D, x []T, L, hb, p int) {
	if y32, ok := any(y).([]float32); ok {
		D32, _ := any(D).([]float32)
		ssdCombineOutput32(y32, ld, any(Yc).([]float32), any(tmp).([]float32), P, e, s, est, D32, any(x).([]float32), L, hb, p)
		return
	}
	ssdCombineOutputGo(y, ld, Yc, tmp, P, e, s, est, D, x, L, hb, p)
}

// ssdCombineOutputGo is ssdCombineOutput in Go, for any float type.
func ssdCombineOutputGo[T floats](y []T, ld int, Yc, tmp []T, P int, e, s []float64, est int, D, x []T, L, hb, p int) {
	for i := 0; i < L; i++ {
		for j := 0; j < hb; j++ {
			ev := T(e[j*est+i])
			w, o := i*P+j*p, i*ld+j*p
			yr, yc, tm := y[o:o+p], Yc[w:w+p], tmp[w:w+p]
			sv := T(1) // 1·Yc is Yc to the bit
			if s != nil {
				sv = T(s[j*est+i])
			}
			if D == nil {
				for q, yv := range yc {
					yr[q] = sv*yv + ev*tm[q]
				}
				continue
			}
			Dh, xr := D[j], x[o:o+p]
			for q, yv := range yc {
				yr[q] = sv*yv + ev*tm[q] + Dh*xr[q]
			}
		}
	}
}
