package ops

import (
	"fmt"
	"math/rand"
	"testing"
)

// A forward that keeps no probabilities takes wide row blocks (rectangle
// and diagonal parts); one that keeps them for the backward takes blocks of
// attnBlock queries. Their outputs agree to rounding for every mask kind,
// grouped kv heads, more keys than queries, and query counts that leave a
// last block of one part, of more than one part and of a part and a row.
func TestAttentionWideBlocksMatch(t *testing.T) {
	defer func(on bool) { attnTransposeHeads = on }(attnTransposeHeads)
	attnTransposeHeads = false // wide blocks are for products by k itself
	for i, c := range []attnCase{
		{2, attnWideBlock, attnWideBlock, 2, 2, 8, 8, MaskNone},
		{1, 2*attnWideBlock + 5, 2*attnWideBlock + 5, 2, 1, 3, 2, MaskPaper},
		{2, attnWideBlock + attnBlock + 1, attnWideBlock + attnBlock + 9, 2, 2, 4, 3, MaskDoge},
		{1, 3*attnWideBlock - 7, 3*attnWideBlock + 20, 4, 2, 5, 7, MaskNone},
	} {
		newK := c.kernel
		name := fmt.Sprintf("%+v", c)
		if got := newK(false).forwardRows(false, false); got != attnWideBlock {
			t.Fatalf("%s: a forward that keeps nothing takes blocks of %d queries, want %d", name, got, attnWideBlock)
		}
		if got := newK(true).forwardRows(true, false); got != attnBlock {
			t.Fatalf("%s: a forward that keeps P takes blocks of %d queries, want %d", name, got, attnBlock)
		}
		r := rand.New(rand.NewSource(int64(60 + i)))
		var in64 []any
		var in32 []any
		for _, s := range newK(false).inShapes() {
			x := randData(r, s.TotalSize(), uniformIn(0.2, 1.5))
			in64 = append(in64, x)
			in32 = append(in32, narrowTo32(x))
		}
		forward := func(keep bool, in []any, y any) {
			if err := newK(keep).forward(in, y); err != nil {
				t.Fatal(err)
			}
		}
		n := newK(false).outShape().TotalSize()
		wide, blocks := make([]float64, n), make([]float64, n)
		forward(false, in64, wide)
		forward(true, in64, blocks)
		assertClose(t, name+" float64 output", wide, blocks, 1e-12, 1e-14)
		wide32, blocks32 := make([]float32, n), make([]float32, n)
		forward(false, in32, wide32)
		forward(true, in32, blocks32)
		assertClose(t, name+" float32 output", widen(wide32), widen(blocks32), 1e-5, 1e-6)
		// and both against the float64 output, so that the float32 wide path
		// cannot agree with a wrong float32 block path
		assertClose(t, name+" float32 wide against float64", widen(wide32), blocks, 1e-4, 1e-5)
	}
}

// narrowTo32 is x in float32.
func narrowTo32(x []float64) []float32 {
	y := make([]float32, len(x))
	for i, v := range x {
		y[i] = float32(v)
	}
	return y
}
