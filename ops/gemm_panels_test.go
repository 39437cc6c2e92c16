package ops

import (
	"fmt"
	"math"
	"math/rand"
	"strings"
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

// On the 64-wide kernel, with b in panels, a row of c is the same bits
// whatever block of rows it is computed in: the product of 601 rows in one
// call, and the same rows in blocks of 1, 5, 64, 100 and 256, agree to the
// bit. So a tall product's blocks can go to whichever worker is free
// (gemmTall, parallelBlocksWork) without its values depending on the
// threads.
func TestRightOperandRowsIndependentOfBlocks(t *testing.T) {
	if !width64On() {
		t.Skip("the 64-wide kernel is off in this build or on this CPU")
	}
	r := rand.New(rand.NewSource(8))
	const m = 601
	for _, z := range []struct{ k, n int }{{256, 256}, {256, 130}, {256, 688}} {
		lda, ldb, ldc := z.k+1, z.n+3, z.n+2
		a, b := normalFloat32s(r, m*lda), normalFloat32s(r, z.k*ldb)
		op := newRightOperand(false, b, ldb, z.k, z.n, m)
		if op.panels == nil {
			t.Fatalf("k=%d n=%d: no panels for %d rows", z.k, z.n, m)
		}
		for _, beta := range []float32{0, 1} {
			c0 := normalFloat32s(r, m*ldc)
			whole := append([]float32(nil), c0...)
			op.mul(m, a, lda, beta, whole, ldc)
			for _, blk := range []int{1, 5, 64, 100, 256} {
				got := append([]float32(nil), c0...)
				for lo := 0; lo < m; lo += blk {
					op.mul(min(blk, m-lo), a[lo*lda:], lda, beta, got[lo*ldc:], ldc)
				}
				for i := range got {
					if math.Float32bits(got[i]) != math.Float32bits(whole[i]) {
						t.Fatalf("k=%d n=%d beta=%v blocks of %d: c[%d, %d] = %v, in one call %v",
							z.k, z.n, beta, blk, i/ldc, i%ldc, got[i], whole[i])
					}
				}
			}
		}
		op.release()
	}
}

// mulRows, which picks a's rows by index, gives the bits of mul on a
// gathered copy of those rows: from panels (the 64-wide kernel, reading
// the rows in place) and with b in place (which gathers), for picks in
// any order, repeated, of 1 to 300 rows (remainders of the kernel's six),
// beta 0 (c's NaNs never read) and 1; the product is counted and
// recorded as one over contiguous rows. A row outside a panics, naming it.
// gemmWidth64Rows alone gives gemmWidth64's bits on gathered rows, on the
// kernel and where it gathers (float64).
func TestRightOperandMulRowsMatchesGathered(t *testing.T) {
	r := rand.New(rand.NewSource(11))
	for _, z := range []struct{ k, n int }{{256, 688}, {256, 64}, {128, 100}} {
		b := normalFloat32s(r, z.k*z.n)
		for _, panelRows := range []int{300, 1} {
			op := newRightOperand(false, b, z.n, z.k, z.n, panelRows)
			if want := panelRows == 300 && width64On() && tallRowBlock(z.n, z.k) == 0; op.readsRowsInPlace() != want {
				t.Fatalf("k=%d n=%d for %d rows: reads rows in place %v, want %v", z.k, z.n, panelRows, op.readsRowsInPlace(), want)
			}
			for _, m := range []int{1, 5, 7, 64, 300} {
				for _, beta := range []float32{0, 1} {
					name := fmt.Sprintf("k=%d n=%d panels=%v m=%d beta=%v", z.k, z.n, op.readsRowsInPlace(), m, beta)
					const xRows = 400
					lda, ldc := z.k+3, z.n+5
					x := normalFloat32s(r, xRows*lda)
					rows := make([]int, m)
					for i := range rows {
						rows[i] = r.Intn(xRows)
					}
					if m > 1 {
						rows[m-1] = rows[0] // a token may be picked twice
					}
					g := make([]float32, m*z.k)
					for i, row := range rows {
						copy(g[i*z.k:(i+1)*z.k], x[row*lda:row*lda+z.k])
					}
					c0 := normalFloat32s(r, m*ldc)
					if beta == 0 {
						for i := range c0 {
							c0[i] = float32(math.NaN())
						}
					}
					got, want := append([]float32(nil), c0...), append([]float32(nil), c0...)
					before := GemmFLOPs()
					op.mulRows(rows, x, lda, beta, got, ldc)
					if d := GemmFLOPs() - before; d != 2*int64(m*z.n*z.k) {
						t.Errorf("%s: counted %d FLOPs, want %d", name, d, 2*m*z.n*z.k)
					}
					op.mul(m, g, z.k, beta, want, ldc)
					for i := range want {
						if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
							t.Fatalf("%s: c[%d] = %v, on the gathered rows %v", name, i, got[i], want[i])
						}
					}
				}
			}
			if op.readsRowsInPlace() {
				func() {
					defer func() {
						if p := recover(); p == nil || !strings.Contains(fmt.Sprint(p), "a's row 400") {
							t.Errorf("k=%d n=%d: a row past a: panic %v, want one naming it", z.k, z.n, p)
						}
					}()
					op.mulRows([]int{0, 400}, normalFloat32s(r, 400*z.k), z.k, 0, make([]float32, 2*z.n), z.n)
				}()
			}
			op.release()
		}
	}
	// gemmWidth64Rows itself, on the kernel or (kernel off, or float64) by
	// gathering: the bits of gemmWidth64 on the gathered rows.
	for _, n := range []int{64, 17} {
		const k, lda, m = 40, 45, 13
		x, b := normalFloat32s(r, 50*lda), normalFloat32s(r, k*n)
		rows := r.Perm(50)[:m]
		width64RowsMatchGathered(t, "float32", x, b, rows, n, k, lda)
		width64RowsMatchGathered(t, "float64", asFloat64s(x), asFloat64s(b), rows, n, k, lda)
	}
}

// width64RowsMatchGathered fails unless gemmWidth64Rows over x's rows
// gives, bit for bit, gemmWidth64's product of a gathered copy of them by
// b [k, n].
func width64RowsMatchGathered[T floats](t *testing.T, name string, x, b []T, rows []int, n, k, lda int) {
	t.Helper()
	m := len(rows)
	g := make([]T, m*k)
	gatherRowsOf(g, x, rows, lda, k)
	got, want := make([]T, m*n), make([]T, m*n)
	gemmWidth64Rows(rows, n, k, 1, x, lda, b, n, 0, got, n)
	gemmWidth64(false, m, n, k, 1, g, k, b, n, 0, want, n)
	for i := range want {
		if math.Float64bits(float64(got[i])) != math.Float64bits(float64(want[i])) {
			t.Fatalf("gemmWidth64Rows %s n=%d: c[%d] = %v, on the gathered rows %v", name, n, i, got[i], want[i])
		}
	}
}
