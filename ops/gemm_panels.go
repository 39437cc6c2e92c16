package ops

// A product's right operand copied once into the 64-wide kernel's panels.
// The kernel reads all of b's 64-column tile for every block of six rows
// of c; where the tile's rows lie ldb floats apart (a weight's tile of 64
// of its 256, 344 or 688 columns) it first copies them into a panel 64
// floats wide, for each call (gemm_width64_openblas.go). A layer whose
// rows run as many blocks (SwiGLU's blocks of 256 rows, a tall product's
// blocks, the routed experts' blocks) calls the kernel once per block with
// the same b, so it copied the same tiles once per block: 2.9% of a (SM)4
// d_model 256 training step on an Intel Xeon. rightOperand makes the
// copies once per product, before its blocks, and the kernel then finds
// each tile's rows adjacent and reads them where they are. The values, and
// the order the kernel adds them in, are the same, so are the bits.

// rightOperand is b [k, n] for c = a·b products: in place (b, ldb), or as
// panels, tile t of the 64-column tiles at panels[t·64·k:], its k rows
// w_t floats apart (64, or n mod 64 for the last tile).
type rightOperand[T floats] struct {
	b      []T
	ldb    int
	k, n   int
	panels []T
	owned  []T // a scratch to release: the panels or a transposed copy
}

// width64PanelRows is the fewest rows of a product for which its right
// operand is copied into panels: the kernel's own bound
// (WM_W64_PACK_ROWS), under which a copy is not paid back. A decoding
// step's one row reads the weight where it is.
const width64PanelRows = 64

// newRightOperand is b [k, n] (leading dimension ldb), or with transB b
// [n, k] taken as its transpose, ready for gemmPackedN's products by
// blocks of rows, m rows in all: copied into panels where gemmPackedN
// would run it on the 64-wide kernel (float32, the kernel on, n at least
// 64, a shape OpenBLAS packs) and m is at least width64PanelRows; else in
// place, a transposed b copied once into [k, n] as the small kernels want
// it. The caller releases it.
func newRightOperand[T floats](transB bool, b []T, ldb, k, n, m int) rightOperand[T] {
	r := rightOperand[T]{b: b, ldb: ldb, k: k, n: n}
	if _, f32 := any(b).([]float32); f32 && width64On() && n >= width64 && tallRowBlock(n, k) == 0 && k > 0 && m >= width64PanelRows {
		r.panels = scratchUninit[T](k * n)
		for j := 0; j < n; j += width64 {
			w, p := min(width64, n-j), r.panels[j*k:]
			if transB {
				transposeRows(p, b[j*ldb:], ldb, w, k)
				continue
			}
			for q := range k {
				copy(p[q*w:(q+1)*w], b[q*ldb+j:q*ldb+j+w])
			}
		}
		r.owned = r.panels
		return r
	}
	if transB {
		r.b, r.ldb = transposedScratch(b, ldb, n, k), n
		r.owned = r.b
	}
	return r
}

// release returns the operand's copy, if it made one, to the scratch pool.
func (r rightOperand[T]) release() { releaseScratch(r.owned) }

// readsRowsInPlace says whether mulRows reads a's rows where they lie (the
// operand is in the 64-wide kernel's panels) rather than gathering them.
func (r rightOperand[T]) readsRowsInPlace() bool { return r.panels != nil }

// mulRows computes c = a_rows·b + beta·c, where row i of a_rows is a's row
// rows[i] (k values at rows[i]·lda) and c is [len(rows), n] (ldc): from the
// panels, on the 64-wide kernel, reading those rows where they lie and
// giving the bits mul gives on a gathered copy of them; with b in place,
// by mul on such a copy.
func (r rightOperand[T]) mulRows(rows []int, a []T, lda int, beta T, c []T, ldc int) {
	if r.panels == nil {
		g := scratchUninit[T](len(rows) * r.k) // every row written whole below
		defer releaseScratch(g)
		gatherRowsOf(g, a, rows, lda, r.k)
		r.mul(len(rows), g, r.k, beta, c, ldc)
		return
	}
	for j := 0; j < r.n; j += width64 {
		w := min(width64, r.n-j)
		gemmWidth64Rows(rows, w, r.k, 1, a, lda, r.panels[j*r.k:], w, beta, c[j:], ldc)
	}
}

// mul computes c = a·b + beta·c for a [m, k] (lda) and c [m, n] (ldc) as
// gemmPackedN computes it with b in place: on the 64-wide kernel 64
// columns at a time from the panels, or gemmPackedN itself.
func (r rightOperand[T]) mul(m int, a []T, lda int, beta T, c []T, ldc int) {
	if r.panels == nil {
		gemmPackedN(m, r.n, r.k, a, lda, r.b, r.ldb, beta, c, ldc)
		return
	}
	for j := 0; j < r.n; j += width64 {
		w := min(width64, r.n-j)
		gemmWidth64(false, m, w, r.k, 1, a, lda, r.panels[j*r.k:], w, beta, c[j:], ldc)
	}
}
