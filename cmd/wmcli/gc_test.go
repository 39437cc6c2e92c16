package wmcli

import (
	"runtime/debug"
	"testing"
)

// TestSetStepGC: a step command lowers the collector's target to
// stepGCPercent, and leaves a GOGC the user set alone.
func TestSetStepGC(t *testing.T) {
	before := debug.SetGCPercent(100)
	defer debug.SetGCPercent(before)

	t.Setenv("GOGC", "")
	setStepGC()
	if got := debug.SetGCPercent(100); got != stepGCPercent {
		t.Errorf("GOGC unset: the collector's percent is %d, want %d", got, stepGCPercent)
	}

	t.Setenv("GOGC", "100")
	setStepGC()
	if got := debug.SetGCPercent(100); got != 100 {
		t.Errorf("GOGC=100 set by the user: the collector's percent is %d, want it left at 100", got)
	}
}
