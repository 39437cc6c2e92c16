//go:build !openblas

package ops

import (
	"strings"
	"testing"
	"time"
)

// TestFMAPeakNeedsOpenBLASBuild checks that the pure-Go build's FMAPeak
// says it has no loop to time rather than returning a rate.
func TestFMAPeakNeedsOpenBLASBuild(t *testing.T) {
	if _, err := FMAPeak(1, time.Millisecond); err == nil || !strings.Contains(err.Error(), "openblas build") {
		t.Errorf("err %v, want one naming the openblas build", err)
	}
}
