package ops

import (
	"fmt"
	"math"
	"math/rand"
	"runtime"
	"testing"

	G "gorgonia.org/gorgonia"
)

// ssdGroupCases have fewer groups of B and C than heads. Which units the
// scan forms depends on GOMAXPROCS (withUnits), so the tests below run each
// case under ssdTestProcs: one core gives every group one unit; eight split
// the groups of small batches into blocks of heads with partial dB and dC.
var ssdGroupCases = []struct {
	ssdCase
	g int
}{
	{ssdCase{b: 2, t: 11, h: 4, p: 3, n: 5, chunk: 4, withD: true, dtLo: 0.01, dtHi: 0.5, aScale: 2}, 2},
	{ssdCase{b: 1, t: 17, h: 3, p: 2, n: 4, chunk: 5, withH0: true, dtLo: 0.01, dtHi: 1, aScale: 3}, 1},
	{ssdCase{b: 2, t: 3, h: 2, p: 3, n: 2, chunk: 8, withD: true, withH0: true, dtLo: 0.01, dtHi: 0.5, aScale: 2}, 1},
	{ssdCase{b: 4, t: 9, h: 3, p: 2, n: 3, chunk: 4, withD: true, withH0: true, dtLo: 0.01, dtHi: 0.5, aScale: 2}, 1},
	{ssdCase{b: 1, t: 10, h: 8, p: 2, n: 3, chunk: 3, withD: true, withH0: true, dtLo: 0.01, dtHi: 0.5, aScale: 2}, 2},
}

// ssdTestProcs are the GOMAXPROCS values the grouped-heads tests run under.
var ssdTestProcs = []int{1, 8}

// withProcs runs f with GOMAXPROCS set to procs.
func withProcs(procs int, f func()) {
	old := runtime.GOMAXPROCS(procs)
	defer runtime.GOMAXPROCS(old)
	f()
}

// The split into units: the fewest blocks of heads per group that give
// GOMAXPROCS units, a divisor of the heads per group, else one per head.
func TestSSDUnitSplit(t *testing.T) {
	for _, c := range []struct{ b, g, h, procs, blocks int }{
		{8, 1, 4, 2, 1}, {2, 1, 4, 2, 1}, {1, 1, 4, 2, 2}, {1, 1, 4, 1, 1}, {1, 1, 4, 3, 4},
		{1, 2, 8, 8, 4}, {4, 1, 3, 8, 3}, {2, 4, 4, 8, 1}, {1, 3, 3, 8, 1},
	} {
		var k ssdKernel
		withProcs(c.procs, func() { k = ssdKernel{b: c.b, g: c.g, h: c.h}.withUnits() })
		if k.blocks != c.blocks {
			t.Errorf("b=%d g=%d h=%d GOMAXPROCS %d: %d blocks per group, want %d", c.b, c.g, c.h, c.procs, k.blocks, c.blocks)
		}
		heads := map[int]bool{}
		for i := 0; i < k.units(); i++ {
			u := k.unit(i)
			if u.h0/(c.h/c.g) != u.gi || (u.h0+u.hb-1)/(c.h/c.g) != u.gi {
				t.Errorf("b=%d g=%d h=%d: unit %d has heads %d..%d outside its group %d", c.b, c.g, c.h, i, u.h0, u.h0+u.hb-1, u.gi)
			}
			for hh := u.h0; hh < u.h0+u.hb; hh++ {
				if heads[u.bi*c.h+hh] {
					t.Errorf("b=%d g=%d h=%d: head %d of row %d in two units", c.b, c.g, c.h, hh, u.bi)
				}
				heads[u.bi*c.h+hh] = true
			}
		}
		if len(heads) != c.b*c.h {
			t.Errorf("b=%d g=%d h=%d: units cover %d of %d heads", c.b, c.g, c.h, len(heads), c.b*c.h)
		}
	}
}

func TestSSDGroupedGradFD(t *testing.T) {
	for _, procs := range ssdTestProcs {
		for i, c := range ssdGroupCases {
			for _, out := range []string{"y", "state"} {
				t.Run(fmt.Sprintf("%v_g%d/%s/procs=%d", c.ssdCase, c.g, out, procs), func(t *testing.T) {
					withProcs(procs, func() {
						checkGradFD(t, int64(60+i), ssdFDInputs(c.ssdCase, c.g), func(n []*G.Node) (*G.Node, error) {
							return ssdFromNodes(c.ssdCase, n, out, false)
						})
					})
				})
			}
		}
	}
}

// Grouped B and C give the values and gradients of the same B and C
// repeated to every head (RepeatHeads). Not to the bit: the heads of a unit
// share one product for their state terms, whose dB and dC sum over the
// heads inside the product where RepeatHeads' gradient sums per-head
// results, so the sums run in another order. The bound, 1e-12 relative in
// float64, is a few thousand units in the last place: the reordering of a
// handful of terms, far below any mistake in a term.
func TestSSDGroupsEqualRepeatedHeads(t *testing.T) {
	for _, procs := range ssdTestProcs {
		withProcs(procs, func() { ssdGroupsEqualRepeatedHeads(t) })
	}
}

func ssdGroupsEqualRepeatedHeads(t *testing.T) {
	for i, c := range ssdGroupCases {
		for _, out := range []string{"y", "state"} {
			inputs := ssdFDInputs(c.ssdCase, c.g)
			r := rand.New(rand.NewSource(int64(90 + i)))
			data := make([][]float64, len(inputs))
			for j, s := range inputs {
				gen := s.gen
				if gen == nil {
					gen = normal
				}
				n := 1
				for _, d := range s.shape {
					n *= d
				}
				data[j] = randData(r, n, gen)
			}
			var w []float64
			run := func(repeat bool) [][]float64 {
				g := G.NewGraph()
				nodes := make([]*G.Node, len(inputs))
				for j, s := range inputs {
					nodes[j] = tensorNode(g, s.name, data[j], s.shape...)
				}
				y, err := ssdFromNodes(c.ssdCase, nodes, out, repeat)
				if err != nil {
					t.Fatal(err)
				}
				if w == nil {
					w = randData(r, y.Shape().TotalSize(), nil)
				}
				cost, err := weightedSum(y, tensorNode(g, "w", w, y.Shape()...))
				if err != nil {
					t.Fatal(err)
				}
				grads, err := G.Grad(cost, nodes...)
				if err != nil {
					t.Fatal(err)
				}
				return evaluate(t, g, append([]*G.Node{y}, grads...)...)
			}
			got, want := run(false), run(true)
			for j := range want {
				what := "y"
				if j > 0 {
					what = "d" + inputs[j-1].name
				}
				for e := range want[j] {
					if diff := math.Abs(got[j][e] - want[j][e]); diff > 1e-12*math.Max(1, math.Abs(want[j][e])) {
						t.Fatalf("%v g%d %s: %s[%d] = %v grouped, %v repeated (differ by %.3g)", c.ssdCase, c.g, out, what, e, got[j][e], want[j][e], diff)
					}
				}
			}
		}
	}
}
