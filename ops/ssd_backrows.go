package ops

// The SSD backward's row passes (Wonderful Matrices listing 3; Mamba2's
// SSD): for the rows of a chunk, one per (token, head) of p values, each is
// a float64 dot product of two rows and a scaled copy, or scaled update, of
// one of them:
//
//	state passing   dU = w·dW,        dw  = dW·U     (and dHin = E·dH, dE = dH·H per head)
//	decay           dx += dt·dU,      ddt = dU·x
//	skip            dx += D·dY,       dD += dY·x
//	state read-out  dY = e·dY,        de  = dY·C Hᵀ  (before the scaling)
//
// In Go these loops were about a tenth of a (SM)4 training step at
// d_model 64: one float64 add chain per row, scalar conversions. The dot
// products sum in eight float64 lanes (dot8's order), so the float32 form
// can run in C four or eight lanes at a time (ssd_backrows_openblas.go)
// and agree with this definition to the bit (TestSSDBackRowsMatchGo).

// ssdRowsDotScale computes, for L tokens and hb heads of p values, with row
// (i, j) of a at a[i·lda + j·p] and of b and c likewise,
//
//	dots[j·L + i] = Σ_q a_q·b_q   (float64, in dot8's order)
//	c_q = s·a_q, or c_q += s·a_q when add   (in T)
//
// with s = scale[i·ssi + j·ssj]. c may be a itself: the dot product reads
// the row before it is scaled. Float32 goes to C under the openblas build
// (ssdRowsDotScale32).
func ssdRowsDotScale[T floats](dots []float64, a []T, lda int, b []T, ldb int, c []T, ldc int, scale []T, ssi, ssj, L, hb, p int, add bool) {
	if a32, ok := any(a).([]float32); ok {
		ssdRowsDotScale32(dots, a32, lda, any(b).([]float32), ldb, any(c).([]float32), ldc, any(scale).([]float32), ssi, ssj, L, hb, p, add)
		return
	}
	ssdRowsDotScaleGo(dots, a, lda, b, ldb, c, ldc, scale, ssi, ssj, L, hb, p, add)
}

// ssdRowsDotScaleGo is ssdRowsDotScale in Go, for any float type.
func ssdRowsDotScaleGo[T floats](dots []float64, a []T, lda int, b []T, ldb int, c []T, ldc int, scale []T, ssi, ssj, L, hb, p int, add bool) {
	for j := 0; j < hb; j++ {
		for i := 0; i < L; i++ {
			ar, br, cr := a[i*lda+j*p:][:p], b[i*ldb+j*p:][:p], c[i*ldc+j*p:][:p]
			s := scale[i*ssi+j*ssj]
			dots[j*L+i] = dot8(ar, br)
			if add {
				for q, v := range ar {
					cr[q] += s * v
				}
			} else {
				for q, v := range ar {
					cr[q] = s * v
				}
			}
		}
	}
}

// dot8 is Σ a[q]·b[q] over len(a) in float64, in eight lanes: lane l sums
// the products at q ≡ l mod 8 in order of q (the last len(a) mod 8 products
// go to lanes 0, 1, …), and the lanes are added as
// ((l0+l4)+(l2+l6)) + ((l1+l5)+(l3+l7)), the order in which an eight-lane
// vector is folded in half twice. A float32 product is exact in float64,
// so a fused multiply-add gives the same sums. b must be at least as long.
func dot8[T floats](a, b []T) float64 {
	b = b[:len(a)]
	var l [8]float64
	q := 0
	for ; q+8 <= len(a); q += 8 {
		aq, bq := a[q:q+8], b[q:q+8]
		for k := range l {
			l[k] += float64(aq[k]) * float64(bq[k])
		}
	}
	for k := 0; q+k < len(a); k++ {
		l[k] += float64(a[q+k]) * float64(b[q+k])
	}
	return ((l[0] + l[4]) + (l[2] + l[6])) + ((l[1] + l[5]) + (l[3] + l[7]))
}
