//go:build !openblas

package train

// adamwLevels runs check once: without cgo, adamw32 is adamwGo.
func adamwLevels(check func(loop string)) { check("Go") }
