package ops

import (
	"fmt"
	"math"
	"math/rand"
	"testing"

	G "gorgonia.org/gorgonia"
)

// ssdCase is one random SSD problem.
type ssdCase struct {
	b, t, h, p, n      int
	chunk              int
	withD, withH0      bool
	dtLo, dtHi, aScale float64
}

type ssdData struct{ x, dt, A, B, C, D, H0 []float64 }

func (c ssdCase) draw(seed int64) ssdData {
	r := rand.New(rand.NewSource(seed))
	d := ssdData{
		x:  randData(r, c.b*c.t*c.h*c.p, nil),
		dt: randData(r, c.b*c.t*c.h, uniformIn(c.dtLo, c.dtHi)),
		A:  randData(r, c.h, uniformIn(-c.aScale, -0.1*c.aScale)),
		B:  randData(r, c.b*c.t*c.h*c.n, nil),
		C:  randData(r, c.b*c.t*c.h*c.n, nil),
	}
	if c.withD {
		d.D = randData(r, c.h, nil)
	}
	if c.withH0 {
		d.H0 = randData(r, c.b*c.h*c.p*c.n, nil)
	}
	return d
}

func (c ssdCase) nodes(g *G.ExprGraph, d ssdData) SSDInputs {
	return SSDInputs{
		X:  tensorNode(g, "x", d.x, c.b, c.t, c.h, c.p),
		DT: tensorNode(g, "dt", d.dt, c.b, c.t, c.h),
		A:  tensorNode(g, "A", d.A, c.h),
		B:  tensorNode(g, "B", d.B, c.b, c.t, c.h, c.n),
		C:  tensorNode(g, "C", d.C, c.b, c.t, c.h, c.n),
		D:  tensorNode(g, "D", d.D, c.h),
		H0: tensorNode(g, "H0", d.H0, c.b, c.h, c.p, c.n),
	}
}

// build adds the case's SSD output and final state to g.
func (c ssdCase) build(t *testing.T, g *G.ExprGraph, d ssdData) (y, state *G.Node, in SSDInputs) {
	t.Helper()
	in = c.nodes(g, d)
	y, err := SSD(in, c.chunk)
	if err != nil {
		t.Fatal(err)
	}
	if state, err = SSDFinalState(in, c.chunk); err != nil {
		t.Fatal(err)
	}
	return y, state, in
}

var ssdEdgeCases = []ssdCase{
	{b: 2, t: 11, h: 3, p: 4, n: 6, chunk: 4, withD: true, dtLo: 0.01, dtHi: 0.5, aScale: 2},
	{b: 1, t: 1, h: 1, p: 2, n: 3, chunk: 4, dtLo: 0.01, dtHi: 0.5, aScale: 2},                            // one token, one head
	{b: 2, t: 3, h: 2, p: 3, n: 2, chunk: 8, withD: true, withH0: true, dtLo: 0.01, dtHi: 0.5, aScale: 2}, // shorter than a chunk
	{b: 1, t: 17, h: 2, p: 2, n: 4, chunk: 5, withH0: true, dtLo: 0.01, dtHi: 1, aScale: 3},               // not a multiple
	{b: 1, t: 16, h: 1, p: 3, n: 3, chunk: 4, withD: true, dtLo: 0.01, dtHi: 0.5, aScale: 1},              // a multiple
}

func (c ssdCase) String() string {
	return fmt.Sprintf("b%d_t%d_h%d_p%d_n%d_chunk%d_D%v_H0%v", c.b, c.t, c.h, c.p, c.n, c.chunk, c.withD, c.withH0)
}

// TestSSDChunkedEqualsRecurrence: the chunked scan, the token-by-token
// recurrence and repeated one-token steps agree to float64 precision, for
// the outputs and the final state.
func TestSSDChunkedEqualsRecurrence(t *testing.T) {
	for i, c := range append(ssdEdgeCases, ssdCase{b: 2, t: 70, h: 2, p: 4, n: 5, chunk: 16, withD: true, withH0: true, dtLo: 0.001, dtHi: 0.2, aScale: 4}) {
		t.Run(c.String(), func(t *testing.T) {
			d := c.draw(int64(10 + i))
			wantY, wantH := ssdRef(c.b, c.t, c.h, c.p, c.n, d.x, d.dt, d.A, d.B, d.C, d.D, d.H0)

			g := G.NewGraph()
			y, H, _ := c.build(t, g, d)
			got := evaluate(t, g, y, H)
			assertClose(t, "chunked y", got[0], wantY, 1e-10, 1e-12)
			assertClose(t, "chunked final state", got[1], wantH, 1e-10, 1e-12)

			stepY, stepH := ssdStepByStep(t, c, d)
			assertClose(t, "stepped y", stepY, wantY, 1e-10, 1e-12)
			assertClose(t, "stepped final state", stepH, wantH, 1e-10, 1e-12)
		})
	}
}

