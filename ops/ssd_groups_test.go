package ops

import (
	"fmt"
	"math"
	"math/rand"
	"testing"

	G "gorgonia.org/gorgonia"
)

// ssdGroupCases have fewer groups of B and C than heads.
var ssdGroupCases = []struct {
	ssdCase
	g int
}{
	{ssdCase{b: 2, t: 11, h: 4, p: 3, n: 5, chunk: 4, withD: true, dtLo: 0.01, dtHi: 0.5, aScale: 2}, 2},
	{ssdCase{b: 1, t: 17, h: 3, p: 2, n: 4, chunk: 5, withH0: true, dtLo: 0.01, dtHi: 1, aScale: 3}, 1},
	{ssdCase{b: 2, t: 3, h: 2, p: 3, n: 2, chunk: 8, withD: true, withH0: true, dtLo: 0.01, dtHi: 0.5, aScale: 2}, 1},
	// A unit of three heads per batch row (blocksPerGroup 1) ...
	{ssdCase{b: 4, t: 9, h: 3, p: 2, n: 3, chunk: 4, withD: true, withH0: true, dtLo: 0.01, dtHi: 0.5, aScale: 2}, 1},
	// ... and groups split into two units of two heads, with partial dB and dC.
	{ssdCase{b: 1, t: 10, h: 8, p: 2, n: 3, chunk: 3, withD: true, withH0: true, dtLo: 0.01, dtHi: 0.5, aScale: 2}, 2},
}

func TestSSDGroupedGradFD(t *testing.T) {
	for i, c := range ssdGroupCases {
		for _, out := range []string{"y", "state"} {
			t.Run(fmt.Sprintf("%v_g%d/%s", c.ssdCase, c.g, out), func(t *testing.T) {
				checkGradFD(t, int64(60+i), ssdFDInputs(c.ssdCase, c.g), func(n []*G.Node) (*G.Node, error) {
					return ssdFromNodes(c.ssdCase, n, out, false)
				})
			})
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
