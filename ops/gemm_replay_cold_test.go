package ops

import (
	"math"
	"strings"
	"sync/atomic"
	"testing"
)

// A replay makes each goroutine's products ready once and runs them in
// every round: prepare is called once per share, and each product runs
// its count times a round.
func TestReplayPreparesOncePerGoroutine(t *testing.T) {
	shapes := GemmShapes{{M: 4, N: 4, K: 4, LDA: 4, LDB: 4, LDC: 4}: 6}
	var prepared, ran atomic.Int64
	prepare := func(sh shapeShare) []replayRun {
		prepared.Add(1)
		runs := make([]replayRun, 0, len(sh))
		for _, c := range sh {
			runs = append(runs, replayRun{func() { ran.Add(1) }, c.n})
		}
		return runs
	}
	if _, err := replayShapes("test", shapes, 2, 3, prepare); err != nil {
		t.Fatal(err)
	}
	if prepared.Load() != 2 || ran.Load() != 3*6 {
		t.Errorf("2 goroutines, 3 rounds of 6 products: prepared %d times, ran %d products; want 2 and 18", prepared.Load(), ran.Load())
	}
}

// place walks along a buffer a cache line at a time and starts again at 0
// when the next operand would run past the end.
func TestPlaceWalksAndWraps(t *testing.T) {
	next := 0
	var at []int
	for range 5 {
		var a int
		a, next = place(next, 20, 100) // 20 elements take two lines of 16
		at = append(at, a)
	}
	want := []int{0, 32, 64, 0, 32}
	for i := range want {
		if at[i] != want[i] {
			t.Fatalf("places %v, want %v", at, want)
		}
	}
	if a, after := place(96, 4, 100); a != 96 || after != 112 {
		t.Errorf("an operand that fits before the end went to %d (next %d), want 96 (112)", a, after)
	}
}

// A cold product computes op(a)·op(b) at each place it takes, and its
// successive calls take successive places of every operand, wrapping round.
func TestColdProductTakesSuccessivePlaces(t *testing.T) {
	s := GemmShape{TransB: true, M: 2, N: 3, K: 4, LDA: 4, LDB: 4, LDC: 3}
	n := s.operandElems()
	p := &coldPools[float64]{}
	p.fit(n, 64)
	run := p.product(s)
	// a (8 elements), b (12) and c (6) each take a line of 16 a call; the
	// pools hold 64, so the fifth call starts again at 0, and after call i
	// the cursors stand at the end of place i % 4.
	for i := range 6 {
		run()
		if want := (i%4 + 1) * 16; p.next != [3]int{want, want, want} {
			t.Fatalf("after call %d the cursors are %v, want %d for every operand", i, p.next, want)
		}
	}
	a, b, c := p.buf[0][16:], p.buf[1][16:], p.buf[2][16:]
	for i := range s.M {
		for j := range s.N {
			var sum float64
			for k := range s.K {
				sum += a[i*s.LDA+k] * b[j*s.LDB+k]
			}
			if got := c[i*s.LDC+j]; math.Abs(got-sum) > 1e-12 {
				t.Errorf("c[%d,%d] at the second place is %v, want %v", i, j, got, sum)
			}
		}
	}
}

// The cold replay runs on one and more goroutines, with float32 and
// float64 shapes mixed, and refuses what the warm one refuses and a span
// of nothing.
func TestReplayGemmShapesCold(t *testing.T) {
	shapes := GemmShapes{
		{M: 64, N: 32, K: 16, LDA: 16, LDB: 32, LDC: 32}:                                          5,
		{Float64: true, TransA: true, M: 8, N: 8, K: 8, LDA: 8, LDB: 8, LDC: 8, Accumulate: true}: 3,
	}
	for _, g := range []int{1, 2} {
		if d, err := ReplayGemmShapesCold(shapes, g, 2, 1<<20); err != nil || d <= 0 {
			t.Errorf("cold replay on %d goroutines: %v, %v", g, d, err)
		}
	}
	if _, err := ReplayGemmShapesCold(shapes, 1, 1, 0); err == nil || !strings.Contains(err.Error(), "span 0") {
		t.Errorf("a span of 0 gave %v", err)
	}
	bad := GemmShape{M: 64, N: 32, K: 16, LDA: 8, LDB: 32, LDC: 32}
	if _, err := ReplayGemmShapesCold(GemmShapes{bad: 1}, 1, 1, 1<<20); err == nil || !strings.Contains(err.Error(), "replay gemm shapes cold") {
		t.Errorf("a too-narrow leading dimension gave %v", err)
	}
}

