//go:build !openblas

package ops

import "github.com/pkg/errors"

// fmaPeakFLOPs is the floating-point operations fmaPeak's rounds would run
// at a width of lanes (24 chains, as in the openblas build).
func fmaPeakFLOPs(lanes int, rounds int64) float64 {
	return 2 * float64(lanes) * 24 * float64(rounds)
}

// fmaPeak has no vector loop in the pure-Go build (it needs the openblas
// build's C).
func fmaPeak(lanes int, rounds int64) (float32, error) {
	return 0, errors.Errorf("fma peak: the %d-lane loop is C, in the openblas build only", lanes)
}
