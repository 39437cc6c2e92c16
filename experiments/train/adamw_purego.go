//go:build !openblas

package train

// adamw32 is the float32 AdamW update; without cgo it is adamwGo.
func adamw32(w, g []float32, m, v []float64, s adamwStep) { adamwGo(w, g, m, v, s) }
