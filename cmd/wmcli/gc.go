package wmcli

import (
	"os"
	"runtime/debug"
	"strconv"
)

// stepGCPercent is the garbage collector's GOGC for the step commands: the
// heap may grow by a quarter over what the last collection found live
// before the next one, not by Go's default of all of it. A step keeps its
// activations and gradients in buffers reused from one step to the next
// (ops/reuse.go), so little is garbage in a step, collections are rare
// either way, and the default's headroom mostly showed as peak memory: on
// the first step, while every buffer is new, the heap doubled before a
// collection. At d_model 256 on one core (wm bench-one, 8 steps) it took
// (SM)4's peak from 939 to 741–775 MB, (AM)4's from 1,155 to 1,082 and
// (SH)3 AH's from 1,219 to 1,029, with training and evaluation speeds
// within their run-to-run spread at d_model 64 and 256
// (docs/performance.md, "Go's collector and the peak").
const stepGCPercent = 25

// setStepGC applies stepGCPercent before a step command, unless the user set
// GOGC, which then stands as Go read it.
func setStepGC() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(stepGCPercent)
	}
}

// gcSetting names the collector's current GOGC: "GOGC=25", or "GOGC=off"
// when collection is off.
func gcSetting() string {
	p := debug.SetGCPercent(-1)
	debug.SetGCPercent(p)
	if p < 0 {
		return "GOGC=off"
	}
	return "GOGC=" + strconv.Itoa(p)
}
