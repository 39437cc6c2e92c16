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
	if got, want := gcSetting(), "GOGC=25"; got != want {
		t.Errorf("GOGC unset: gcSetting says %q, want %q", got, want)
	}
	if got := debug.SetGCPercent(100); got != stepGCPercent {
		t.Errorf("GOGC unset: the collector's percent is %d, want %d", got, stepGCPercent)
	}
	debug.SetGCPercent(-1)
	if got, want := gcSetting(), "GOGC=off"; got != want {
		t.Errorf("collection off: gcSetting says %q, want %q", got, want)
	}
	debug.SetGCPercent(100)

	t.Setenv("GOGC", "100")
	setStepGC()
	if got := debug.SetGCPercent(100); got != 100 {
		t.Errorf("GOGC=100 set by the user: the collector's percent is %d, want it left at 100", got)
	}
}
