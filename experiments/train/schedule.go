package train

import "math"

// LR is the learning rate at step (0-based) of steps: linear warm-up over
// warmupFrac of the steps to peak, then cosine decay to minFrac·peak at the
// last step (SPEC §5).
func LR(step, steps int, peak, warmupFrac, minFrac float64) float64 {
	warm := int(math.Ceil(warmupFrac * float64(steps)))
	if step < warm {
		return peak * float64(step+1) / float64(warm)
	}
	span := steps - warm - 1
	if span <= 0 {
		return peak
	}
	p := float64(step-warm) / float64(span)
	return peak * (minFrac + (1-minFrac)*0.5*(1+math.Cos(math.Pi*p)))
}
