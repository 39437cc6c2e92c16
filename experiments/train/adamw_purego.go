//go:build !openblas

package train

// adamw32 is the float32 AdamW update; without cgo it is adamwGo.
func adamw32(w, g []float32, m, v []float64, s adamwStep) { adamwGo(w, g, m, v, s) }

// adamwQuotients sets q to a/c, as adamwGo computes the bias corrections.
func adamwQuotients(a, q []float64, c float64) {
	for j := range a {
		q[j] = a[j] / c
	}
}
