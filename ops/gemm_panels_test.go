package ops

import (
	"fmt"
	"math"
	"math/rand"
	"testing"
)

// A right operand copied into the 64-wide kernel's panels gives the bits
// gemmPackedN gives with b in place, transposed or not, for widths with
// and without a masked last tile, blocks of rows under and over the
// kernel's own copy (64 rows), and beta 0 (c poisoned with NaN) and 1;
// the panels are made exactly where gemmPackedN takes the kernel for a
// product of 64 rows or more, and float64, fewer rows and the small
// kernels' shapes stay in place.
func TestRightOperandMatchesPackedN(t *testing.T) {
	r := rand.New(rand.NewSource(7))
	for _, z := range []struct{ k, n int }{{256, 256}, {400, 100}, {256, 688}, {600, 64}, {64, 64}} {
		for _, transB := range []bool{false, true} {
			ldb := z.n + 5 // b [k, n], padded
			if transB {
				ldb = z.k + 3 // b [n, k], padded
			}
			rowsB := z.k
			if transB {
				rowsB = z.n
			}
			b := normalFloat32s(r, rowsB*ldb)
			// b as gemmPackedN reads it in place: [k, n] with leading dimension n.
			plain := make([]float32, z.k*z.n)
			for q := range z.k {
				for j := range z.n {
					if transB {
						plain[q*z.n+j] = b[j*ldb+q]
					} else {
						plain[q*z.n+j] = b[q*ldb+j]
					}
				}
			}
			op := newRightOperand(transB, b, ldb, z.k, z.n, 300)
			wantPanels := width64On() && z.n >= width64 && tallRowBlock(z.n, z.k) == 0
			if few := newRightOperand(transB, b, ldb, z.k, z.n, width64PanelRows-1); few.panels != nil {
				t.Fatalf("k=%d n=%d transB=%v: panels for %d rows", z.k, z.n, transB, width64PanelRows-1)
			} else {
				few.release()
			}
			if (op.panels != nil) != wantPanels {
				t.Fatalf("k=%d n=%d transB=%v: panels %v, want %v", z.k, z.n, transB, op.panels != nil, wantPanels)
			}
			for _, m := range []int{1, 63, 64, 300} {
				for _, beta := range []float32{0, 1} {
					name := fmt.Sprintf("k=%d n=%d transB=%v m=%d beta=%v", z.k, z.n, transB, m, beta)
					lda, ldc := z.k+2, z.n+7
					a := normalFloat32s(r, m*lda)
					c0 := normalFloat32s(r, m*ldc)
					if beta == 0 {
						for i := range c0 {
							c0[i] = float32(math.NaN())
						}
					}
					got, want := append([]float32(nil), c0...), append([]float32(nil), c0...)
					op.mul(m, a, lda, beta, got, ldc)
					gemmPackedN(m, z.n, z.k, a, lda, plain, z.n, beta, want, ldc)
					for i := range want {
						if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
							t.Fatalf("%s: c[%d] = %v, in place %v", name, i, got[i], want[i])
						}
					}
				}
			}
			op.release()
		}
	}
	b64 := make([]float64, 256*256)
	if op := newRightOperand(false, b64, 256, 256, 256, 300); op.panels != nil || op.owned != nil {
		t.Fatal("a float64 operand was copied; it should stay in place")
	}
}
