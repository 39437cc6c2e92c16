package ops

import (
	"fmt"
	"math"
	"math/rand"
	"testing"
)

// Attention's products by copies of its operands, a head's values and keys
// in rows 64 floats apart (headRows) and the transposed keys and values in
// tiles of 64 keys (batchesTiled), give the bits of the products without
// them, for every mask kind, grouped kv heads, more keys than queries, wide
// and 64-query row blocks, and a backward with and without the forward's
// probabilities; and both agree with float64 (which takes no copy), so
// that a copy taken from the wrong rows cannot agree with itself.
func TestAttentionCopiesSameBits(t *testing.T) {
	if !width64On() {
		t.Skip("the 64-wide kernel is off in this build or on this CPU: nothing is copied for it")
	}
	defer func(rows, tiles, wide bool) {
		attnCopyHeadRows, attnTileHeads, attnWideRows = rows, tiles, wide
	}(attnCopyHeadRows, attnTileHeads, attnWideRows)
	for i, c := range []struct {
		attnCase
		tiled bool // keys and queries whole tiles of 64, heads not on the small kernels
	}{
		{attnCase{1, attnWideBlock + attnBlock + 3, attnWideBlock + attnBlock + 3, 4, 2, width64, width64, MaskNone}, false},
		{attnCase{2, attnWideBlock + 5, attnWideBlock + 5, 2, 2, width64, width64, MaskDoge}, false},
		{attnCase{1, attnWideBlock + attnBlock, attnWideBlock + 2*attnBlock, 2, 2, width64, width64, MaskPaper}, true},
		{attnCase{2, 2 * attnWideBlock, 2 * attnWideBlock, 4, 2, width64, width64, MaskDoge}, true},
		// enough keys for wide row blocks (transposedHeads off), not whole tiles
		{attnCase{1, 2*attnWideBlock + 3, 2*attnWideBlock + 3, 4, 2, width64, width64, MaskNone}, false},
	} {
		for _, wide := range []bool{true, false} {
			for _, save := range []bool{false, true} {
				attnWideRows = wide
				attnCopyHeadRows, attnTileHeads = true, true
				k := c.kernel(save)
				name := fmt.Sprintf("%+v blocks of %d save=%v", c.attnCase, k.rowBlock(), save)
				if !headRowsCopied[float32](k, width64) {
					t.Fatalf("%s: the heads' rows are not copied", name)
				}
				if want := c.tiled; tiledHeads[float32](k, width64) != want {
					t.Fatalf("%s: tiled copies %v, want %v", name, !want, want)
				}
				r := rand.New(rand.NewSource(int64(90 + i)))
				var in64, in32 []any
				for _, s := range k.inShapes() {
					x := randData(r, s.TotalSize(), uniformIn(0.2, 1.5))
					in64 = append(in64, x)
					in32 = append(in32, narrowTo32(x))
				}
				dOut := randData(r, k.outShape().TotalSize(), nil)
				gotY, got := outputAndGrads(t, c.kernel(save), in32, narrowTo32(dOut))
				for _, off := range []string{"rows", "tiles"} {
					attnCopyHeadRows, attnTileHeads = off != "rows", off != "tiles"
					wantY, want := outputAndGrads(t, c.kernel(save), in32, narrowTo32(dOut))
					sameBits(t, name+" output without the "+off, gotY, wantY)
					for j := range want {
						sameBits(t, fmt.Sprintf("%s gradient %d without the %s", name, j, off), got[j], want[j])
					}
				}
				y64, g64 := outputAndGrads(t, c.kernel(save), in64, dOut)
				assertClose(t, name+" float32 output against float64", gotY, y64, 1e-4, 1e-5)
				for j := range g64 {
					assertClose(t, fmt.Sprintf("%s float32 gradient %d against float64", name, j), got[j], g64[j], 1e-3, 1e-4)
				}
			}
		}
	}
}

// sameBits fails unless got and want hold the same values to the bit.
func sameBits(t *testing.T, name string, got, want []float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d values, want %d", name, len(got), len(want))
	}
	for i := range got {
		if math.Float64bits(got[i]) != math.Float64bits(want[i]) {
			t.Fatalf("%s: value %d is %v, want %v", name, i, got[i], want[i])
		}
	}
}
