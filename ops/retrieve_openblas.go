//go:build openblas

package ops

// With the openblas build tag (cgo), CDMoE's product-key search of float32
// similarities (retrieve, Wonderful Matrices listing 8) runs in C, one call
// per worker's tokens. In Go each top-k is an insertion whose branches
// depend on the data: about 0.9 µs per (token, head) at 32 keys a half and
// k = 8, a fifth of a (SE)3 IE d_model 64 training step.
//
// The vector variants search sixteen (AVX-512) or eight (AVX2) rows at
// once, a row to a lane, with no branch on the data: each half's values go
// into k slots in index order; a value goes before the first slot holding a
// smaller one and the slots from there move one on (the last falls off), as
// topK's insertion does, so the slots end as topK's choice (larger first,
// ties by lower index; -0 and +0 compare equal in both). The sums
// that can be picked go through k slots the same way, in retrieve's order.
// A row with a NaN among its similarities (whose order is topK's loop and
// nothing simpler) or a non-finite top value (which needs all k² sums), the
// rows left over from the blocks, and the portable level run retrieve's
// loops written out in C. Every sum is one float32 add, as in Go
// (TestRetrieveRowsMatchGo, every level).
//
// At the vector levels the similarities themselves (keySims) are formed
// here too, sixteen or eight tokens at a time, straight into the columns
// the search reads (wm_retrieve_q): written out for all tokens, they were
// 2 MiB a layer at d_model 64 and seq_len 256 × batch 8, written by 64
// narrow products and read back from beyond the core's caches.
//
// The inner-function value's forward (InnerFuncValue: each token's top-k of
// its scores and the sum of their values) runs here too, in
// wm_inner_func_rows, as it needs the same top-k.

