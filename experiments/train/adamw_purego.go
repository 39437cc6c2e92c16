//go:build !openblas

package train

// adamw32 is the float32 AdamW update; without cgo it is adamwGo32.
func adamw32(w, g []float32, m, v []float64, s adamwStep) { adamwGo32(w, g, m, v, s) }
