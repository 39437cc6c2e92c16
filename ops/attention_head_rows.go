package ops

// A head's values and keys copied once, for the 64-wide kernel.
//
// y = M·v in the forward and dq += dS·k/√d in the backward multiply a row
// block of probabilities (or of dS) by a head's first keys: v's or k's rows
// of one kv head, 64 floats each, a leading dimension of hk·d apart. The
// 64-wide kernel reads such an operand from a panel 64 floats wide, and
// copies it into one on every call of 64 rows or more (WM_W64_PACK_ROWS in
// gemm_width64_openblas.go). Every row block of a head copied the head's
// keys up to its own last key again: over 1,024 queries in blocks of 128,
// 4,608 rows of 256 bytes for a head of 1,024 keys, 4.5 times the head.
// Copying the head once into rows 64 floats apart, before its row blocks,
// leaves the kernel nothing to pack: in an (AM)4 d_model 256 training
// step's profile the packing of these two products took about 1.1% of the
// samples. The kernel reads the same values in the same order from either
// place, so y, dq and everything after them keep their bits.

// attnCopyHeadRows turns the copies off when false, for the test that holds
// the two forms to the same bits.
var attnCopyHeadRows = true

// headRowsCopied says whether kernel k's products by a head's rows of
// width d (k.dv for v, k.d for k) read a copy of them (headRows): float32
// heads of 64 on the 64-wide kernel, when the rows are not already 64
// floats apart (a single kv head) and a row block has the 64 rows for
// which the kernel would pack them (rowBlock at least attnBlock).
func headRowsCopied[T floats](k attnKernel, d int) bool {
	return attnCopyHeadRows && width64Heads[T](d) && k.hk > 1 && k.rowBlock() >= attnBlock
}

// headRows copies the first t rows of one head of x, d floats each at a
// leading dimension ld (x starts at the head's first value), into a
// scratch [t, d] with rows d floats apart; the caller releases it.
func headRows[T floats](x []T, ld, t, d int) []T {
	dst := scratchUninit[T](t * d) // every row written below
	for j := 0; j < t; j++ {
		copy(dst[j*d:(j+1)*d], x[j*ld:j*ld+d])
	}
	return dst
}
