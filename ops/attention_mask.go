package ops

// The paper's dynamic mask (Wonderful Matrices eq. 4, M = L ∘ A) applied to
// a block of attention's rows, and its gradient. Each row of the block holds
// one query's probabilities over keys [0, n); l holds the head's mask value
// of each key. Float32 goes to C under the openblas build
// (attention_mask_openblas.go); the Go loops define the values.

// paperMaskRows sets M = P ∘ l row by row: M[i·n + j] = P[i·n + j]·l[j]
// for rows rows of n keys.
func paperMaskRows[T floats](M, P, l []T, rows, n int) {
	if M32, ok := any(M).([]float32); ok {
		paperMaskRows32(M32, any(P).([]float32), any(l).([]float32), rows, n)
		return
	}
	paperMaskRowsGo(M, P, l, rows, n)
}

// paperMaskRowsGo is paperMaskRows in Go, for any float type.
func paperMaskRowsGo[T floats](M, P, l []T, rows, n int) {
	l = l[:n]
	for i := 0; i < rows; i++ {
		row, m := P[i*n:(i+1)*n], M[i*n:(i+1)*n]
		for j := range row {
			m[j] = row[j] * l[j]
		}
	}
}

// paperMaskBackwardRows is the gradient through M = P ∘ l for rows rows of
// n keys: dl[j] += Σ_i dM[i·n + j]·P[i·n + j] in float64, rows in order
// (dl is the head's row of the mask's gradient), then dP = dM ∘ l in place
// of dM.
func paperMaskBackwardRows[T floats](P, dM, l []T, dl []float64, rows, n int) {
	if P32, ok := any(P).([]float32); ok {
		paperMaskBackwardRows32(P32, any(dM).([]float32), any(l).([]float32), dl, rows, n)
		return
	}
	paperMaskBackwardRowsGo(P, dM, l, dl, rows, n)
}

// paperMaskBackwardRowsGo is paperMaskBackwardRows in Go, for any float type.
func paperMaskBackwardRowsGo[T floats](P, dM, l []T, dl []float64, rows, n int) {
	l, dl = l[:n], dl[:n]
	for i := 0; i < rows; i++ {
		row, dm := P[i*n:(i+1)*n], dM[i*n:(i+1)*n]
		for j := range dm {
			dl[j] += float64(dm[j]) * float64(row[j])
			dm[j] *= l[j]
		}
	}
}