// sysfs's sizes read as bytes; anything else is not a size.
func TestParseCacheSize(t *testing.T) {
	for s, want := range map[string]int{"32768K": 32 << 20, "1024K": 1 << 20, "2M": 2 << 20, "1G": 1 << 30, "4096": 4096} {
		if got, ok := parseCacheSize(s); !ok || got != want {
			t.Errorf("parseCacheSize(%q) = %d, %v; want %d", s, got, ok, want)
		}
	}
	for _, s := range []string{"", "K", "-1K", "0", "12Q"} {
		if got, ok := parseCacheSize(s); ok {
			t.Errorf("parseCacheSize(%q) = %d, want no size", s, got)
		}
	}
	llc, _ := LastLevelCache()
	if llc <= 0 {
		t.Fatalf("last-level cache %d", llc)
	}
	// Twice the cache on each of 2 goroutines, unless their six buffers
	// together would pass coldPoolsTotal; then what fits, but never under
	// half the cache (a virtual machine may list its host's whole L3: 504
	// MiB).
	want := 2 * llc
	if 3*2*want > coldPoolsTotal {
		want = max(coldPoolsTotal/6, llc/2)
	}
	if got := ColdSpan(2); got != want {
		t.Errorf("cold span on 2 goroutines %d, for a last-level cache of %d; want %d", got, llc, want)
	}
	if got := ColdSpan(1 << 20); got != llc/2 {
		t.Errorf("cold span on a million goroutines %d, want half the cache, %d", got, llc/2)
	}
}

// A ColdReplay fills its buffers once: a second replay of shapes that fit
// keeps every buffer, a shape needing more than half a buffer replaces
// that role's buffer only, and more goroutines get buffers of their own.
func TestColdReplayKeepsItsBuffers(t *testing.T) {
	small := GemmShapes{{M: 8, N: 8, K: 8, LDA: 8, LDB: 8, LDC: 8}: 4}
	r, err := NewColdReplay(4096) // 1024 float32s per role
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Replay(small, 1, 2); err != nil {
		t.Fatal(err)
	}
	first := r.pools[0].p32.buf
	if len(first[0]) != 1024 || r.pools[0].p64.buf[0] != nil {
		t.Fatalf("after one float32 replay: float32 a has %d elements (want 1024), float64 a %d (want none)", len(first[0]), len(r.pools[0].p64.buf[0]))
	}
	if _, err := r.Replay(small, 1, 2); err != nil {
		t.Fatal(err)
	}
	for role := range first {
		if &r.pools[0].p32.buf[role][0] != &first[role][0] {
			t.Errorf("a second replay of the same shapes replaced buffer %d", role)
		}
	}
	// a is 25×25 (625 elements, more than half of 1024); b and c 25 each.
	wide := GemmShapes{{M: 25, N: 1, K: 25, LDA: 25, LDB: 1, LDC: 1}: 1}
	if _, err := r.Replay(wide, 1, 1); err != nil {
		t.Fatal(err)
	}
	got := r.pools[0].p32.buf
	if len(got[0]) != 1250 || &got[1][0] != &first[1][0] || &got[2][0] != &first[2][0] {
		t.Errorf("a shape needing 625 elements of a: a has %d elements (want 1250), b kept %v, c kept %v",
			len(got[0]), &got[1][0] == &first[1][0], &got[2][0] == &first[2][0])
	}
	if _, err := r.Replay(small, 2, 1); err != nil {
		t.Fatal(err)
	}
	// Both goroutines have products (2 of the 4 each), so each took pools.
	if len(r.pools) != 2 || len(r.pools[1].p32.buf[0]) != 1024 {
		t.Errorf("a replay on 2 goroutines left %d goroutines' pools (the second's a: %d elements, want 1024)", len(r.pools), len(r.pools[len(r.pools)-1].p32.buf[0]))
	}
	if _, err := NewColdReplay(0); err == nil || !strings.Contains(err.Error(), "span 0") {
		t.Errorf("a span of 0 gave %v", err)
	}
}
