package wmcli

import (
	"testing"
	"time"
)

// A round still to come is priced at its row's last measured round, or at
// the mean of the measured rounds for a row with none; journal rounds count
// as done and price nothing.
func TestBenchProgress(t *testing.T) {
	p := newBenchProgress(2, 3)
	if got, want := p.String(), "round 1 of 6"; got != want {
		t.Errorf("at the start: %q, want %q", got, want)
	}
	if _, ok := p.remaining(); ok {
		t.Error("an estimate before any round was measured")
	}
	p.finished(0, true, time.Hour) // from the journal: its time is not a round's
	if got, want := p.String(), "round 2 of 6; 1 from the journal"; got != want {
		t.Errorf("after a journal round: %q, want %q", got, want)
	}
	p.finished(1, false, 10*time.Second)
	// Row 0: 2 left at the mean (10 s); row 1: 2 left at its own 10 s.
	if got, _ := p.remaining(); got != 40*time.Second {
		t.Errorf("remaining after one measured round = %v, want 40s", got)
	}
	p.finished(0, false, 2*time.Second)
	// Row 0: 1 left at its own 2 s; row 1: 2 left at 10 s.
	if got, _ := p.remaining(); got != 22*time.Second {
		t.Errorf("remaining after row 0's own round = %v, want 22s", got)
	}
	if got, want := p.String(), "round 4 of 6; 1 from the journal, 2 measured in 12s, about 22s left"; got != want {
		t.Errorf("%q, want %q", got, want)
	}
	for _, r := range []struct {
		row int
		d   time.Duration
	}{{1, 40 * time.Minute}, {0, 20 * time.Minute}, {1, 50 * time.Minute}} {
		p.finished(r.row, false, r.d)
	}
	if got, ok := p.remaining(); !ok || got != 0 {
		t.Errorf("remaining when every round is done = %v, %v; want 0, true", got, ok)
	}
}