/*
#cgo CFLAGS: -O3
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("fp-contract=off")
#endif
#include <stddef.h>
#include <stdint.h>
#include <math.h>
#include "wm_avx2_switch.h"

// wm_choice is ops.expertChoice: e, ix, iy as Go ints (int64 on the
// 64-bit platforms this file is built for) and s as a float64.
typedef struct {
	int64_t e, ix, iy;
	double s;
} wm_choice;

// The largest k the C search takes.
#define WM_RETRIEVE_KMAX 32

// wm_topk_insert is ops.topK: the k largest of s[0..n) into idx, larger
// first, ties by lower index, by insertion.
static void wm_topk_insert(int *idx, const float *s, int n, int k) {
	int m = 0;
	for (int i = 0; i < n; i++) {
		const float v = s[i];
		if (m == k && !(v > s[idx[k - 1]])) continue;
		int j = m;
		if (m < k) m++;
		else j = k - 1;
		while (j > 0 && v > s[idx[j - 1]]) {
			idx[j] = idx[j - 1];
			j--;
		}
		idx[j] = i;
	}
}

// wm_retrieve_row is ops.retrieve for one row of similarities (2·nk
// values: the two halves' keys) into k choices.
static void wm_retrieve_row(const float *sim, int nk, int k, wm_choice *out) {
	// candI, candJ: the places in each half's top-k of the sum formed n-th.
	int idx[2][WM_RETRIEVE_KMAX], pick[WM_RETRIEVE_KMAX];
	uint8_t candI[WM_RETRIEVE_KMAX * WM_RETRIEVE_KMAX], candJ[WM_RETRIEVE_KMAX * WM_RETRIEVE_KMAX];
	float sums[WM_RETRIEVE_KMAX * WM_RETRIEVE_KMAX];
	const float *half[2] = {sim, sim + nk};
	int finite = 1;
	for (int p = 0; p < 2; p++) {
		wm_topk_insert(idx[p], half[p], nk, k);
		for (int i = 0; i < k; i++) {
			const float v = half[p][idx[p][i]];
			if (isnan(v) || isinf(v)) finite = 0;
		}
	}
	int n = 0;
	for (int i = 0; i < k; i++) {
		const float a = half[0][idx[0][i]];
		const int cols = finite ? k / (i + 1) : k;
		for (int j = 0; j < cols; j++) {
			sums[n] = a + half[1][idx[1][j]];
			candI[n] = (uint8_t)i;
			candJ[n] = (uint8_t)j;
			n++;
		}
	}
	wm_topk_insert(pick, sums, n, k);
	for (int q = 0; q < k; q++) {
		const int c = pick[q];
		const int ix = idx[0][candI[c]], iy = idx[1][candJ[c]];
		out[q].e = (int64_t)ix * nk + iy;
		out[q].ix = ix;
		out[q].iy = iy;
		out[q].s = (double)sums[c];
	}
}

// WM_RETRIEVE_WRITE defines wm_write_choices##SUFFIX(pv, pc, si, nk, k,
// out, ostride, write), which writes the search's choices of W rows: slot q
// of row l has the sum pv[q] (lane l) of the halves' slots i and j, whose
// candidate pc[q] holds as i<<8 | j, and whose keys are si[0][i] and
// si[1][j]; they go to out + l·ostride + q, for the rows whose bit is set
// in write. The vectors are stored and the choices written one at a time.
#define WM_RETRIEVE_WRITE(SUFFIX, ATTR, W, VF, VI, STOREF, STOREI)                                                  \
	ATTR static inline __attribute__((always_inline)) void wm_write_choices##SUFFIX(                              \
	    const VF *pv, const VI *pc, VI (*si)[WM_RETRIEVE_KMAX], int nk, int k, wm_choice *out, ptrdiff_t ostride,   \
	    unsigned write) {                                                                                        \
		float vals[WM_RETRIEVE_KMAX][W];                                                                         \
		int32_t keys[2][WM_RETRIEVE_KMAX][W], cands[WM_RETRIEVE_KMAX][W];                                        \
		for (int q = 0; q < k; q++) {                                                                            \
			STOREF(vals[q], pv[q]);                                                                              \
			STOREI(cands[q], pc[q]);                                                                             \
			STOREI(keys[0][q], si[0][q]);                                                                        \
			STOREI(keys[1][q], si[1][q]);                                                                        \
		}                                                                                                        \
		for (int l = 0; l < W; l++) {                                                                            \
			if (!(write >> l & 1)) continue;                                                                     \
			wm_choice *o = out + l * ostride;                                                                    \
			for (int q = 0; q < k; q++) {                                                                        \
				const int c = cands[q][l];                                                                       \
				const int ix = keys[0][c >> 8][l], iy = keys[1][c & 255][l];                                     \
				o[q].e = (int64_t)ix * nk + iy;                                                                  \
				o[q].ix = ix;                                                                                    \
				o[q].iy = iy;                                                                                    \
				o[q].s = (double)vals[q][l];                                                                     \
			}                                                                                                    \
		}                                                                                                        \
	}

// WM_RETRIEVE_BLOCK defines wm_retrieve_block##SUFFIX(sims, nk, k, out),
// the search of W rows at once (rows of 2·nk values, one after the other)
// on the vector ops of one instruction set: VF and VI are W floats and W
// int32s, VM a mask of W lanes; GATHER(p, offs) loads p[offs[l]] into lane
// l, unless TBUF > 0 and the rows' 2·nk values are a multiple of W and at
// most TBUF: then TRANSPOSE(sims, 2·nk, t) first writes the W rows as
// columns of W values into t (aligned to 64 bytes) and LOADT reads each
// column from there (the same values, so the same choices); GT(a, b) is
// a > b lane by lane (false for NaN), UNORD(a) marks NaN, INF(a) marks ±∞,
// BLEND(m, a, b) takes b where m is set and a elsewhere (BLENDI on ints),
// MOR ors masks and BITS(m) is m as W bits. WRITE(pv, pc, si, nk, k, out,
// ostride, write) writes the choices of the rows whose bits are set in
// write (WM_RETRIEVE_WRITE defines a portable one). It returns the bits of
// the rows it left to wm_retrieve_row (their choices unwritten).
//
// It also defines wm_retrieve_cols##SUFFIX(cols, nk, k, out, ostride,
// lanes), the same search of W rows given already as columns (cols[(p·nk +
// j)·W + l] is row l's key j of half p, as the transpose lays them out),
// whose row l's choices go to out + l·ostride, for the first lanes rows
// only: wm_retrieve_q (below) computes the similarities in that layout.
//
// Its wm_slots_insert##SUFFIX puts value nv (index ni) into the slots sv,
// si (filled of k in use, sorted larger first, ties by lower index, every
// index below ni): nv goes before the first slot holding a smaller value,
// and the slots from there move one on (the last falls off when all k are
// in use). The slots being sorted, nv > sv[q] holds for every slot from
// that one on, so every comparison is with nv itself and the slots are
// updated side by side rather than one after the other.
#define WM_RETRIEVE_BLOCK(SUFFIX, ATTR, W, VF, VI, VM, ROWOFFS, GATHER, SET1I, ADD, GT, UNORD, INF, BLEND, BLENDI, \
                          MZERO, MOR, BITS, STOREF, STOREI, TBUF, TRANSPOSE, LOADT, WRITE)                       \
	ATTR static inline __attribute__((always_inline)) void wm_slots_insert##SUFFIX(VF *sv, VI *si, VF nv, VI ni,  \
	                                                                                int filled, int k) {       \
		VM gt[WM_RETRIEVE_KMAX];                                                                                 \
		for (int q = 0; q < filled; q++) gt[q] = GT(nv, sv[q]);                                                  \
		if (filled < k) {                                                                                        \
			sv[filled] = filled > 0 ? BLEND(gt[filled - 1], nv, sv[filled - 1]) : nv;                            \
			si[filled] = filled > 0 ? BLENDI(gt[filled - 1], ni, si[filled - 1]) : ni;                           \
		}                                                                                                        \
		for (int q = filled - 1; q > 0; q--) {                                                                   \
			sv[q] = BLEND(gt[q], sv[q], BLEND(gt[q - 1], nv, sv[q - 1]));                                        \
			si[q] = BLENDI(gt[q], si[q], BLENDI(gt[q - 1], ni, si[q - 1]));                                      \
		}                                                                                                        \
		if (filled > 0) {                                                                                        \
			sv[0] = BLEND(gt[0], sv[0], nv);                                                                     \
			si[0] = BLENDI(gt[0], si[0], ni);                                                                    \
		}                                                                                                        \
	}                                                                                                            \
	ATTR static inline __attribute__((always_inline)) unsigned wm_retrieve_block_k##SUFFIX(                      \
	    const float *sims, const float *cols, int nk, int k, wm_choice *out, ptrdiff_t ostride, int lanes) {      \
		const VI offs = ROWOFFS(2 * nk);                                                                         \
		float tbuf[TBUF > 0 ? TBUF * W : 1] __attribute__((aligned(64)));                                        \
		int tr = cols != NULL;                                                                                   \
		if (!tr && TBUF > 0 && (2 * nk) % W == 0 && 2 * nk <= TBUF) {                                            \
			TRANSPOSE(sims, 2 * nk, tbuf);                                                                       \
			cols = tbuf;                                                                                         \
			tr = 1;                                                                                              \
		}                                                                                                        \
		VF sv[2][WM_RETRIEVE_KMAX], pv[WM_RETRIEVE_KMAX];                                                        \
		VI si[2][WM_RETRIEVE_KMAX], pc[WM_RETRIEVE_KMAX];                                                        \
		VM bad = MZERO;                                                                                          \
		_Pragma("GCC unroll 2") for (int p = 0; p < 2; p++) {                                                    \
			_Pragma("GCC unroll 32") for (int j = 0; j < k; j++) {                                               \
				const VF nv = tr ? LOADT(cols + (p * nk + j) * W) : GATHER(sims + p * nk + j, offs);            \
				bad = MOR(bad, UNORD(nv));                                                                       \
				wm_slots_insert##SUFFIX(sv[p], si[p], nv, SET1I(j), j, k);                                       \
			}                                                                                                    \
			for (int j = k; j < nk; j++) {                                                                       \
				const VF nv = tr ? LOADT(cols + (p * nk + j) * W) : GATHER(sims + p * nk + j, offs);            \
				bad = MOR(bad, UNORD(nv));                                                                       \
				wm_slots_insert##SUFFIX(sv[p], si[p], nv, SET1I(j), k, k);                                       \
			}                                                                                                    \
			for (int q = 0; q < k; q++) bad = MOR(bad, INF(sv[p][q]));                                           \
		}                                                                                                        \
		int n = 0;                                                                                               \
		_Pragma("GCC unroll 32") for (int i = 0; i < k; i++) {                                                   \
			const int cols = k / (i + 1);                                                                        \
			_Pragma("GCC unroll 32") for (int j = 0; j < cols; j++, n++)                                         \
				wm_slots_insert##SUFFIX(pv, pc, ADD(sv[0][i], sv[1][j]), SET1I(i << 8 | j), n < k ? n : k, k);   \
		}                                                                                                        \
		const unsigned skip = BITS(bad);                                                                         \
		WRITE(pv, pc, si, nk, k, out, ostride, ~skip & ((1u << lanes) - 1));                                     \
		return skip;                                                                                             \
	}                                                                                                            \
	ATTR static unsigned wm_retrieve_block##SUFFIX(const float *sims, int nk, int k, wm_choice *out) {           \
		if (k == 8) return wm_retrieve_block_k##SUFFIX(sims, NULL, nk, 8, out, 8, W);                            \
		return wm_retrieve_block_k##SUFFIX(sims, NULL, nk, k, out, k, W);                                        \
	}                                                                                                            \
	ATTR static unsigned wm_retrieve_cols##SUFFIX(const float *cols, int nk, int k, wm_choice *out,             \
	                                              ptrdiff_t ostride, int lanes) {                                \
		if (k == 8) return wm_retrieve_block_k##SUFFIX(NULL, cols, nk, 8, out, ostride, lanes);                  \
		return wm_retrieve_block_k##SUFFIX(NULL, cols, nk, k, out, ostride, lanes);                              \
	}

typedef unsigned (*wm_retrieve_block_fn)(const float *sims, int nk, int k, wm_choice *out);

// The widest query row (2·heads·dret/2 values) wm_retrieve_q takes.
#define WM_RETRIEVE_QMAX 512

// WM_RETRIEVE_Q defines wm_retrieve_q##SUFFIX(q, m, qd, keys, heads, nk,
// half, k, out): ops.keySims and ops.retrieve for m tokens together, W
// tokens at a time, without writing the similarities out. The W tokens'
// query rows (qd values each, qd a multiple of W and at most
// WM_RETRIEVE_QMAX) are transposed (TRANSPOSE) so that each query value is
// a vector of the W tokens; for each head and half, key j's similarity of
// the W tokens is then Σ_i q[i] · keys[head][j][half][i] as fused
// multiply-adds in i's order from zero (FMA(a, b, c) = a·b + c, one
// rounding; TestRetrieveQueriesMatchGo), the same at both levels. That is
// how OpenBLAS's small-matrix sgemm kernels (its SkylakeX family) form
// keySims's products at the default sizes (32 keys and 32 values a half),
// so there the similarities, and the choices, are keySims's to the bit;
// at other sizes, or with another BLAS, they may differ from keySims's in
// the last place, as two BLAS's sums do. They go, eight keys at a time,
// into a buffer of 2·nk columns of W (at most WM_RETRIEVE_TBUF), which
// wm_retrieve_cols searches in place; the head's choices of the W tokens
// are heads·k choices apart in out. A row the vector search leaves (a NaN
// or a non-finite top value) goes to wm_retrieve_row from its column.
// Two blocks of W tokens go through the products together (block b's query
// columns at tq + b·qd·W, its similarities' at t + b·2·nk·W, both on the
// stack, 40 KiB at the defaults with W = 16), so that each key value loaded
// serves both and sixteen sums are in flight. The last
// tokens, fewer than 2·W, fill their lanes and leave the rest zero.
// VF is W floats, LOADA/STOREA move them to and from 64-byte-aligned
// memory, SET1 broadcasts a float, ZERO is W zeros.
#define WM_RETRIEVE_Q(SUFFIX, ATTR, W, VF, LOADA, STOREA, FMA, SET1, ZERO, TRANSPOSE)                              \
	ATTR static inline __attribute__((always_inline)) void wm_rq_keys##SUFFIX(                                    \
	    const float *qc, ptrdiff_t qs, const float *kp, int half, int J, float *t, ptrdiff_t ts) {               \
		VF a0[8], a1[8];                                                                                         \
		_Pragma("GCC unroll 8") for (int jj = 0; jj < J; jj++) a0[jj] = a1[jj] = ZERO;                           \
		for (int i = 0; i < half; i++) {                                                                         \
			const VF v0 = LOADA(qc + (ptrdiff_t)i * W), v1 = LOADA(qc + qs + (ptrdiff_t)i * W);                  \
			_Pragma("GCC unroll 8") for (int jj = 0; jj < J; jj++) {                                             \
				const VF kv = SET1(kp[(ptrdiff_t)jj * 2 * half + i]);                                            \
				a0[jj] = FMA(v0, kv, a0[jj]);                                                                    \
				a1[jj] = FMA(v1, kv, a1[jj]);                                                                    \
			}                                                                                                    \
		}                                                                                                        \
		_Pragma("GCC unroll 8") for (int jj = 0; jj < J; jj++) {                                                 \
			STOREA(t + (ptrdiff_t)jj * W, a0[jj]);                                                               \
			STOREA(t + ts + (ptrdiff_t)jj * W, a1[jj]);                                                          \
		}                                                                                                        \
	}                                                                                                            \
	ATTR static void wm_retrieve_q##SUFFIX(const float *q, ptrdiff_t m, int qd, const float *keys, int heads,    \
	                                       int nk, int half, int k, wm_choice *out) {                            \
		const ptrdiff_t qs = (ptrdiff_t)qd * W, ts = (ptrdiff_t)2 * nk * W;                                      \
		float tq[2 * qs] __attribute__((aligned(64)));                                                           \
		float t[2 * ts] __attribute__((aligned(64)));                                                            \
		float row[WM_RETRIEVE_TBUF];                                                                             \
		for (ptrdiff_t n0 = 0; n0 < m; n0 += 2 * W) {                                                            \
			int lanes[2];                                                                                        \
			for (int b = 0; b < 2; b++) {                                                                        \
				const ptrdiff_t left = m - n0 - b * W;                                                           \
				lanes[b] = left <= 0 ? 0 : left < W ? (int)left : W;                                             \
				const float *qb = q + (n0 + b * W) * qd;                                                         \
				float *tb = tq + b * qs;                                                                         \
				if (lanes[b] == W) {                                                                             \
					TRANSPOSE(qb, qd, tb);                                                                       \
				} else {                                                                                         \
					for (int c = 0; c < qd; c++)                                                                 \
						for (int l = 0; l < W; l++) tb[c * W + l] = l < lanes[b] ? qb[l * qd + c] : 0.0f;        \
				}                                                                                                \
			}                                                                                                    \
			for (int hh = 0; hh < heads; hh++) {                                                                 \
				for (int p = 0; p < 2; p++) {                                                                    \
					const float *qc = tq + (ptrdiff_t)(p * heads + hh) * half * W;                               \
					const float *kp = keys + ((ptrdiff_t)hh * nk * 2 + p) * half;                                \
					float *tp = t + (ptrdiff_t)p * nk * W;                                                       \
					int j = 0;                                                                                   \
					for (; j + 8 <= nk; j += 8)                                                                  \
						wm_rq_keys##SUFFIX(qc, qs, kp + (ptrdiff_t)j * 2 * half, half, 8, tp + (ptrdiff_t)j * W, ts); \
					for (; j < nk; j++)                                                                          \
						wm_rq_keys##SUFFIX(qc, qs, kp + (ptrdiff_t)j * 2 * half, half, 1, tp + (ptrdiff_t)j * W, ts); \
				}                                                                                                \
				for (int b = 0; b < 2 && lanes[b] > 0; b++) {                                                    \
					const float *tb = t + b * ts;                                                                \
					wm_choice *o = out + ((n0 + b * W) * heads + hh) * k;                                        \
					const unsigned skip = wm_retrieve_cols##SUFFIX(tb, nk, k, o, (ptrdiff_t)heads * k, lanes[b]); \
					for (int l = 0; l < lanes[b]; l++) {                                                         \
						if (!(skip >> l & 1)) continue;                                                          \
						for (int c = 0; c < 2 * nk; c++) row[c] = tb[c * W + l];                                 \
						wm_retrieve_row(row, nk, k, o + (ptrdiff_t)l * heads * k);                               \
					}                                                                                            \
				}                                                                                                \
			}                                                                                                    \
		}                                                                                                        \
	}

typedef void (*wm_retrieve_q_fn)(const float *q, ptrdiff_t m, int qd, const float *keys, int heads, int nk,
                                 int half, int k, wm_choice *out);

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#include <immintrin.h>

#define WM_R512_ATTR __attribute__((target("avx512f,avx512dq,avx2,fma")))
#define WM_R512_ROWOFFS(stride) _mm512_mullo_epi32(_mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0), _mm512_set1_epi32(stride))
#define WM_R512_GATHER(p, offs) _mm512_i32gather_ps(offs, p, 4)
#define WM_R512_GT(a, b) _mm512_cmp_ps_mask(a, b, _CMP_GT_OQ)
#define WM_R512_UNORD(a) _mm512_cmp_ps_mask(a, a, _CMP_UNORD_Q)
#define WM_R512_INF(a) _mm512_cmp_ps_mask(_mm512_abs_ps(a), _mm512_set1_ps(INFINITY), _CMP_EQ_OQ)
#define WM_R512_MOR(a, b) ((__mmask16)((a) | (b)))
#define WM_R512_STOREI(p, v) _mm512_storeu_si512((void *)(p), v)

// wm_r512_transpose writes the 16 rows of n values at sims (n a multiple
// of 16) as n columns of 16 into t: t[16c + l] = sims[l·n + c]. Each 16×16
// block goes through pairs of floats, then of doubles, then 128-bit lanes
// twice, in registers.
WM_R512_ATTR static inline __attribute__((always_inline)) void wm_r512_transpose(const float *sims, int n, float *t) {
	for (int c0 = 0; c0 < n; c0 += 16) {
		__m512 r[16], u[16];
		for (int i = 0; i < 16; i++) r[i] = _mm512_loadu_ps(sims + (ptrdiff_t)i * n + c0);
		for (int i = 0; i < 16; i += 2) {
			u[i] = _mm512_unpacklo_ps(r[i], r[i + 1]);     // a0 b0 a1 b1 in each 128-bit lane
			u[i + 1] = _mm512_unpackhi_ps(r[i], r[i + 1]); // a2 b2 a3 b3
		}
		for (int i = 0; i < 16; i += 4) {
			const __m512d t0 = _mm512_castps_pd(u[i]), t1 = _mm512_castps_pd(u[i + 1]);
			const __m512d t2 = _mm512_castps_pd(u[i + 2]), t3 = _mm512_castps_pd(u[i + 3]);
			r[i] = _mm512_castpd_ps(_mm512_unpacklo_pd(t0, t2));     // rows i..i+3 of column 4L+0 in lane L
			r[i + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(t0, t2)); // column 4L+1
			r[i + 2] = _mm512_castpd_ps(_mm512_unpacklo_pd(t1, t3)); // column 4L+2
			r[i + 3] = _mm512_castpd_ps(_mm512_unpackhi_pd(t1, t3)); // column 4L+3
		}
		for (int c = 0; c < 4; c++) {
			// Lane L of r[c], r[4+c], r[8+c], r[12+c] together make
			// column 4L+c.
			const __m512 a = r[c], b = r[4 + c], cc = r[8 + c], d = r[12 + c];
			const __m512 u0 = _mm512_shuffle_f32x4(a, b, 0x88), u1 = _mm512_shuffle_f32x4(a, b, 0xdd);
			const __m512 u2 = _mm512_shuffle_f32x4(cc, d, 0x88), u3 = _mm512_shuffle_f32x4(cc, d, 0xdd);
			_mm512_store_ps(t + (ptrdiff_t)(c0 + c) * 16, _mm512_shuffle_f32x4(u0, u2, 0x88));
			_mm512_store_ps(t + (ptrdiff_t)(c0 + 4 + c) * 16, _mm512_shuffle_f32x4(u1, u3, 0x88));
			_mm512_store_ps(t + (ptrdiff_t)(c0 + 8 + c) * 16, _mm512_shuffle_f32x4(u0, u2, 0xdd));
			_mm512_store_ps(t + (ptrdiff_t)(c0 + 12 + c) * 16, _mm512_shuffle_f32x4(u1, u3, 0xdd));
		}
	}
}

// The vector searches read their rows' similarities as columns from
// their transpose (rows of up to WM_RETRIEVE_TBUF values, a multiple of the
// lanes), not by gathers: at AVX-512 a gather of 16 lanes took most of the
// search's time.
#define WM_RETRIEVE_TBUF 256
// wm_r512_write_choices is wm_write_choices (WM_RETRIEVE_WRITE) for 16
// rows in registers: each slot's keys are picked by compares (no stores and
// loads through the stack), and each row's choice is assembled as the four
// 8-byte fields side by side (e, ix, iy, s: two unpacks and a permute for
// every two rows) and stored as one 32-byte write. The values are those of
// the portable writer: e = ix·nk + iy, s the float32 sum widened.
WM_R512_ATTR static inline __attribute__((always_inline)) void wm_r512_write_choices(
    const __m512 *pv, const __m512i *pc, __m512i (*si)[WM_RETRIEVE_KMAX], int nk, int k, wm_choice *out,
    ptrdiff_t ostride, unsigned write) {
	const __m512i low8 = _mm512_set1_epi32(255), nkv = _mm512_set1_epi32(nk);
	// Records 0 and 2 of eight (even lanes of the unpacks), then 4 and 6.
	const __m512i rec02 = _mm512_set_epi64(11, 10, 3, 2, 9, 8, 1, 0), rec46 = _mm512_set_epi64(15, 14, 7, 6, 13, 12, 5, 4);
	for (int q = 0; q < k; q++) {
		const __m512i ci = _mm512_srli_epi32(pc[q], 8), cj = _mm512_and_si512(pc[q], low8);
		__m512i ix = si[0][0], iy = si[1][0];
		for (int i = 1; i < k; i++) {
			const __m512i iv = _mm512_set1_epi32(i);
			ix = _mm512_mask_blend_epi32(_mm512_cmpeq_epi32_mask(ci, iv), ix, si[0][i]);
			iy = _mm512_mask_blend_epi32(_mm512_cmpeq_epi32_mask(cj, iv), iy, si[1][i]);
		}
		const __m512i e = _mm512_add_epi32(_mm512_mullo_epi32(ix, nkv), iy);
		for (int h = 0; h < 2; h++) {
			const unsigned w8 = write >> (8 * h) & 255;
			if (w8 == 0) continue;
			const __m512i E = _mm512_cvtepi32_epi64(h ? _mm512_extracti64x4_epi64(e, 1) : _mm512_castsi512_si256(e));
			const __m512i X = _mm512_cvtepi32_epi64(h ? _mm512_extracti64x4_epi64(ix, 1) : _mm512_castsi512_si256(ix));
			const __m512i Y = _mm512_cvtepi32_epi64(h ? _mm512_extracti64x4_epi64(iy, 1) : _mm512_castsi512_si256(iy));
			const __m512i S = _mm512_castpd_si512(
			    _mm512_cvtps_pd(h ? _mm512_extractf32x8_ps(pv[q], 1) : _mm512_castps512_ps256(pv[q])));
			const __m512i ex0 = _mm512_unpacklo_epi64(E, X), ex1 = _mm512_unpackhi_epi64(E, X);
			const __m512i ys0 = _mm512_unpacklo_epi64(Y, S), ys1 = _mm512_unpackhi_epi64(Y, S);
			const __m512i r[4] = {_mm512_permutex2var_epi64(ex0, rec02, ys0), _mm512_permutex2var_epi64(ex1, rec02, ys1),
			                      _mm512_permutex2var_epi64(ex0, rec46, ys0), _mm512_permutex2var_epi64(ex1, rec46, ys1)};
			// r[0] holds rows 0 and 2, r[1] rows 1 and 3, r[2] rows 4 and 6,
			// r[3] rows 5 and 7 (of this half), low 32 bytes first.
			for (int l = 0; l < 8; l++) {
				if (!(w8 >> l & 1)) continue;
				const __m512i rr = r[(l >> 2) * 2 + (l & 1)];
				const __m256i rec = (l >> 1 & 1) ? _mm512_extracti64x4_epi64(rr, 1) : _mm512_castsi512_si256(rr);
				_mm256_storeu_si256((__m256i *)(out + (8 * h + l) * ostride + q), rec);
			}
		}
	}
}
WM_RETRIEVE_BLOCK(_avx512, WM_R512_ATTR, 16, __m512, __m512i, __mmask16, WM_R512_ROWOFFS, WM_R512_GATHER,
                  _mm512_set1_epi32, _mm512_add_ps, WM_R512_GT, WM_R512_UNORD, WM_R512_INF, _mm512_mask_blend_ps,
                  _mm512_mask_blend_epi32, (__mmask16)0, WM_R512_MOR, (unsigned), _mm512_storeu_ps,
                  WM_R512_STOREI, WM_RETRIEVE_TBUF, wm_r512_transpose, _mm512_load_ps, wm_r512_write_choices)
WM_RETRIEVE_Q(_avx512, WM_R512_ATTR, 16, __m512, _mm512_load_ps, _mm512_store_ps, _mm512_fmadd_ps, _mm512_set1_ps,
              _mm512_setzero_ps(), wm_r512_transpose)

#define WM_R256_ATTR __attribute__((target("avx2,fma")))
#define WM_R256_ROWOFFS(stride) _mm256_mullo_epi32(_mm256_set_epi32(7, 6, 5, 4, 3, 2, 1, 0), _mm256_set1_epi32(stride))
#define WM_R256_GATHER(p, offs) _mm256_i32gather_ps(p, offs, 4)
#define WM_R256_GT(a, b) _mm256_cmp_ps(a, b, _CMP_GT_OQ)
#define WM_R256_UNORD(a) _mm256_cmp_ps(a, a, _CMP_UNORD_Q)
#define WM_R256_INF(a) \
	_mm256_cmp_ps(_mm256_andnot_ps(_mm256_set1_ps(-0.0f), a), _mm256_set1_ps(INFINITY), _CMP_EQ_OQ)
#define WM_R256_BLENDI(m, a, b) \
	_mm256_castps_si256(_mm256_blendv_ps(_mm256_castsi256_ps(a), _mm256_castsi256_ps(b), m))
#define WM_R256_BLEND(m, a, b) _mm256_blendv_ps(a, b, m)
#define WM_R256_BITS(m) ((unsigned)_mm256_movemask_ps(m))
#define WM_R256_STOREI(p, v) _mm256_storeu_si256((__m256i *)(p), v)

// wm_r256_transpose is wm_r512_transpose for 8 rows (n a multiple of 8):
// t[8c + l] = sims[l·n + c], by 8×8 blocks in registers.
WM_R256_ATTR static inline __attribute__((always_inline)) void wm_r256_transpose(const float *sims, int n, float *t) {
	for (int c0 = 0; c0 < n; c0 += 8) {
		__m256 r[8], u[8], v[8];
		for (int i = 0; i < 8; i++) r[i] = _mm256_loadu_ps(sims + (ptrdiff_t)i * n + c0);
		for (int i = 0; i < 8; i += 2) {
			u[i] = _mm256_unpacklo_ps(r[i], r[i + 1]);     // a0 b0 a1 b1 in each 128-bit lane
			u[i + 1] = _mm256_unpackhi_ps(r[i], r[i + 1]); // a2 b2 a3 b3
		}
		for (int i = 0; i < 8; i += 4) {
			v[i] = _mm256_shuffle_ps(u[i], u[i + 2], 0x44);         // rows i..i+3 of column 4L+0 in lane L
			v[i + 1] = _mm256_shuffle_ps(u[i], u[i + 2], 0xee);     // column 4L+1
			v[i + 2] = _mm256_shuffle_ps(u[i + 1], u[i + 3], 0x44); // column 4L+2
			v[i + 3] = _mm256_shuffle_ps(u[i + 1], u[i + 3], 0xee); // column 4L+3
		}
		for (int c = 0; c < 4; c++) {
			_mm256_store_ps(t + (ptrdiff_t)(c0 + c) * 8, _mm256_permute2f128_ps(v[c], v[4 + c], 0x20));
			_mm256_store_ps(t + (ptrdiff_t)(c0 + 4 + c) * 8, _mm256_permute2f128_ps(v[c], v[4 + c], 0x31));
		}
	}
}
WM_RETRIEVE_WRITE(_avx2, WM_R256_ATTR, 8, __m256, __m256i, _mm256_storeu_ps, WM_R256_STOREI)
WM_RETRIEVE_BLOCK(_avx2, WM_R256_ATTR, 8, __m256, __m256i, __m256, WM_R256_ROWOFFS, WM_R256_GATHER,
                  _mm256_set1_epi32, _mm256_add_ps, WM_R256_GT, WM_R256_UNORD, WM_R256_INF, WM_R256_BLEND,
                  WM_R256_BLENDI, _mm256_setzero_ps(), _mm256_or_ps, WM_R256_BITS, _mm256_storeu_ps, WM_R256_STOREI,
                  WM_RETRIEVE_TBUF, wm_r256_transpose, _mm256_load_ps, wm_write_choices_avx2)
WM_RETRIEVE_Q(_avx2, WM_R256_ATTR, 8, __m256, _mm256_load_ps, _mm256_store_ps, _mm256_fmadd_ps, _mm256_set1_ps,
              _mm256_setzero_ps(), wm_r256_transpose)

#else
#define wm_retrieve_block_avx512 NULL
#define wm_retrieve_block_avx2 NULL
#define wm_retrieve_q_avx512 NULL
#define wm_retrieve_q_avx2 NULL
#define WM_RETRIEVE_TBUF 0
#endif

static wm_retrieve_block_fn wm_retrieve_block = NULL;
static wm_retrieve_q_fn wm_retrieve_q = NULL;
static int wm_retrieve_lanes = 1;

// wm_retrieve_set_level selects the block search of the best level the CPU
// has up to most (2 AVX-512, 1 AVX2, 0 none) and returns the level chosen.
static int wm_retrieve_set_level(int most) {
	int l = wm_cpu_level(1);
	if (l > most) l = most;
	wm_retrieve_block = l == 2 ? wm_retrieve_block_avx512 : l == 1 ? wm_retrieve_block_avx2 : NULL;
	wm_retrieve_q = l == 2 ? wm_retrieve_q_avx512 : l == 1 ? wm_retrieve_q_avx2 : NULL;
	wm_retrieve_lanes = l == 2 ? 16 : l == 1 ? 8 : 1;
	return l;
}

// wm_retrieve is ops.retrieve for m rows of similarities (each 2·nk values:
// the two halves' keys) into m·k choices.
static void wm_retrieve(const float *sims, ptrdiff_t m, int nk, int k, wm_choice *out) {
	ptrdiff_t r = 0;
	if (wm_retrieve_block != NULL) {
		const int w = wm_retrieve_lanes;
		for (; r + w <= m; r += w) {
			unsigned skip = wm_retrieve_block(sims + r * 2 * nk, nk, k, out + r * k);
			for (int l = 0; l < w; l++)
				if (skip >> l & 1) wm_retrieve_row(sims + (r + l) * 2 * nk, nk, k, out + (r + l) * k);
		}
	}
	for (; r < m; r++) wm_retrieve_row(sims + r * 2 * nk, nk, k, out + r * k);
}

// wm_top1 is wm_topk_insert for k = 1 (listing 7's default): the index of
// the first largest of s[0..n), where a NaN never replaces a value and a
// NaN at s[0] stays (nothing is larger than it). With GCC on x86 the
// largest of the values that are not NaN comes from vector maxima
// (MAXPS(v, m) keeps m where v is NaN), then the first index holding it
// (−0 and +0 equal, as in the insertion's compares).
static inline int wm_top1(const float *s, int n) {
	if (isnan(s[0])) return 0;
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
	__m128 m4 = _mm_set1_ps(-INFINITY);
	int i = 0;
	for (; i + 4 <= n; i += 4) m4 = _mm_max_ps(_mm_loadu_ps(s + i), m4);
	float mv[4];
	_mm_storeu_ps(mv, m4);
	float m = mv[0];
	for (int l = 1; l < 4; l++) m = mv[l] > m ? mv[l] : m;
	for (; i < n; i++) m = s[i] > m ? s[i] : m;
	const __m128 want = _mm_set1_ps(m);
	for (i = 0; i + 4 <= n; i += 4) {
		const int hit = _mm_movemask_ps(_mm_cmpeq_ps(_mm_loadu_ps(s + i), want));
		if (hit) return i + __builtin_ctz(hit);
	}
	for (; i < n; i++)
		if (s[i] == m) return i;
	return 0; // not reached: s[0] is not NaN, so some value equals m
#else
	int idx;
	wm_topk_insert(&idx, s, n, 1);
	return idx;
#endif
}

// wm_inner_func_rows is ops.innerFuncRowsGo (the inner-function value's
// forward, Wonderful Matrices eq. 3) for m tokens: each token's k best of
// its nv scores (wm_topk_insert, topK's order), their rows of E summed from
// zero in that order, times x, into y, by blocks of up to 256 values of a
// row. The operations and their order are Go's, one float32 add or
// multiply each, so the values are its bits (TestInnerFuncRowsMatchGo).
static void wm_inner_func_rows(const float *x, const float *sim, const float *E, float *y, ptrdiff_t m, int dm,
                               int nv, int k) {
	int idx[WM_RETRIEVE_KMAX];
	float sum[256];
	for (ptrdiff_t n = 0; n < m; n++) {
		if (k == 1)
			idx[0] = wm_top1(sim + n * nv, nv);
		else
			wm_topk_insert(idx, sim + n * nv, nv, k);
		const float *xr = x + n * dm;
		float *yr = y + n * dm;
		for (int j0 = 0; j0 < dm; j0 += 256) {
			const int w = dm - j0 < 256 ? dm - j0 : 256;
			for (int j = 0; j < w; j++) sum[j] = 0.0f;
			for (int q = 0; q < k; q++) {
				const float *e = E + (ptrdiff_t)idx[q] * dm + j0;
				for (int j = 0; j < w; j++) sum[j] += e[j];
			}
			for (int j = 0; j < w; j++) yr[j0 + j] = xr[j0 + j] * sum[j];
		}
	}
}

// wm_retrieve_queries runs wm_retrieve_q of the level set for m tokens of
// q; wm_retrieve_queries_ok says whether there is one for these sizes.
static int wm_retrieve_queries_ok(int qd, int nk) {
	return wm_retrieve_q != NULL && qd % wm_retrieve_lanes == 0 && qd <= WM_RETRIEVE_QMAX &&
	       2 * nk <= WM_RETRIEVE_TBUF;
}
static void wm_retrieve_queries(const float *q, ptrdiff_t m, int qd, const float *keys, int heads, int nk, int half,
                                int k, wm_choice *out) {
	wm_retrieve_q(q, m, qd, keys, heads, nk, half, k, out);
}
*/
import "C"

