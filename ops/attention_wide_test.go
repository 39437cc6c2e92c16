package ops

import (
	"fmt"
	"math/rand"
	"testing"

	G "gorgonia.org/gorgonia"
)

// Wide row blocks (rectangle and diagonal parts) give the outputs and
// gradients of 64-query blocks to rounding, in float64 and float32, for
// every mask kind, grouped kv heads, more keys than queries, query counts
// that leave a last block of one part, of more than one part and of a part
// and a row, heads of 64 (the 64-wide kernel's), and a backward that takes
// the forward's P as well as one that computes it again.
func TestAttentionWideBlocksMatch(t *testing.T) {
	defer func(on, wide bool) { attnTransposeHeads, attnWideRows = on, wide }(attnTransposeHeads, attnWideRows)
	attnTransposeHeads = false // wide blocks are for products by k itself
	for i, c := range []attnCase{
		{2, attnWideBlock, attnWideBlock, 2, 2, 8, 8, MaskNone},
		{1, 2*attnWideBlock + 5, 2*attnWideBlock + 5, 2, 1, 3, 2, MaskPaper},
		{2, attnWideBlock + attnBlock + 1, attnWideBlock + attnBlock + 9, 2, 2, 4, 3, MaskDoge},
		{1, 3*attnWideBlock - 7, 3*attnWideBlock + 20, 4, 2, 5, 7, MaskNone},
		// heads of 64: float32 takes the 64-wide kernel (gemmHeadN)
		{1, attnWideBlock + attnBlock + 3, attnWideBlock + attnBlock + 3, 2, 1, width64, width64, MaskPaper},
	} {
		for _, save := range []bool{false, true} {
			name := fmt.Sprintf("%+v save=%v", c, save)
			for wide, want := range map[bool]int{true: attnWideBlock, false: attnBlock} {
				attnWideRows = wide
				if got := c.kernel(save).rowBlock(); got != want {
					t.Fatalf("%s: wide=%v takes blocks of %d queries, want %d", name, wide, got, want)
				}
			}
			r := rand.New(rand.NewSource(int64(60 + i)))
			var in64, in32 []any
			for _, s := range c.kernel(save).inShapes() {
				x := randData(r, s.TotalSize(), uniformIn(0.2, 1.5))
				in64 = append(in64, x)
				in32 = append(in32, narrowTo32(x))
			}
			dOut := randData(r, c.kernel(save).outShape().TotalSize(), nil)
			run64 := func(wide bool) ([]float64, [][]float64) {
				attnWideRows = wide
				return outputAndGrads(t, c.kernel(save), in64, dOut)
			}
			run32 := func(wide bool) ([]float64, [][]float64) {
				attnWideRows = wide
				return outputAndGrads(t, c.kernel(save), in32, narrowTo32(dOut))
			}
			wantY, want := run64(false)
			gotY, got := run64(true)
			assertClose(t, name+" float64 output", gotY, wantY, 1e-12, 1e-14)
			for j := range want {
				assertClose(t, fmt.Sprintf("%s float64 gradient %d", name, j), got[j], want[j], 1e-12, 1e-14)
			}
			// float32, wide against 64-query blocks and against float64, so
			// that the float32 wide path cannot agree with a wrong float32
			// block path
			want32Y, want32 := run32(false)
			got32Y, got32 := run32(true)
			assertClose(t, name+" float32 output", got32Y, want32Y, 1e-5, 1e-6)
			assertClose(t, name+" float32 wide output against float64", got32Y, wantY, 1e-4, 1e-5)
			for j := range want {
				assertClose(t, fmt.Sprintf("%s float32 gradient %d", name, j), got32[j], want32[j], 1e-4, 1e-5)
				assertClose(t, fmt.Sprintf("%s float32 wide gradient %d against float64", name, j), got32[j], want[j], 1e-3, 1e-4)
			}
		}
	}
}

// outputAndGrads runs k's forward and backward on inputs in (of element
// type T) and output gradient dOut, and returns the output and the inputs'
// gradients, widened to float64.
func outputAndGrads[T floats](t *testing.T, k kernel, in []any, dOut []T) ([]float64, [][]float64) {
	t.Helper()
	y := make([]T, k.outShape().TotalSize())
	if err := k.forward(in, y); err != nil {
		t.Fatal(err)
	}
	dIn := make([]any, len(in))
	for j := range in {
		dIn[j] = make([]T, len(in[j].([]T)))
	}
	if err := k.backward(in, nil, dOut, dIn); err != nil {
		t.Fatal(err)
	}
	gs := make([][]float64, len(in))
	for j := range dIn {
		gs[j] = widen(dIn[j].([]T))
	}
	return widen(y), gs
}

// narrowTo32 is x in float32.
func narrowTo32(x []float64) []float32 {
	y := make([]float32, len(x))
	for i, v := range x {
		y[i] = float32(v)
	}
	return y
}

// The gradients of wide row blocks against finite differences, in float64:
// two wide blocks and a short one, with the paper mask (its gradient sums
// dM ∘ P over whole rows, past each part's keys), and from a cache with the
// doge bias.
func TestAttentionWideBlocksGradFD(t *testing.T) {
	defer func(on bool) { attnTransposeHeads = on }(attnTransposeHeads)
	attnTransposeHeads = false
	for _, c := range []struct {
		name      string
		tq, tk, h int
		mask      MaskKind
	}{
		{"paper mask", 2*attnWideBlock + 5, 2*attnWideBlock + 5, 1, MaskPaper},
		{"doge bias from cache", attnWideBlock + 3, attnWideBlock + 9, 2, MaskDoge},
	} {
		t.Run(c.name, func(t *testing.T) {
			in := []fdInput{
				{name: "q", shape: []int{1, c.tq, c.h, 2}},
				{name: "k", shape: []int{1, c.tk, 1, 2}},
				{name: "v", shape: []int{1, c.tk, 1, 2}},
			}
			if c.mask == MaskPaper {
				in = append(in, fdInput{name: "l", shape: []int{c.h, c.tk + 3}, gen: uniformIn(0.2, 1.5)})
			} else {
				in = append(in, fdInput{name: "bias", shape: []int{1, c.tk, c.h}, gen: uniformIn(0, 2)})
			}
			if k := (attnCase{1, c.tq, c.tk, c.h, 1, 2, 2, c.mask}).kernel(true); k.rowBlock() != attnWideBlock {
				t.Fatalf("the case takes blocks of %d queries, want %d", k.rowBlock(), attnWideBlock)
			}
			checkGradFD(t, 31, in, func(n []*G.Node) (*G.Node, error) {
				return Attention(n[0], n[1], n[2], n[3], AttentionConfig{Mask: c.mask})
			})
		})
	}
}
