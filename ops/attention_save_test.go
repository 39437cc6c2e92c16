package ops

import (
	"fmt"
	"math/rand"
	"testing"

	G "gorgonia.org/gorgonia"
)

// The backward that takes the probabilities its forward saved gives the same
// gradients, to the bit, as one that computes them again, for every mask
// kind, several row blocks and queries decoding from a cache; a save for
// other inputs is not used, and a save is used once.
func TestAttentionBackwardFromSave(t *testing.T) {
	for i, c := range []struct {
		b, tq, tk, h, hk, d, dv int
		mask                    MaskKind
	}{
		{2, 5, 5, 2, 2, 4, 3, MaskNone},
		{1, 2*attnBlock + 5, 2*attnBlock + 5, 2, 1, 3, 2, MaskPaper},
		{2, attnBlock + 3, attnBlock + 9, 2, 2, 2, 3, MaskDoge},
		{1, 3, 7, 4, 2, 2, 2, MaskPaper},
	} {
		name := fmt.Sprintf("%+v", c)
		newK := func(saved *attnSaved) attnKernel {
			k := attnKernel{b: c.b, tq: c.tq, tk: c.tk, h: c.h, hk: c.hk, d: c.d, dv: c.dv, mask: c.mask, saved: saved}
			if c.mask == MaskPaper {
				k.maxPos = c.tk + 2
			}
			return k
		}
		draw := func(seed int64) []any {
			r := rand.New(rand.NewSource(seed))
			var in []any
			for _, s := range newK(nil).inShapes() {
				in = append(in, randData(r, s.TotalSize(), uniformIn(0.2, 1.5)))
			}
			return in
		}
		in, other := draw(int64(10+i)), draw(int64(20+i))
		dOut := randData(rand.New(rand.NewSource(int64(i))), newK(nil).outShape().TotalSize(), nil)
		forward := func(k attnKernel, in []any) {
			if err := k.forward(in, make([]float64, k.outShape().TotalSize())); err != nil {
				t.Fatal(err)
			}
		}
		grads := func(k attnKernel, in []any) [][]float64 { return kernelGrads(t, k, in, dOut) }
		want := grads(newK(nil), in)
		k := newK(&attnSaved{})
		k.gradientWanted()
		forward(k, in)
		if !k.saved.fresh || k.saved.probs == nil {
			t.Fatalf("%s: a forward with the gradient wanted saved nothing", name)
		}
		assertSame(t, name+" from the save", grads(k, in), want)
		if k.saved.fresh {
			t.Errorf("%s: the save outlived the backward that used it", name)
		}
		stale := newK(&attnSaved{})
		stale.gradientWanted()
		forward(stale, other)
		assertSame(t, name+" with a save for other inputs", grads(stale, in), want)
		evalOnly := newK(&attnSaved{})
		forward(evalOnly, in)
		if evalOnly.saved.probs != nil {
			t.Errorf("%s: a forward without the gradient kept its probabilities", name)
		}
	}
}

// Only graphs that take the attention's gradient keep its probabilities,
// and ReleaseBuffers drops them.
func TestAttentionSavesOnlyForGradient(t *testing.T) {
	for _, withGrad := range []bool{false, true} {
		g := G.NewGraph()
		r := rand.New(rand.NewSource(3))
		q := tensorNode(g, "q", randData(r, 1*6*2*4, nil), 1, 6, 2, 4)
		k := tensorNode(g, "k", randData(r, 1*6*2*4, nil), 1, 6, 2, 4)
		v := tensorNode(g, "v", randData(r, 1*6*2*4, nil), 1, 6, 2, 4)
		y, err := Attention(q, k, v, nil, AttentionConfig{})
		if err != nil {
			t.Fatal(err)
		}
		if withGrad {
			loss := G.Must(G.Sum(y))
			if _, err := G.Grad(loss, q, k, v); err != nil {
				t.Fatal(err)
			}
		}
		vm := G.NewTapeMachine(g)
		if err := vm.RunAll(); err != nil {
			t.Fatal(err)
		}
		vm.Close()
		sv := y.Op().(fusedOp).k.(attnKernel).saved
		if kept := sv.probs != nil; kept != withGrad {
			t.Errorf("with the gradient %v: probabilities kept %v", withGrad, kept)
		}
		ReleaseBuffers(g)
		if sv.probs != nil {
			t.Errorf("with the gradient %v: ReleaseBuffers left the probabilities", withGrad)
		}
	}
}

// Above attnSaveLimit the forward saves nothing and the backward computes
// the probabilities again.
func TestAttentionSaveLimit(t *testing.T) {
	const tk = 4096 // one head's causal blocks in float64: about 68 MB
	k := attnKernel{b: 1, tq: tk, tk: tk, h: 1, hk: 1, d: 1, dv: 1, mask: MaskNone, saved: &attnSaved{}}
	if n := k.probsPerHead() * 8; n <= attnSaveLimit {
		t.Fatalf("the case is too small for the limit: %d bytes", n)
	}
	k.gradientWanted()
	in := []any{make([]float64, tk), make([]float64, tk), make([]float64, tk)}
	if err := k.forward(in, make([]float64, tk)); err != nil {
		t.Fatal(err)
	}
	if k.saved.probs != nil || k.saved.fresh {
		t.Error("probabilities above attnSaveLimit were saved")
	}
}