import (
	"strconv"
	"unsafe"
)

// The C search writes expertChoice values as wm_choice: four 8-byte fields
// in this order. A change to either layout stops the build here.
var _ = [1]struct{}{}[unsafe.Sizeof(expertChoice{})-32]
var _ = [1]struct{}{}[unsafe.Offsetof(expertChoice{}.s)-24]

// topKInC says whether the C top-k (wm_topk_insert and the vector
// searches) takes the k best of n values: k from 1 to WM_RETRIEVE_KMAX and
// at most n, with Go ints of 64 bits (the size wm_choice's fields have).
func topKInC(k, n int) bool {
	return strconv.IntSize == 64 && k >= 1 && k <= C.WM_RETRIEVE_KMAX && k <= n
}

// retrieveLevel selects the rank top-k of the C search up to the kernel
// level most (setKernelLevel calls it) and returns the level in use.
func retrieveLevel(most int) int { return int(C.wm_retrieve_set_level(C.int(most))) }

// retrieveRows32 is retrieve for rows [lo, hi) of sims (rows of 2·nk:
// every (token, head) in order) into out[lo·k : hi·k], in C. It returns
// false, having done nothing, where the C search does not apply (k above
// its limit, or ints of another size), and the caller runs retrieve.
func retrieveRows32(k cdmoeKernel, sims []float32, lo, hi int, out []expertChoice) bool {
	if !topKInC(k.topk, k.nk) {
		return false
	}
	if hi <= lo {
		return true
	}
	// The bounds the C loop relies on, checked here so that a bad slice
	// panics in Go.
	_, _ = sims[hi*2*k.nk-1], out[hi*k.topk-1]
	C.wm_retrieve(f32p(sims[lo*2*k.nk:]), C.ptrdiff_t(hi-lo), C.int(k.nk), C.int(k.topk),
		(*C.wm_choice)(unsafe.Pointer(&out[lo*k.topk])))
	return true
}

