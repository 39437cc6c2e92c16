package wmcli

import (
	"testing"
	"time"
)

// A round still to come is priced at its row's last measured round, or at
// the mean of the measured rounds for a row with none; journal rounds count
// as done and price nothing.
func TestBenchProgress(t *testing.T) {
	p := newBenchProgress([]string{"a", "b"}, 3)
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

// A row with no round measured is priced like the measured rows of its
// size and thread count, not at the mean of every round: round 1 of a run
// measures the small rows of a pattern before its large ones.
func TestBenchProgressPricesLikeRows(t *testing.T) {
	small, large := benchLike(benchSize{64, 256, 8}, 1), benchLike(benchSize{256, 1024, 4}, 1)
	if small == large || small == benchLike(benchSize{64, 256, 8}, 2) {
		t.Fatalf("benchLike: %q, %q and %q", small, large, benchLike(benchSize{64, 256, 8}, 2))
	}
	p := newBenchProgress([]string{small, large, small, small}, 2)
	p.finished(0, false, 10*time.Second)
	p.finished(1, false, 100*time.Second)
	// Rows 0 and 1 have 1 round left at their own 10 s and 100 s; rows 2
	// and 3, small with none measured, 2 each at row 0's 10 s. (At the
	// mean, 55 s, it would be 330 s.)
	if got, _ := p.remaining(); got != 150*time.Second {
		t.Errorf("remaining = %v, want 150s", got)
	}
	p.finished(2, false, 20*time.Second)
	// Row 2 has 1 left at its own 20 s; row 3 is priced at the mean of
	// its like's measured rows, (10 + 20) / 2.
	if got, _ := p.remaining(); got != 10*time.Second+100*time.Second+20*time.Second+2*15*time.Second {
		t.Errorf("remaining after row 2's own round = %v, want 160s", got)
	}
	// A row whose like has no measured row is priced at the mean.
	q := newBenchProgress([]string{small, large, large}, 1)
	q.finished(0, false, 10*time.Second)
	q.finished(1, true, time.Hour) // from the journal: prices nothing
	if got, _ := q.remaining(); got != 10*time.Second {
		t.Errorf("remaining with no like measured = %v, want the mean, 10s", got)
	}
}