// ssdStepByStep decodes the case one token at a time with SSDStep, carrying
// the state, and returns all outputs and the last state.
func ssdStepByStep(t *testing.T, c ssdCase, d ssdData) (y, state []float64) {
	state = make([]float64, c.b*c.h*c.p*c.n)
	if d.H0 != nil {
		copy(state, d.H0)
	}
	y = make([]float64, c.b*c.t*c.h*c.p)
	token := func(src []float64, s, width int) []float64 { // src [b,t,width] at time s
		r := make([]float64, c.b*width)
		for bi := 0; bi < c.b; bi++ {
			copy(r[bi*width:(bi+1)*width], src[(bi*c.t+s)*width:(bi*c.t+s+1)*width])
		}
		return r
	}
	one := c
	one.t = 1
	for s := 0; s < c.t; s++ {
		g := G.NewGraph()
		in := one.nodes(g, ssdData{
			x: token(d.x, s, c.h*c.p), dt: token(d.dt, s, c.h), A: d.A,
			B: token(d.B, s, c.h*c.n), C: token(d.C, s, c.h*c.n), D: d.D, H0: state,
		})
		yn, hn, err := SSDStep(in)
		if err != nil {
			t.Fatal(err)
		}
		got := evaluate(t, g, yn, hn)
		for bi := 0; bi < c.b; bi++ {
			copy(y[(bi*c.t+s)*c.h*c.p:], got[0][bi*c.h*c.p:(bi+1)*c.h*c.p])
		}
		state = got[1]
	}
	return y, state
}

// TestSSDStrongDecayLong: thousands of tokens with strong decay stay finite
// and equal the recurrence (the stable segment sum).
func TestSSDStrongDecayLong(t *testing.T) {
	c := ssdCase{b: 1, t: 3000, h: 2, p: 2, n: 3, chunk: 256, withD: true, dtLo: 0.5, dtHi: 5, aScale: 50}
	if testing.Short() {
		c.t = 600
	}
	d := c.draw(99)
	wantY, wantH := ssdRef(c.b, c.t, c.h, c.p, c.n, d.x, d.dt, d.A, d.B, d.C, d.D, nil)
	g := G.NewGraph()
	y, H, in := c.build(t, g, d)
	cost, err := G.Sum(y)
	if err != nil {
		t.Fatal(err)
	}
	grads, err := G.Grad(cost, in.X, in.DT, in.A, in.B, in.C)
	if err != nil {
		t.Fatal(err)
	}
	got := evaluate(t, g, append(G.Nodes{y, H}, grads...)...)
	assertClose(t, "y", got[0], wantY, 1e-9, 1e-12)
	assertClose(t, "state", got[1], wantH, 1e-9, 1e-12)
	for i, gr := range got[2:] {
		for j, v := range gr {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				t.Fatalf("gradient %d [%d] = %v", i, j, v)
			}
		}
	}
}

// ssdFDInputs are the fdInputs of a case with g groups of B and C
// ([b,t,g,n]; g = h gives every head its own).
func ssdFDInputs(c ssdCase, g int) []fdInput {
	in := []fdInput{
		{name: "x", shape: []int{c.b, c.t, c.h, c.p}},
		{name: "dt", shape: []int{c.b, c.t, c.h}, gen: uniformIn(c.dtLo, c.dtHi)},
		{name: "A", shape: []int{c.h}, gen: uniformIn(-c.aScale, -0.1*c.aScale)},
		{name: "B", shape: []int{c.b, c.t, g, c.n}},
		{name: "C", shape: []int{c.b, c.t, g, c.n}},
	}
	if c.withD {
		in = append(in, fdInput{name: "D", shape: []int{c.h}})
	}
	if c.withH0 {
		in = append(in, fdInput{name: "H0", shape: []int{c.b, c.h, c.p, c.n}})
	}
	return in
}

