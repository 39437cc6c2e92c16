package layers_test

import (
	"math"
	"math/rand"
	"testing"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/wonderful-matrices/wonderful-matrices-go/layers"
	"github.com/wonderful-matrices/wonderful-matrices-go/ops"
)

const (
	testB, testT, testD = 2, 5, 8
)

var testShape = layers.Shape{DModel: testD, NLayers: 2}

// testLayers are small instances of every layer of SPEC §3.
func testLayers() map[string]layers.Sublayer {
	rope := ops.DefaultRope()
	ssd := func(variant string) layers.Sublayer {
		c := layers.SSDConfig{Variant: variant, Heads: 2, DState: 4, ChunkLen: 2}.Resolved(2)
		return layers.NewSSD("ssd", c, testShape, rope)
	}
	ifa := func(mask ops.MaskKind) layers.Sublayer {
		c := layers.InnerFuncConfig{Mask: mask, Values: 6, RetDim: 4, TopK: 2}.Resolved(2)
		return layers.NewInnerFuncAttn("ifa", c, testShape, rope, 16, 0)
	}
	ntk := rope
	ntk.MaxPosition = 3
	moe := layers.MoEConfig{Experts: 4, TopK: 2, DFF: 6, Shared: 1}.Resolved(testD)
	return map[string]layers.Sublayer{
		"ssd conv1d+D":   ssd("conv1d+D"),
		"ssd a_t":        ssd("a_t"),
		"ssd rope":       ssd("rope"),
		"mamba2":         layers.NewMamba2("b", layers.Mamba2Config{Heads: 4, DState: 4, ChunkLen: 3}.Resolved(2), testShape),
		"qcatn":          layers.NewQCAtn("a", layers.AttentionConfig{Heads: 2}.Resolved(2), testShape, rope, 0),
		"qcatn gqa logn": layers.NewQCAtn("a", layers.AttentionConfig{Heads: 4, KVHeads: 2}.Resolved(2), testShape, rope, 2),
		"qcatn ntk":      layers.NewQCAtn("a", layers.AttentionConfig{Heads: 2, NTK: true}.Resolved(2), testShape, ntk, 0),
		"ifa paper":      ifa(ops.MaskPaper),
		"ifa doge":       ifa(ops.MaskDoge),
		"ifa none":       ifa(ops.MaskNone),
		"coca ntk":       layers.NewCoCA("k", layers.CoCAConfig{Heads: 2}.Resolved(2), testShape, ntk),
		"mlp":            layers.NewMLP("m", 12, testShape),
		"cdmoe":          layers.NewCDMoE("e", layers.CDMoEConfig{DFF: 6, Experts: 9, Heads: 2, TopK: 2, RetDim: 4}.Resolved(testD), testShape),
		"moe":            layers.NewMoE("r", moe, testShape),
		"moe-sei":        layers.NewMoESEI("h", moe, testShape),
	}
}

// objective builds sum(layer(x) ⊙ w) (plus any auxiliary loss) in float64.
func objective(t *testing.T, l layers.Sublayer, x, w []float64) (*layers.Builder, *G.Node, *G.Node) {
	b := layers.NewBuilder(tensor.Float64)
	var xn, loss *G.Node
	err := b.Run(l.Kind(), func() {
		xn = b.Input("x", x, testB, testT, testD)
		y := l.Forward(b, xn, nil)
		loss = b.Must(G.Sum(b.Mul(y, b.Input("w", w, testB, testT, testD))))
		for _, a := range b.Aux() {
			loss = b.Add(loss, a)
		}
	})
	if err != nil {
		t.Fatalf("build: %+v", err)
	}
	return b, xn, loss
}

func run(t *testing.T, g *G.ExprGraph) {
	t.Helper()
	vm := G.NewTapeMachine(g)
	defer vm.Close()
	if err := vm.RunAll(); err != nil {
		t.Fatalf("run: %+v", err)
	}
}

func randVec(r *rand.Rand, n int) []float64 {
	v := make([]float64, n)
	for i := range v {
		v[i] = r.NormFloat64()
	}
	return v
}

// TestLayerGradFD checks the symbolic gradient of every parameter of every
// layer, and of its input, against central differences in float64 on a
// random sample of up to 12 coordinates per tensor.
func TestLayerGradFD(t *testing.T) {
	for name, l := range testLayers() {
		t.Run(name, func(t *testing.T) {
			if err := l.Params().Initialize(tensor.Float64, 7); err != nil {
				t.Fatal(err)
			}
			r := rand.New(rand.NewSource(3))
			// Bigger weights than N(0, 0.02) so every path carries signal.
			for _, p := range l.Params() {
				d := p.Data().([]float64)
				for i := range d {
					d[i] += 0.3 * r.NormFloat64()
				}
			}
			x, w := randVec(r, testB*testT*testD), randVec(r, testB*testT*testD)
			b, xn, loss := objective(t, l, x, w)
			params, nodes := b.ParamNodes()
			grads, err := G.Grad(loss, append(nodes, xn)...)
			if err != nil {
				t.Fatalf("grad: %+v", err)
			}
			run(t, b.G)
			f := func() float64 {
				_, _, l2 := objective(t, l, x, w)
				run(t, l2.Graph())
				return l2.Value().Data().(float64)
			}
			check := func(what string, data []float64, grad *G.Node) {
				g := grad.Value().Data().([]float64)
				for _, i := range r.Perm(len(data))[:min(12, len(data))] {
					const h = 1e-5
					old := data[i]
					data[i] = old + h
					fp := f()
					data[i] = old - h
					fm := f()
					data[i] = old
					want := (fp - fm) / (2 * h)
					if math.Abs(g[i]-want) > 1e-6+1e-4*math.Abs(want) {
						t.Errorf("%s[%d]: symbolic %.8g, finite differences %.8g", what, i, g[i], want)
					}
				}
			}
			for i, p := range params {
				check(p.Name, p.Data().([]float64), grads[i])
			}
			check("x", x, grads[len(grads)-1])
		})
	}
}

// TestLayersRejectBadInput: a wrong input width is an error naming the
// layer, not a panic.
func TestLayersRejectBadInput(t *testing.T) {
	for name, l := range testLayers() {
		if err := l.Params().Initialize(tensor.Float32, 1); err != nil {
			t.Fatal(err)
		}
		b := layers.NewBuilder(tensor.Float32)
		err := b.Run(name, func() {
			l.Forward(b, b.Input("x", make([]float64, 2*3*5), 2, 3, 5), nil)
		})
		if err == nil {
			t.Errorf("%s: input [2,3,5] for d_model %d built without error", name, testD)
		}
	}
}