// retrieveQueriesOK says whether retrieveQueries32 runs for k's sizes in
// C: float32 queries, the AVX2 or AVX-512 level, top_k within the C
// search's limit, query rows of a multiple of the vector's lanes and at
// most 512 values, and at most 128 keys a half.
func retrieveQueriesOK(k cdmoeKernel) bool {
	return topKInC(k.topk, k.nk) &&
		C.wm_retrieve_queries_ok(C.int(k.qdim()), C.int(k.nk)) != 0
}

// retrieveQueries32 is keySims and retrieve together for tokens [lo, hi)
// of the queries q (rows of k.qdim()) and keys, into out[lo·heads·k :
// hi·heads·k], in C, without the similarities written out (see
// WM_RETRIEVE_Q): they are formed W tokens at a time and searched while in
// the first-level cache. They are still matrix products (keySims's:
// 2·heads of [tokens, half]·[half, nk]), and countFusedProducts counts them
// as such, so that a step's matrix-product ceiling does not change with
// where they run. The caller checks retrieveQueriesOK first.
func retrieveQueries32(k cdmoeKernel, q, keys []float32, lo, hi int, out []expertChoice) {
	if hi <= lo {
		return
	}
	qd, nc := k.qdim(), k.heads*k.topk
	countFusedProducts(GemmShape{M: hi - lo, N: k.nk, K: k.half, LDA: qd, LDB: k.nk, LDC: k.heads * 2 * k.nk}, 2*k.heads)
	// The bounds the C loop relies on, checked here so that a bad slice
	// panics in Go.
	_, _, _ = q[hi*qd-1], keys[k.heads*k.nk*2*k.half-1], out[hi*nc-1]
	C.wm_retrieve_queries(f32p(q[lo*qd:]), C.ptrdiff_t(hi-lo), C.int(qd), f32p(keys), C.int(k.heads), C.int(k.nk),
		C.int(k.half), C.int(k.topk), (*C.wm_choice)(unsafe.Pointer(&out[lo*nc])))
}

// innerFuncRowsC is innerFuncRowsGo for float32 tokens [lo, hi) in C
// (wm_inner_func_rows), one call for the range; it reports false, having
// done nothing, for k above the C top-k's limit or ints of another size.
func innerFuncRowsC(k innerFuncKernel, x, sim, E, y []float32, lo, hi int) bool {
	if !topKInC(k.k, k.nv) {
		return false
	}
	if hi <= lo {
		return true
	}
	// The bounds the C loop relies on, checked here so that a bad slice
	// panics in Go.
	_, _, _, _ = x[hi*k.dm-1], sim[hi*k.nv-1], E[k.nv*k.dm-1], y[hi*k.dm-1]
	C.wm_inner_func_rows(f32p(x[lo*k.dm:]), f32p(sim[lo*k.nv:]), f32p(E), f32p(y[lo*k.dm:]), C.ptrdiff_t(hi-lo),
		C.int(k.dm), C.int(k.nv), C.int(k.k))
	return true
}
