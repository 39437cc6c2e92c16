package ops

import (
	"math/rand"
	"testing"

	G "gorgonia.org/gorgonia"
)

// awayFromZero draws ±U(0.2, 1.5): inputs of a ReLU that a finite difference
// step cannot push across the kink.
func awayFromZero(r *rand.Rand) float64 {
	v := 0.2 + 1.3*r.Float64()
	if r.Intn(2) == 0 {
		return -v
	}
	return v
}

func TestInnerFuncValueGradFD(t *testing.T) {
	for _, c := range []struct {
		name       string
		b, t, k    int
		nv, dm, dr int
	}{{"k1", 2, 4, 1, 3, 6, 4}, {"k2", 1, 5, 2, 4, 4, 2}, {"one token, k = nv", 1, 1, 3, 3, 2, 2}} {
		t.Run(c.name, func(t *testing.T) {
			checkGradFD(t, 40, []fdInput{
				{name: "x", shape: []int{c.b, c.t, c.dm}},
				{name: "Wq", shape: []int{c.dm, c.dr}},
				{name: "Kv", shape: []int{c.nv, c.dr}},
				{name: "E", shape: []int{c.nv, c.dm}},
			}, func(n []*G.Node) (*G.Node, error) { return InnerFuncValue(n[0], n[1], n[2], n[3], c.k) })
		})
	}
}

func TestCocaScoresGradFD(t *testing.T) {
	for _, c := range []struct {
		name         string
		b, tq, tk, h int
		d            int
		rope         RopeConfig
	}{
		{"plain", 1, 5, 5, 2, 4, DefaultRope()},
		{"dynamic ntk", 2, 6, 6, 1, 6, RopeConfig{Base: 100, MaxPosition: 3, ScalingFactor: 2}},
		{"decode", 1, 1, 4, 2, 4, DefaultRope()},
		{"one token", 1, 1, 1, 1, 2, DefaultRope()},
	} {
		t.Run(c.name, func(t *testing.T) {
			checkGradFD(t, 41, []fdInput{
				{name: "q", shape: []int{c.b, c.tq, c.h, c.d}},
				{name: "t", shape: []int{c.b, c.tk, c.h, c.d / 2}, gen: awayFromZero},
			}, func(n []*G.Node) (*G.Node, error) { return CocaScores(n[0], n[1], c.rope) })
		})
	}
}

func TestCausalSoftmaxAndWeightedValuesGradFD(t *testing.T) {
	checkGradFD(t, 42, []fdInput{{name: "s", shape: []int{2, 2, 3, 5}}}, func(n []*G.Node) (*G.Node, error) {
		return CausalSoftmax(n[0])
	})
	checkGradFD(t, 43, []fdInput{{name: "P", shape: []int{2, 3, 4, 5}}, {name: "v", shape: []int{2, 5, 3, 2}}},
		func(n []*G.Node) (*G.Node, error) { return WeightedValues(n[0], n[1]) })
}

func cdmoeFDInputs(b, t, dm, dff, heads, nk, half int) []fdInput {
	return []fdInput{
		{name: "x", shape: []int{b, t, dm}},
		{name: "Wup", shape: []int{dm, dff}, gen: uniformIn(-0.6, 0.6)},
		{name: "Wdown", shape: []int{dff, dm}, gen: uniformIn(-0.6, 0.6)},
		{name: "Wq", shape: []int{dm, 2 * heads * half}, gen: uniformIn(-0.6, 0.6)},
		{name: "keys", shape: []int{heads, nk, 2, half}},
		{name: "Edown", shape: []int{nk * nk, dm}},
		{name: "Eup", shape: []int{nk * nk, dm}},
	}
}

func cdmoeFromNodes(n []*G.Node, cfg CDMoEConfig) (*G.Node, error) {
	return CDMoE(CDMoEInputs{X: n[0], Wup: n[1], Wdown: n[2], Wq: n[3], Keys: n[4], Edown: n[5], Eup: n[6]}, cfg)
}

