package wmcli

import (
	"fmt"
	"time"
)

// benchProgress counts a wm bench run's rounds (one row's configuration,
// wm and the peer, once) and estimates the time the rest will take, for
// the line printed before each round: a full run is 140 rounds and takes
// one to three hours. A row's rounds take about as long as each other (the
// same configuration), and rows differ by tens of times (d_model 64
// against 256), so a round still to come is priced at its own row's last
// round measured in this process. A row none of whose rounds has been
// measured yet is priced like the rows of its size and thread count that
// have been (another pattern at the same d_model, seq_len, batch and
// threads: the reports' training steps of one size and thread count are
// within 2× of each other, where the mean of every round so far mixes rows
// tens of times apart), and at the mean of the rounds measured so far only
// when there are none. Rounds taken from the journal cost nothing and
// price nothing.
type benchProgress struct {
	rounds int
	// journal and measured are the rounds finished from the journal and
	// measured in this process; spent is the time the measured ones took,
	// last each row's last measured round's time.
	journal, measured int
	spent             time.Duration
	last              map[int]time.Duration
	// left[i] is how many of row i's rounds are still to come; like[i]
	// names row i's size and thread count (rows with the same like are
	// priced alike until they have a round of their own).
	left []int
	like []string
}

// newBenchProgress is the progress of a run of rounds rounds of each row,
// none done yet; like[i] names row i's size and thread count (benchLike).
func newBenchProgress(like []string, rounds int) *benchProgress {
	p := &benchProgress{rounds: rounds, last: map[int]time.Duration{}, left: make([]int, len(like)), like: like}
	for i := range p.left {
		p.left[i] = rounds
	}
	return p
}

// benchLike names a row's size and thread count for benchProgress: rows
// of different patterns with the same name take about as long a round.
func benchLike(z benchSize, threads int) string {
	return fmt.Sprintf("d%d t%d b%d ×%d", z.D, z.T, z.B, threads)
}

// finished records that a round of row i is done: from the journal, or
// measured in d.
func (p *benchProgress) finished(row int, fromJournal bool, d time.Duration) {
	p.left[row]--
	if fromJournal {
		p.journal++
		return
	}
	p.measured++
	p.spent += d
	p.last[row] = d
}

// remaining estimates the time the rounds still to come will take, and
// says whether there is an estimate (none before the first round measured).
func (p *benchProgress) remaining() (time.Duration, bool) {
	if p.measured == 0 {
		return 0, false
	}
	// The mean of the last rounds of the measured rows of each like.
	sum, n := map[string]time.Duration{}, map[string]int{}
	for i, d := range p.last {
		sum[p.like[i]] += d
		n[p.like[i]]++
	}
	mean := p.spent / time.Duration(p.measured)
	var t time.Duration
	for i, left := range p.left {
		d, ok := p.last[i]
		switch {
		case ok:
		case n[p.like[i]] > 0:
			d = sum[p.like[i]] / time.Duration(n[p.like[i]])
		default:
			d = mean
		}
		t += time.Duration(left) * d
	}
	return t, true
}

// String is the run's place for the line before a round: "round 31 of 140;
// 19 from the journal, 11 measured in 14m5s, about 1h52m0s left" (to the
// minute, or to the second under one).
func (p *benchProgress) String() string {
	s := fmt.Sprintf("round %d of %d", p.journal+p.measured+1, len(p.left)*p.rounds)
	if p.journal > 0 {
		s += fmt.Sprintf("; %d from the journal", p.journal)
	}
	if t, ok := p.remaining(); ok {
		unit := time.Minute
		if t < time.Minute {
			unit = time.Second
		}
		s += fmt.Sprintf(", %d measured in %s, about %s left", p.measured, p.spent.Round(time.Second), t.Round(unit))
	}
	return s
}
