package ops

// Attention's products whose output is one head wide. At d_model 256 a head
// is 64 wide, and four of attention's six products per row block have a
// 64-wide output: y = M·v and dq = dS·k/√d (a untransposed), dv += Mᵀ·dy
// and dk += dSᵀ·q/√d (a transposed), each over a few hundred to a thousand
// keys or queries. OpenBLAS runs them at 175–210 GFLOP/s on one core of the
// Zen 5, where a linear layer's products reach 250: packing its operands
// costs more against 64 columns than against 256. A kernel written for that
// width needs no packing of a: six rows of c in 24 AVX-512 registers, b's
// row loaded once per step of the sum and six values of a broadcast against
// it (from 64 rows of c, b's tile is first copied into a panel 64 wide:
// gemm_width64_openblas.go).
// Replayed alone it ran the same products at 234–255 GFLOP/s
// (docs/performance.md, "A kernel for 64-wide products").

// width64 is the output width the kernel is written for.
const width64 = 64

// gemmHeadN computes c = alpha · op(a) · b + beta · c for c [m, n] and b
// untransposed [k, n], op(a) = a or aᵀ: one of attention's products whose
// output is one head wide. A float32 product 64 wide runs on the 64-wide
// kernel where the build and the CPU have it (the openblas build, AVX-512);
// any other, on gemm. (Narrower heads, 16 at d_model 64, stay on
// OpenBLAS's small kernels: on the masked kernel, one vector wide, (AM)4
// d_model 64 trained 6% slower.)
func gemmHeadN[T floats](transA bool, m, n, k int, alpha T, a []T, lda int, b []T, ldb int, beta T, c []T, ldc int) {
	if n != width64 {
		gemm(transA, false, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
		return
	}
	gemmWidth64(transA, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
}

// gemmWidth64 computes c = alpha · op(a) · b + beta · c for c [m, n], n
// from 1 to 64, and b untransposed [k, n]: a float32 product on the 64-wide
// kernel where the build and the CPU have it, under 64 columns with its
// last lanes masked; any other, on gemm. Either way it counts in GemmFLOPs
// and in a recording, whose shape says which ran (GemmShape.Width64), so
// that a replay runs the same code.
func gemmWidth64[T floats](transA bool, m, n, k int, alpha T, a []T, lda int, b []T, ldb int, beta T, c []T, ldc int) {
	a32, ok := any(a).([]float32)
	if n < 1 || n > width64 || !ok || !width64On() {
		gemm(transA, false, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
		return
	}
	if m == 0 {
		return
	}
	b32, c32 := any(b).([]float32), any(c).([]float32)
	s := GemmShape{TransA: transA, M: m, N: n, K: k, LDA: lda, LDB: ldb, LDC: ldc, Accumulate: beta != 0, Width64: true}
	gemmFLOPs.Add(s.FLOPs())
	if r := gemmRecording.Load(); r != nil {
		call := r.enterBLAS(s, 1)
		gemmWidth64Kernel32(transA, m, n, k, float32(alpha), a32, lda, b32, ldb, float32(beta), c32, ldc)
		r.leaveBLAS(call)
		return
	}
	gemmWidth64Kernel32(transA, m, n, k, float32(alpha), a32, lda, b32, ldb, float32(beta), c32, ldc)
}

// gemmWidth64Rows is gemmWidth64 with a untransposed and its rows picked
// by rows: c[i, :] = alpha · a[rows[i]·lda : +k] · b + beta · c[i, :], c
// [len(rows), n]. On the 64-wide kernel it reads the rows where they lie,
// with the bits a gathered copy would give (the same values, added in the
// same order); elsewhere it gathers them into a scratch and runs
// gemmWidth64 on it. It counts and records as gemmWidth64 does (a replay
// runs the shape over contiguous rows).
func gemmWidth64Rows[T floats](rows []int, n, k int, alpha T, a []T, lda int, b []T, ldb int, beta T, c []T, ldc int) {
	m := len(rows)
	a32, ok := any(a).([]float32)
	if n < 1 || n > width64 || !ok || !width64On() {
		g := scratchUninit[T](m * k) // every row written whole below
		defer releaseScratch(g)
		gatherRowsOf(g, a, rows, lda, k)
		gemmWidth64(false, m, n, k, alpha, g, k, b, ldb, beta, c, ldc)
		return
	}
	if m == 0 {
		return
	}
	b32, c32 := any(b).([]float32), any(c).([]float32)
	s := GemmShape{M: m, N: n, K: k, LDA: lda, LDB: ldb, LDC: ldc, Accumulate: beta != 0, Width64: true}
	gemmFLOPs.Add(s.FLOPs())
	if r := gemmRecording.Load(); r != nil {
		call := r.enterBLAS(s, 1)
		gemmWidth64Kernel32Rows(rows, n, k, float32(alpha), a32, lda, b32, ldb, float32(beta), c32, ldc)
		r.leaveBLAS(call)
		return
	}
	gemmWidth64Kernel32Rows(rows, n, k, float32(alpha), a32, lda, b32, ldb, float32(beta), c32, ldc)
}

// shapeProduct runs one product of shape s without counting it: on the
// 64-wide kernel when s was recorded from it and the kernel is on, else
// through the BLAS. The replays time products through it.
func shapeProduct[T floats](s GemmShape, alpha T, a, b []T, beta T, c []T) {
	if s.Width64 && width64On() {
		if a32, ok := any(a).([]float32); ok {
			gemmWidth64Kernel32(s.TransA, s.M, s.N, s.K, float32(alpha), a32, s.LDA, any(b).([]float32), s.LDB, float32(beta), any(c).([]float32), s.LDC)
			return
		}
	}
	blasGemm(s.TransA, s.TransB, s.M, s.N, s.K, alpha, a, s.LDA, b, s.LDB, beta, c, s.LDC)
}

// gemmTiles64 computes c = alpha · a · b + beta · c, c [m, n] (ldc) and b
// [k, n] (ldb): where the 64-wide kernel takes the tiles (float32, the
// kernel on), as products 64 columns wide on gemmWidth64 and the last n
// mod 64 columns as one more, masked; else as one gemm, not tiles of it.
// It runs attention's scores and dM = dy·vᵀ over a [d, t] copy of a
// head's keys or values (gemmHeadT), which OpenBLAS ran at 175–200 GFLOP/s
// and the 64-wide kernel, 64 keys at a time, at 219–256; the packed
// products of gemmPackedN; and gemmTall's blocks (tallTiles64).
func gemmTiles64[T floats](m, n, k int, alpha T, a []T, lda int, b []T, ldb int, beta T, c []T, ldc int) {
	j := 0
	if _, f32 := any(a).([]float32); f32 && width64On() {
		for ; j < n; j += width64 {
			gemmWidth64(false, m, min(width64, n-j), k, alpha, a, lda, b[j:], ldb, beta, c[j:], ldc)
		}
	}
	if j < n {
		gemm(false, false, m, n-j, k, alpha, a, lda, b[j:], ldb, beta, c[j:], ldc)
	}
}

// gemmTilesApart64 computes c = alpha · a · b, as gemmTiles64 does with
// beta 0, for a b whose 64-column tiles lie apart: the tile of columns
// [j, j+64) at b[(j/64)·tile:], leading dimension ldb (attention's tiled
// copies of a head's keys or values, tiledHeads). The kernel must be on
// (float32, width64On): there is no single matrix for gemm to take instead.
func gemmTilesApart64[T floats](m, n, k int, alpha T, a []T, lda int, b []T, ldb, tile int, c []T, ldc int) {
	if _, f32 := any(a).([]float32); !f32 || !width64On() {
		panic("ops: tiles apart need the 64-wide kernel")
	}
	for j := 0; j < n; j += width64 {
		gemmWidth64(false, m, min(width64, n-j), k, alpha, a, lda, b[j/width64*tile:], ldb, 0, c[j:], ldc)
	}
}

// gemmPackedN computes c = a · b + beta · c for a [m, k] and b [k, n],
// untransposed: a block's product of an MLP, such as SwiGLU's X·W1, A·W2
// and dH·W1ᵀ. Where OpenBLAS would run it on its packed kernels
// (tallRowBlock 0: d_model 256) and n is at least 64, it runs on the
// 64-wide kernel 64 columns at a time (gemmTiles64, the last tile masked),
// which packs nothing but b's 64-column tile: replayed with the weights
// out of L2 (before the tile was copied into a panel), a 256-row
// block onto 256 columns over 688 and 344 ran at 221 and 234 GFLOP/s,
// OpenBLAS at 203 and 203. Elsewhere (the small kernels' blocks at d_model
// 64, float64, no AVX-512), gemm.
func gemmPackedN[T floats](m, n, k int, a []T, lda int, b []T, ldb int, beta T, c []T, ldc int) {
	if n >= width64 && tallRowBlock(n, k) == 0 {
		gemmTiles64(m, n, k, 1, a, lda, b, ldb, beta, c, ldc)
		return
	}
	gemm(false, false, m, n, k, 1, a, lda, b, ldb, beta, c, ldc)
}
