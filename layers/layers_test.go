package layers_test

import (
	"strings"
	"testing"

	"gorgonia.org/tensor"

	"github.com/wonderful-matrices/wonderful-matrices-go/layers"
	"github.com/wonderful-matrices/wonderful-matrices-go/layers/layertest"
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

// TestLayerGradFD checks the symbolic gradient of every parameter of every
// layer, and of its input, against central differences in float64 on a
// random sample of up to 12 coordinates per tensor (layertest, which a
// package registering its own sublayer uses too).
func TestLayerGradFD(t *testing.T) {
	for name, l := range testLayers() {
		t.Run(name, func(t *testing.T) {
			bad, err := layertest.CheckGradients(l, layertest.Settings{Batch: testB, Time: testT, DModel: testD})
			if err != nil {
				t.Fatalf("%+v", err)
			}
			for _, m := range bad {
				t.Error(m)
			}
		})
	}
}

// TestLayersCloseTheirBlocks: a layer that closes its own pre-norm block
// (layers.Closer; the MLP does) gives the block's output and every
// gradient bit for bit as the block closed by an add (layertest).
func TestLayersCloseTheirBlocks(t *testing.T) {
	closers := 0
	for name, l := range testLayers() {
		if _, ok := l.(layers.Closer); ok {
			closers++
		}
		if err := layertest.CheckClosing(l, layertest.Settings{Batch: testB, Time: testT, DModel: testD}); err != nil {
			t.Errorf("%s: %+v", name, err)
		}
	}
	if closers == 0 {
		t.Error("no layer implements layers.Closer: the check checked nothing")
	}
}

// TestMoESEIClosesInItsSharedExperts: MoE-SEI's block output is its
// shared experts' SwiGLU with the routed output as an addend wherever the
// MLP's block closes in its SwiGLU (this build's BLAS blocks the products),
// not an add after it.
func TestMoESEIClosesInItsSharedExperts(t *testing.T) {
	moe := layers.MoEConfig{Experts: 4, TopK: 2, DFF: 6, Shared: 1}.Resolved(testD)
	closer := func(l layers.Sublayer) string {
		if err := l.Params().Initialize(tensor.Float32, 1); err != nil {
			t.Fatal(err)
		}
		b := layers.NewBuilder(tensor.Float32)
		var op string
		err := b.Run(l.Kind(), func() {
			x := b.Input("x", make([]float64, testB*testT*testD), testB, testT, testD)
			g := b.Input("norm", make([]float64, testD), testD)
			h, res, err := ops.PreNorm(x, g, ops.DefaultRMSNormEps)
			op = l.(layers.Closer).ForwardClosing(b, b.Must(h, err), res, nil).Op().String()
		})
		if err != nil {
			t.Fatalf("%s: %+v", l.Kind(), err)
		}
		return op
	}
	mlp, sei := closer(layers.NewMLP("m", 6, testShape)), closer(layers.NewMoESEI("h", moe, testShape))
	if strings.HasPrefix(mlp, "swiglu{") && !(strings.HasPrefix(sei, "swiglu{") && strings.Contains(sei, "plus=true")) {
		t.Errorf("the MLP's block closes in %s, MoE-SEI's in %s: want its shared experts' SwiGLU with plus=true", mlp, sei)
	}
	t.Logf("MLP block closed by %s, MoE-SEI's by %s", mlp, sei)
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