// ssdFromNodes builds SSD (or its final state) from ssdFDInputs' nodes,
// with B and C repeated to the heads first when repeat is set.
func ssdFromNodes(c ssdCase, n []*G.Node, out string, repeat bool) (*G.Node, error) {
	in := SSDInputs{X: n[0], DT: n[1], A: n[2], B: n[3], C: n[4]}
	if repeat {
		var err error
		if in.B, err = RepeatHeads(in.B, c.h); err != nil {
			return nil, err
		}
		if in.C, err = RepeatHeads(in.C, c.h); err != nil {
			return nil, err
		}
	}
	j := 5
	if c.withD {
		in.D = n[j]
		j++
	}
	if c.withH0 {
		in.H0 = n[j]
	}
	if out == "state" {
		return SSDFinalState(in, c.chunk)
	}
	return SSD(in, c.chunk)
}

func TestSSDGradFD(t *testing.T) {
	for i, c := range ssdEdgeCases {
		for _, out := range []string{"y", "state"} {
			t.Run(c.String()+"/"+out, func(t *testing.T) {
				checkGradFD(t, int64(20+i), ssdFDInputs(c, c.h), func(n []*G.Node) (*G.Node, error) {
					return ssdFromNodes(c, n, out, false)
				})
			})
		}
	}
}

func TestSSDRejectsBadShapes(t *testing.T) {
	g := G.NewGraph()
	c := ssdEdgeCases[0]
	in := c.nodes(g, c.draw(1))
	in.C = tensorNode(g, "Cbad", make([]float64, c.b*c.t*c.h*(c.n+1)), c.b, c.t, c.h, c.n+1)
	if _, err := SSD(in, 4); err == nil {
		t.Fatal("C with the wrong state size was accepted")
	}
	in = c.nodes(G.NewGraph(), c.draw(1))
	if _, err := SSD(in, 0); err == nil {
		t.Fatal("chunk_len 0 was accepted")
	}
}

// The backward that takes the chunk states its forward saved gives the same
// gradients, to the bit, as one that passes the states again; a save for
// other inputs is not used, and a save is used once. A forward whose
// gradient is not wanted saves nothing.
func TestSSDBackwardFromSave(t *testing.T) {
	for i, c := range ssdEdgeCases {
		for _, out := range []ssdOutput{ssdOutY, ssdOutState} {
			d, other := c.draw(int64(40+i)), c.draw(int64(80+i))
			newK := func() ssdKernel {
				k := ssdKernel{b: c.b, t: c.t, h: c.h, g: c.h, p: c.p, n: c.n, chunk: c.chunk, hasD: c.withD, hasH0: c.withH0,
					out: out, saved: &ssdSaved{}}
				k.gradientWanted()
				return k
			}
			k0 := newK()
			inputs := func(d ssdData) []any {
				in := []any{d.x, d.dt, d.A, d.B, d.C}
				if c.withD {
					in = append(in, d.D)
				}
				if c.withH0 {
					in = append(in, d.H0)
				}
				return in
			}
			dOut := randData(rand.New(rand.NewSource(int64(i))), k0.outShape().TotalSize(), nil)
			grads := func(k ssdKernel, in []any) [][]float64 { return kernelGrads(t, k, in, dOut) }
			forward := func(k ssdKernel, in []any) {
				if err := k.forward(in, make([]float64, k.outShape().TotalSize())); err != nil {
					t.Fatal(err)
				}
			}
			want := grads(k0, inputs(d))
			k := newK()
			forward(k, inputs(d))
			got := grads(k, inputs(d))
			if k.saved.fresh {
				t.Errorf("%v: the save outlived the backward that used it", c)
			}
			assertSame(t, fmt.Sprintf("%v out=%d from the save", c, out), got, want)
			stale := newK()
			forward(stale, inputs(other))
			assertSame(t, fmt.Sprintf("%v out=%d with a save for other inputs", c, out), grads(stale, inputs(d)), want)
			eval := newK()
			eval.saved.wanted = false
			forward(eval, inputs(d))
			if eval.saved.fresh || eval.saved.states != nil {
				t.Errorf("%v out=%d: a forward whose gradient is not wanted kept its states", c, out)
			}
		}
	}
}