func TestCDMoEGradFD(t *testing.T) {
	for _, c := range []struct {
		name                           string
		b, t, dm, dff, heads, nk, half int
		cfg                            CDMoEConfig
	}{
		{"silu", 2, 3, 6, 5, 2, 3, 2, CDMoEConfig{Heads: 2, K: 2}},
		{"gelu, one head, one token", 1, 1, 4, 3, 1, 2, 3, CDMoEConfig{Heads: 1, K: 1, Act: "gelu"}},
		{"k = nk", 1, 2, 4, 4, 1, 2, 1, CDMoEConfig{Heads: 1, K: 2}},
	} {
		t.Run(c.name, func(t *testing.T) {
			checkGradFD(t, 44, cdmoeFDInputs(c.b, c.t, c.dm, c.dff, c.heads, c.nk, c.half),
				func(n []*G.Node) (*G.Node, error) { return cdmoeFromNodes(n, c.cfg) })
		})
	}
}

func TestCDMoERejectsNonSquareExperts(t *testing.T) {
	if _, err := ExpertKeys(12); err == nil {
		t.Fatal("12 experts accepted")
	}
	if nk, err := ExpertKeys(1024); err != nil || nk != 32 {
		t.Fatalf("ExpertKeys(1024) = %d, %v", nk, err)
	}
	g := G.NewGraph()
	r := rand.New(rand.NewSource(1))
	mk := func(name string, shape ...int) *G.Node {
		n := 1
		for _, s := range shape {
			n *= s
		}
		return tensorNode(g, name, randData(r, n, nil), shape...)
	}
	_, err := CDMoE(CDMoEInputs{X: mk("x", 1, 2, 4), Wup: mk("Wup", 4, 4), Wdown: mk("Wdown", 4, 4), Wq: mk("Wq", 4, 4),
		Keys: mk("keys", 1, 3, 2, 2), Edown: mk("Edown", 8, 4), Eup: mk("Eup", 8, 4)}, CDMoEConfig{Heads: 1, K: 1})
	if err == nil {
		t.Fatal("8 experts accepted")
	}
}

// TestOpsHashByAttributes: ops that differ only in an attribute hash
// differently, so Gorgonia never merges their nodes (gorgonia's own softmaxOp
// forgets isLog; ours must not).
func TestOpsHashByAttributes(t *testing.T) {
	g := G.NewGraph()
	x := tensorNode(g, "x", make([]float64, 2*3*2*4), 2, 3, 2, 4)
	seen := map[uint32]string{}
	check := func(name string, n *G.Node, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		h := n.Op().Hashcode()
		if other, dup := seen[h]; dup {
			t.Errorf("%s hashes like %s", name, other)
		}
		seen[h] = name
	}
	for _, c := range []RopeConfig{DefaultRope(), {Base: 500, ScalingFactor: 1}, {Base: 10000, ScalingFactor: 1, Offset: 1},
		{Base: 10000, MaxPosition: 2, ScalingFactor: 1}, {Base: 10000, MaxPosition: 2, ScalingFactor: 2}} {
		n, err := Rope(x, c)
		check("rope "+c.String(), n, err)
	}
	for _, c := range [][2]int{{2, 0}, {3, 0}, {3, 1}} {
		n, err := LogN(x, c[0], c[1])
		check("logn", n, err)
	}
	ssdIn := func() SSDInputs {
		return SSDInputs{X: x, DT: tensorNode(g, "", make([]float64, 12), 2, 3, 2), A: tensorNode(g, "", make([]float64, 2), 2),
			B: x, C: x}
	}
	in := ssdIn()
	for _, chunk := range []int{2, 3} {
		n, err := SSD(in, chunk)
		check("ssd", n, err)
		n, err = SSDFinalState(in, chunk)
		check("ssd state", n, err)
	}
	for _, red := range []Reduction{ReduceMean, ReduceSum} {
		n, err := CrossEntropy(x, tensorNode(g, "", make([]float64, 12), 2, 3, 2), red)
		check("cross entropy "+string(red), n, err)
	}
}
