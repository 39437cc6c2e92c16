package ops

import (
	"fmt"
	"math"
	"math/rand"
	"strings"
	"testing"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// narrowCase is one size of SSD with its narrow projections' product all.
type narrowCase struct{ b, t, h, p, g, n int }

func (c narrowCase) width() int { return 2*c.g*c.n + c.h }

// narrowGraph builds the scan of all [b,t,2gn+h], dt_bias [h], x [b,t,h,p]
// and A [h] in dtype dt, either through SSDNarrow or through the seven nodes
// it replaces (Columns, Reshape, Rope, AddBias, Softplus), and returns y's
// value and the gradients of all, dt_bias, x and A of sum(y·w), as float64.
func narrowGraph(t *testing.T, c narrowCase, rope *RopeConfig, fused bool, dt tensor.Dtype, data [][]float64) [][]float64 {
	t.Helper()
	g := G.NewGraph()
	node := func(name string, v []float64, shape ...int) *G.Node {
		var backing any = append([]float64(nil), v...)
		if dt == tensor.Float32 {
			f := make([]float32, len(v))
			for i := range v {
				f[i] = float32(v[i])
			}
			backing = f
		}
		return G.NewTensor(g, dt, len(shape), G.WithName(name),
			G.WithValue(tensor.New(tensor.WithShape(shape...), tensor.WithBacking(backing))))
	}
	all := node("all", data[0], c.b, c.t, c.width())
	bias := node("dt_bias", data[1], c.h)
	x := node("x", data[2], c.b, c.t, c.h, c.p)
	A := node("A", data[3], c.h)
	in := SSDInputs{X: x, A: A}
	if fused {
		in.Narrow = must(SSDNarrow(all, bias, c.g, c.n, rope))
	} else {
		gn := c.g * c.n
		B := must(G.Reshape(must(Columns(all, 0, gn)), tensor.Shape{c.b, c.t, c.g, c.n}))
		C := must(G.Reshape(must(Columns(all, gn, 2*gn)), tensor.Shape{c.b, c.t, c.g, c.n}))
		if rope != nil {
			B, C = must(Rope(B, *rope)), must(Rope(C, *rope))
		}
		in.B, in.C = B, C
		in.DT = must(Softplus(must(AddBias(must(Columns(all, 2*gn, 2*gn+c.h)), bias))))
	}
	y := must(SSD(in, 3))
	w := node("w", data[4], c.b, c.t, c.h, c.p)
	cost := must(weightedSum(y, w))
	grads, err := G.Grad(cost, all, bias, x, A)
	if err != nil {
		t.Fatalf("grad: %+v", err)
	}
	vm := G.NewTapeMachine(g)
	defer vm.Close()
	if err := vm.RunAll(); err != nil {
		t.Fatalf("run: %+v", err)
	}
	var out [][]float64
	for _, n := range append(G.Nodes{y}, grads...) {
		switch d := n.Value().Data().(type) {
		case []float64:
			out = append(out, append([]float64(nil), d...))
		case []float32:
			v := make([]float64, len(d))
			for i := range d {
				v[i] = float64(d[i])
			}
			out = append(out, v)
		default:
			t.Fatalf("%v: data %T", n, d)
		}
	}
	return out
}

// narrowData draws all, dt_bias, x, A and w for c: dt_bias near Mamba2's
// (softplus of it between 0.001 and 0.1 plus all's part), A negative.
func narrowData(r *rand.Rand, c narrowCase) [][]float64 {
	return [][]float64{
		randData(r, c.b*c.t*c.width(), nil),
		randData(r, c.h, uniformIn(-4, -1)),
		randData(r, c.b*c.t*c.h*c.p, nil),
		randData(r, c.h, uniformIn(-2, -0.5)),
		randData(r, c.b*c.t*c.h*c.p, nil),
	}
}

// SSDNarrow gives the scan the values and gradients of the seven nodes it
// replaces, to the bit, in float32 and float64, with RoPE and without, with
// one group and with two, and with one batch row of one group, which the
// scan splits into units of heads under GOMAXPROCS >= 2 (partial dB and dC);
// the scan's output and the gradients of all, dt_bias, x and A are compared.
func TestSSDNarrowMatchesNodes(t *testing.T) {
	r := rand.New(rand.NewSource(31))
	rope := DefaultRope()
	names := []string{"y", "d all", "d dt_bias", "d x", "d A"}
	for _, c := range []narrowCase{{2, 7, 2, 3, 1, 4}, {1, 9, 4, 2, 2, 6}, {1, 8, 4, 2, 1, 4}} {
		data := narrowData(r, c)
		for _, dt := range []tensor.Dtype{tensor.Float32, tensor.Float64} {
			for _, rp := range []*RopeConfig{nil, &rope} {
				nodes := narrowGraph(t, c, rp, false, dt, data)
				fused := narrowGraph(t, c, rp, true, dt, data)
				for i := range nodes {
					what := fmt.Sprintf("%+v %v rope=%v: %s", c, dt, rp != nil, names[i])
					assertSameFloat64s(t, what, fused[i], nodes[i])
				}
			}
		}
	}
}

// The gradient of SSDNarrow alone and of the scan through it, against
// central finite differences in float64.
func TestSSDNarrowGradFD(t *testing.T) {
	c := narrowCase{b: 2, t: 5, h: 3, p: 2, g: 1, n: 4}
	rope := DefaultRope()
	all := fdInput{name: "all", shape: []int{c.b, c.t, c.width()}}
	bias := fdInput{name: "dt_bias", shape: []int{c.h}, gen: uniformIn(-3, 0)}
	for _, rp := range []*RopeConfig{nil, &rope} {
		checkGradFD(t, 41, []fdInput{all, bias}, func(in []*G.Node) (*G.Node, error) {
			return SSDNarrow(in[0], in[1], c.g, c.n, rp)
		})
		x := fdInput{name: "x", shape: []int{c.b, c.t, c.h, c.p}}
		A := fdInput{name: "A", shape: []int{c.h}, gen: uniformIn(-2, -0.5)}
		checkGradFD(t, 42, []fdInput{all, bias, x, A}, func(in []*G.Node) (*G.Node, error) {
			n, err := SSDNarrow(in[0], in[1], c.g, c.n, rp)
			if err != nil {
				return nil, err
			}
			return SSD(SSDInputs{X: in[2], A: in[3], Narrow: n}, 2)
		})
	}
}

// The narrow vector is [B | C | dt] as the nodes compute them: B and C the
// columns of all (rotated when RoPE is on), dt the softplus of its columns
// plus the bias, each in the layout of its own tensor.
func TestSSDNarrowLayout(t *testing.T) {
	g := G.NewGraph()
	c := narrowCase{b: 1, t: 2, h: 2, p: 1, g: 1, n: 2}
	all := tensorNode(g, "all", []float64{1, 2, 3, 4, 0.5, -0.5, 5, 6, 7, 8, 1.5, -1.5}, c.b, c.t, c.width())
	bias := tensorNode(g, "dt_bias", []float64{0.25, -0.25}, c.h)
	y := must(SSDNarrow(all, bias, c.g, c.n, nil))
	got := evaluate(t, g, y)[0]
	sp := func(v float64) float64 { return math.Log1p(math.Exp(v)) }
	want := []float64{1, 2, 5, 6, 3, 4, 7, 8, sp(0.75), sp(-0.75), sp(1.75), sp(-1.75)}
	assertClose(t, "narrow", got, want, 1e-15, 0)
}

func TestSSDNarrowErrors(t *testing.T) {
	g := G.NewGraph()
	all := tensorNode(g, "all", make([]float64, 2*3*11), 2, 3, 11) // g 1, n 4, h 3
	bias := tensorNode(g, "dt_bias", make([]float64, 3), 3)
	x := tensorNode(g, "x", make([]float64, 2*3*3*2), 2, 3, 3, 2)
	A := tensorNode(g, "A", make([]float64, 3), 3)
	odd := tensorNode(g, "odd", make([]float64, 2*3*9), 2, 3, 9) // g 1, n 3, h 3
	narrow := must(SSDNarrow(all, bias, 1, 4, nil))
	rope := DefaultRope()
	for _, c := range []struct {
		build func() error
		want  string
	}{
		{func() error { _, err := SSDNarrow(all, all, 1, 4, nil); return err }, "dt_bias (all) must be [h], got (2, 3, 11)"},
		{func() error { _, err := SSDNarrow(all, bias, 1, 3, nil); return err }, "must be [b,t,2·g·n+h] = [b,t,9]"},
		{func() error { _, err := SSDNarrow(all, bias, 0, 4, nil); return err }, "groups 0 and d_state 4 must be >= 1"},
		{func() error { _, err := SSDNarrow(odd, bias, 1, 3, &rope); return err }, "RoPE needs an even d_state"},
		{func() error { _, err := SSD(SSDInputs{X: x, A: A, B: x, Narrow: narrow}, 2); return err }, "which must then be nil"},
		{func() error { _, err := SSD(SSDInputs{X: x, A: A, Narrow: all}, 2); return err }, "must be SSDNarrow's result"},
		{func() error { _, err := SSD(SSDInputs{X: all, A: A, Narrow: narrow}, 2); return err }, "x must be [b,t,h,p] = [2,3,3,p]"},
		{func() error { _, err := SSD(SSDInputs{X: x, Narrow: narrow}, 2); return err }, "x and A are required"},
		{func() error { _, err := SSD(SSDInputs{X: x, A: bias, D: x, Narrow: narrow}, 2); return err }, "ssd: D must be (3)"},
	} {
		err := c.build()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("got error %v, want one containing %q", err, c.want)
		}
	}
}
