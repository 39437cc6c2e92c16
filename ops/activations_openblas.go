//go:build openblas

package ops

// With the openblas build tag (cgo), the float32 activations run in C: the
// same Cephes expf range reduction and polynomial as exp32, written so that
// GCC vectorises the loops (no calls, selects instead of branches), built
// for AVX-512, for AVX2+FMA and for plain x86-64, the best the CPU has used
// (KernelISA names it; no-trapping-math lets GCC turn
// the clamps into selects; nothing here reads floating-point exception
// flags). In Go the scalar exp32 costs about
// 13 cycles per element; SiLU gates alone were a fifth of a d_model-256
// evaluation step. SSD's softplus and its derivative σ are here too
// (log1pUnit32's polynomial as wm_log1p_unit). A kernel whose scale may be
// NULL tests it once, outside its loop: inside, GCC made the load of
// scale[i] a masked one from address 0, which costs a fault-suppression
// assist on every vector (softplus ran at 9 ns per element instead of 0.7).
// FMA contraction makes the results differ from the Go kernels in the last
// bits; TestFloat32ActivationsMatchFloat64 and TestFloat32SoftplusKernels
// hold both to the float64 definitions. The softmax rows are the exception: GCC left
// their maximum and their double sum scalar, so their AVX2 variant is
// written with intrinsics (wm_exp8 is wm_exp on eight lanes); held to the
// float64 definition by TestFloat32SoftmaxRowsMatchFloat64.

/*
#cgo CFLAGS: -O3
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("no-trapping-math")
#endif
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <float.h>

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define WM_AVX2 1
#endif

static inline __attribute__((always_inline)) float wm_pow2(int32_t e) {
	uint32_t b = (uint32_t)(e + 127) << 23;
	float f;
	memcpy(&f, &b, sizeof f);
	return f;
}

// wm_exp is exp32 of exp32.go (always inlined, also into the AVX2 variants,
// or the loops call it per element instead of vectorising): clamp to
// [-104, 89] (NaN passes), round n = x·log2(e) with the 1.5·2^23 trick,
// Cody-Waite r = x − n·ln2, the degree-6 polynomial, and 2^n as two normal
// factors.
static inline __attribute__((always_inline)) float wm_exp(float x) {
	x = x < -104.0f ? -104.0f : x;
	x = x > 89.0f ? 89.0f : x;
	float n = (x * 1.44269504088896341f + 12582912.0f) - 12582912.0f;
	float r = x - n * 0.693359375f;
	r = r - n * -2.12194440e-4f;
	float p = ((((((1.9875691500e-4f * r + 1.3981999507e-3f) * r + 8.3334519073e-3f) * r + 4.1665795894e-2f) * r +
	             1.6666665459e-1f) * r + 5.0000001201e-1f) * r * r + r) + 1.0f;
	int32_t e = (int32_t)n;
	int32_t h = e >> 1;
	return p * wm_pow2(h) * wm_pow2(e - h);
}

// wm_log1p_unit is log1pUnit32 of softplus32.go (always inlined, selects
// instead of branches): log(1+u) for u in [0, 1] from w = 1+u = 2^e·(1+m),
// Cephes' logf polynomial in m, e·ln2 in two parts, and the rounding of w
// added back to first order; u itself where w rounds to 1.
static inline __attribute__((always_inline)) float wm_log1p_unit(float u) {
	float w = 1.0f + u;
	int big = w >= 1.41421356237309505f;
	float m = big ? 0.5f * w - 1.0f : w - 1.0f;
	float e = big ? 1.0f : 0.0f;
	float z = m * m;
	float y = (((((((((7.0376836292e-2f * m - 1.1514610310e-1f) * m + 1.1676998740e-1f) * m - 1.2420140846e-1f) * m +
	                1.4249322787e-1f) * m - 1.6668057665e-1f) * m + 2.0000714765e-1f) * m - 2.4999993993e-1f) * m +
	             3.3333331174e-1f) * m) * z;
	y += -2.12194440e-4f * e;
	y -= 0.5f * z;
	float c = u - (w - 1.0f);
	float l = m + (y + c / w) + 0.693359375f * e;
	return w == 1.0f ? u : l;
}

// softplus(v) = max(v, 0) + log(1 + e^−|v|), as softplus32 computes it.
#define WM_SOFTPLUS(v) (((v) > 0.0f ? (v) : 0.0f) + wm_log1p_unit(wm_exp((v) > 0.0f ? -(v) : (v))))

// σ(v) and 1−σ(v) = e^−v·σ(v); where e^−v overflows, σ = 0 and 1−σ = 1.
#define WM_SIGMOID_PAIR(v, s, c)                 \
	float e_ = wm_exp(-(v));                     \
	float s = 1.0f / (1.0f + e_);                \
	float c = e_ > FLT_MAX ? 1.0f : e_ * s;

// WM_GATED_KERNELS defines the gated SiLU, its gradient, and both from one
// exponential (wm_gated_silu_both, the same values as the two) for SSE2 and
// AVX2 (the AVX-512 ones are written in intrinsics below).
#define WM_GATED_KERNELS(SUFFIX, ATTR)                                                                \
	ATTR void wm_gated_silu##SUFFIX(float *y, const float *x, const float *z, ptrdiff_t n) {         \
		for (ptrdiff_t i = 0; i < n; i++) y[i] = x[i] * z[i] / (1.0f + wm_exp(-z[i]));                \
	}                                                                                                 \
	ATTR void wm_gated_silu_grad##SUFFIX(float *dx, float *dz, const float *g, const float *x,       \
	                                     const float *z, ptrdiff_t n) {                               \
		for (ptrdiff_t i = 0; i < n; i++) {                                                           \
			WM_SIGMOID_PAIR(z[i], s, c)                                                               \
			dx[i] = g[i] * z[i] * s;                                                                  \
			dz[i] = g[i] * x[i] * s * (1.0f + z[i] * c);                                              \
		}                                                                                             \
	}                                                                                                 \
	ATTR void wm_gated_silu_both##SUFFIX(float *y, float *dx, float *dz, const float *g,             \
	                                     const float *x, const float *z, ptrdiff_t n) {               \
		for (ptrdiff_t i = 0; i < n; i++) {                                                           \
			WM_SIGMOID_PAIR(z[i], s, c)                                                               \
			y[i] = x[i] * z[i] / (1.0f + e_);                                                         \
			dx[i] = g[i] * z[i] * s;                                                                  \
			dz[i] = g[i] * x[i] * s * (1.0f + z[i] * c);                                              \
		}                                                                                             \
	}

// WM_KERNELS defines every kernel with a name suffix and attributes: once
// for any x86-64 (SSE2) and once for AVX2+FMA. Go picks one at start-up
// (wm_has_avx2), not an ifunc: Go's internal linker does not resolve them.
// In wm_cdmoe_bwd, the expert's rows of dEup and dEdown are rows of two
// different arrays: "GCC ivdep" says so, and the loop over them is
// vectorised (GCC left it scalar, its overlap checks being too many to
// try). CDMoE's kernels take a token's chosen experts in blocks of
// WM_CDMOE_BLOCK and each block in passes: every expert's dot products,
// then every activation, then the rows updated in the experts' order. Each
// expert's values are the same operations as one expert at a time (the dots
// read rows the updates do not write), but the dots and activations of a
// block are independent chains the CPU runs side by side, where one expert
// at a time waited on each. wm_dots runs WM_DOTS experts' dots in one loop,
// each in eight lanes of its own with wm_dot's order and fold: a dot of
// d_model 256 is a chain of 32 dependent multiply-adds, and one at a time
// the CPU overlapped only a few of them. The token's output (forward) and
// dφ (backward, other than the d_model 64 body below) are summed over the
// block's experts 64 values at a time in eight vectors (wm_rows_axpy),
// each value over the experts in their order as before, instead of read
// and written for every expert. The backward's dq (a head's query halves,
// which all of the head's choices update) is summed over the head's run of
// choices 32 values at a time in four vectors (wm_runs_axpy, which reads
// each choice's offsets as the kernel lays them out: the query half's at
// off[4c], the key's at off[4c+1]) after the block's rows, where each
// choice's update waited on the last one's store. All kept every bit
// (TestCDMoEPartsKeepBits, through wm_cdmoe_parts; at d_model 256 in C
// alone: forward −35%, backward −25%, then dq −12% at d_model 64 and −6%
// at 256). For d_model 64 with query halves of 32 (the
// benchmarks' small models), wm_cdmoe_bwd runs its body inlined with those
// sizes as constants (GCC unrolls the short loops and drops their overlap
// checks) and holds the token's dφ in eight vectors (wm_v8f) over a block
// instead of reading and writing it for every expert: the same operations
// in the same order, so the same bits (TestCDMoEExpertsCMatchGo covers both
// bodies). wm_dot's tail loop is guarded by n & 7 so that GCC, inlining it
// with n = 64, has no loop left whose count it cannot bound. At level
// AVX-512 the backward is wm_cdmoe_bwd_zmm and the forward
// wm_cdmoe_fwd_zmm (below) where d_model is a multiple of 16: the same
// bodies with their rows on sixteen lanes, the same bits.
#define WM_CDMOE_BLOCK 64
#define WM_DOTS 8
typedef float wm_v8f __attribute__((vector_size(32)));
#define WM_KERNELS(SUFFIX, ATTR)                                                                      \
	ATTR void wm_silu##SUFFIX(float *y, const float *x, const float *scale, ptrdiff_t n) {           \
		if (scale == NULL) {                                                                          \
			for (ptrdiff_t i = 0; i < n; i++) y[i] = x[i] / (1.0f + wm_exp(-x[i]));                   \
		} else {                                                                                      \
			for (ptrdiff_t i = 0; i < n; i++) y[i] = x[i] / (1.0f + wm_exp(-x[i])) * scale[i];        \
		}                                                                                             \
	}                                                                                                 \
	ATTR void wm_silu_grad##SUFFIX(float *y, const float *x, const float *scale, ptrdiff_t n) {      \
		if (scale == NULL) {                                                                         \
			for (ptrdiff_t i = 0; i < n; i++) {                                                      \
				WM_SIGMOID_PAIR(x[i], s, c)                                                          \
				y[i] = s * (1.0f + x[i] * c);                                                        \
			}                                                                                        \
		} else {                                                                                     \
			for (ptrdiff_t i = 0; i < n; i++) {                                                      \
				WM_SIGMOID_PAIR(x[i], s, c)                                                          \
				y[i] = s * (1.0f + x[i] * c) * scale[i];                                             \
			}                                                                                        \
		}                                                                                            \
	}                                                                                                \
	ATTR void wm_exp_shift##SUFFIX(float *y, ptrdiff_t n, float m) {                                 \
		for (ptrdiff_t i = 0; i < n; i++) y[i] = wm_exp(y[i] - m);                                    \
	}                                                                                                 \
	ATTR void wm_softplus##SUFFIX(float *y, const float *x, const float *scale, ptrdiff_t n) {       \
		if (scale == NULL) {                                                                         \
			for (ptrdiff_t i = 0; i < n; i++) y[i] = WM_SOFTPLUS(x[i]);                              \
		} else {                                                                                     \
			for (ptrdiff_t i = 0; i < n; i++) y[i] = WM_SOFTPLUS(x[i]) * scale[i];                   \
		}                                                                                            \
	}                                                                                                \
	ATTR void wm_sigmoid##SUFFIX(float *y, const float *x, const float *scale, ptrdiff_t n) {        \
		if (scale == NULL) {                                                                         \
			for (ptrdiff_t i = 0; i < n; i++) y[i] = 1.0f / (1.0f + wm_exp(-x[i]));                  \
		} else {                                                                                     \
			for (ptrdiff_t i = 0; i < n; i++) y[i] = 1.0f / (1.0f + wm_exp(-x[i])) * scale[i];       \
		}                                                                                            \
	}                                                                                                \
	ATTR static inline float wm_dot##SUFFIX(const float *a, const float *b, ptrdiff_t n) {           \
		float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};                                                      \
		ptrdiff_t j = 0;                                                                              \
		for (; j + 8 <= n; j += 8)                                                                    \
			for (int l = 0; l < 8; l++) acc[l] += a[j + l] * b[j + l];                                \
		if (n & 7)                                                                                    \
			for (; j < n; j++) acc[0] += a[j] * b[j];                                                 \
		return ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));     \
	}                                                                                                 \
	ATTR static inline float wm_fold_v8f##SUFFIX(const wm_v8f *p) {                                  \
		const wm_v8f v = *p;                                                                          \
		return ((v[0] + v[1]) + (v[2] + v[3])) + ((v[4] + v[5]) + (v[6] + v[7]));                     \
	}                                                                                                 \
	ATTR static inline __attribute__((always_inline)) void wm_dots##SUFFIX(                          \
	    const float *a, const float *base, const int32_t *e, ptrdiff_t m, ptrdiff_t n, float *out) { \
		ptrdiff_t c = 0;                                                                              \
		for (; c + WM_DOTS <= m; c += WM_DOTS) {                                                      \
			const float *b[WM_DOTS];                                                                  \
			wm_v8f acc[WM_DOTS];                                                                      \
			for (int i = 0; i < WM_DOTS; i++) {                                                       \
				b[i] = base + (ptrdiff_t)e[c + i] * n;                                                \
				acc[i] = (wm_v8f){0, 0, 0, 0, 0, 0, 0, 0};                                            \
			}                                                                                         \
			ptrdiff_t j = 0;                                                                          \
			for (; j + 8 <= n; j += 8) {                                                              \
				wm_v8f x;                                                                             \
				memcpy(&x, a + j, sizeof x);                                                          \
				for (int i = 0; i < WM_DOTS; i++) {                                                   \
					wm_v8f y;                                                                         \
					memcpy(&y, b[i] + j, sizeof y);                                                   \
					acc[i] += x * y;                                                                  \
				}                                                                                     \
			}                                                                                         \
			for (int i = 0; i < WM_DOTS; i++) {                                                       \
				if (n & 7)                                                                            \
					for (ptrdiff_t t = j; t < n; t++) acc[i][0] += a[t] * b[i][t];                    \
				out[c + i] = wm_fold_v8f##SUFFIX(&acc[i]);                                             \
			}                                                                                         \
		}                                                                                             \
		for (; c < m; c++) out[c] = wm_dot##SUFFIX(a, base + (ptrdiff_t)e[c] * n, n);                 \
	}                                                                                                 \
	ATTR static inline __attribute__((always_inline)) void wm_rows_axpy##SUFFIX(                     \
	    float *y, const float *base, const int32_t *e, const float *w, ptrdiff_t m, ptrdiff_t n) {    \
		ptrdiff_t j0 = 0;                                                                             \
		for (; j0 + 64 <= n; j0 += 64) {                                                              \
			wm_v8f acc[8];                                                                            \
			memcpy(acc, y + j0, sizeof acc);                                                          \
			for (ptrdiff_t c = 0; c < m; c++) {                                                       \
				const float *r = base + (ptrdiff_t)e[c] * n + j0;                                     \
				const float wc = w[c];                                                                \
				for (int v = 0; v < 8; v++) {                                                         \
					wm_v8f x;                                                                         \
					memcpy(&x, r + 8 * v, sizeof x);                                                  \
					acc[v] += wc * x;                                                                 \
				}                                                                                     \
			}                                                                                         \
			memcpy(y + j0, acc, sizeof acc);                                                          \
		}                                                                                             \
		if (j0 < n)                                                                                   \
			for (ptrdiff_t c = 0; c < m; c++) {                                                       \
				const float *r = base + (ptrdiff_t)e[c] * n;                                          \
				for (ptrdiff_t j = j0; j < n; j++) y[j] += w[c] * r[j];                               \
			}                                                                                         \
	}                                                                                                 \
	ATTR static inline __attribute__((always_inline)) void wm_runs_axpy##SUFFIX(                     \
	    float *y, const float *base, const int32_t *off, const float *w, ptrdiff_t m, ptrdiff_t n) {  \
		for (ptrdiff_t c = 0; c < m;) {                                                               \
			ptrdiff_t end = c + 1;                                                                    \
			while (end < m && off[4 * end] == off[4 * c]) end++;                                      \
			float *yr = y + off[4 * c];                                                               \
			ptrdiff_t j0 = 0;                                                                         \
			for (; j0 + 32 <= n; j0 += 32) {                                                          \
				wm_v8f acc[4];                                                                        \
				memcpy(acc, yr + j0, sizeof acc);                                                     \
				for (ptrdiff_t i = c; i < end; i++) {                                                 \
					const float *r = base + off[4 * i + 1] + j0;                                      \
					const float wi = w[i];                                                            \
					for (int v = 0; v < 4; v++) {                                                     \
						wm_v8f x;                                                                     \
						memcpy(&x, r + 8 * v, sizeof x);                                              \
						acc[v] += wi * x;                                                             \
					}                                                                                 \
				}                                                                                     \
				memcpy(yr + j0, acc, sizeof acc);                                                     \
			}                                                                                         \
			if (j0 < n)                                                                               \
				for (ptrdiff_t i = c; i < end; i++) {                                                 \
					const float *r = base + off[4 * i + 1];                                           \
					for (ptrdiff_t j = j0; j < n; j++) yr[j] += w[i] * r[j];                          \
				}                                                                                     \
			c = end;                                                                                  \
		}                                                                                             \
	}                                                                                                 \
	ATTR void wm_cdmoe_fwd##SUFFIX(float *y, const float *phi, const float *Edown, const float *Eup, \
	                               const int32_t *e, const float *s, ptrdiff_t nc, ptrdiff_t d) {     \
		float w[WM_CDMOE_BLOCK];                                                                      \
		for (ptrdiff_t c0 = 0; c0 < nc; c0 += WM_CDMOE_BLOCK) {                                       \
			const ptrdiff_t m = nc - c0 < WM_CDMOE_BLOCK ? nc - c0 : WM_CDMOE_BLOCK;                  \
			const int32_t *eb = e + c0;                                                               \
			wm_dots##SUFFIX(phi, Edown, eb, m, d, w);                                                 \
			for (ptrdiff_t c = 0; c < m; c++) {                                                       \
				float z = w[c] * s[c0 + c];                                                           \
				w[c] = z / (1.0f + wm_exp(-z));                                                       \
			}                                                                                         \
			wm_rows_axpy##SUFFIX(y, Eup, eb, w, m, d);                                                \
		}                                                                                             \
	}                                                                                                 \
	ATTR static inline __attribute__((always_inline)) void wm_cdmoe_bwd_body##SUFFIX(               \
	    const float *g, const float *phi, const float *Edown, const float *Eup, const int32_t *e,     \
	    const float *s, ptrdiff_t nc, ptrdiff_t d, float *dEdown, float *dEup, float *dphi,           \
	    const float *q, const float *keys, const int32_t *off, ptrdiff_t half, float *dq,             \
	    float *dkeys, const int d64) {                                                                \
		float dp[WM_CDMOE_BLOCK], dg[WM_CDMOE_BLOCK], wb[WM_CDMOE_BLOCK], dzb[WM_CDMOE_BLOCK];         \
		float zs[WM_CDMOE_BLOCK], dsb[WM_CDMOE_BLOCK];                                                \
		for (ptrdiff_t c0 = 0; c0 < nc; c0 += WM_CDMOE_BLOCK) {                                       \
			const ptrdiff_t m = nc - c0 < WM_CDMOE_BLOCK ? nc - c0 : WM_CDMOE_BLOCK;                  \
			wm_dots##SUFFIX(phi, Edown, e + c0, m, d, dp);                                            \
			wm_dots##SUFFIX(g, Eup, e + c0, m, d, dg);                                                \
			for (ptrdiff_t c = 0; c < m; c++) {                                                       \
				float z = dp[c] * s[c0 + c];                                                          \
				WM_SIGMOID_PAIR(z, sg, cc)                                                            \
				wb[c] = z * sg;                                                                       \
				dzb[c] = dg[c] * sg * (1.0f + z * cc);                                                \
			}                                                                                         \
			wm_v8f pa[8];                                                                         \
			if (d64) memcpy(pa, dphi, sizeof pa);                                                 \
			for (ptrdiff_t c = c0; c < c0 + m; c++) {                                             \
				const ptrdiff_t o = (ptrdiff_t)e[c] * d;                                          \
				const float *ed = Edown + o;                                                      \
				const float w = wb[c - c0], dz = dzb[c - c0], dzs = dz * s[c];                    \
				float *dEu = dEup + o, *dEd = dEdown + o;                                         \
				_Pragma("GCC ivdep") for (ptrdiff_t j = 0; j < d; j++) {                          \
					dEu[j] += w * g[j];                                                           \
					dEd[j] += dzs * phi[j];                                                       \
				}                                                                                 \
				zs[c - c0] = dzs;                                                                 \
				for (int v = 0; d64 && v < 8; v++) {                                              \
					wm_v8f x;                                                                     \
					memcpy(&x, ed + 8 * v, sizeof x);                                             \
					pa[v] += dzs * x;                                                             \
				}                                                                                 \
				const float ds = dz * dp[c - c0];                                                 \
				dsb[c - c0] = ds;                                                                 \
				for (int p = 0; p < 2; p++) {                                                     \
					const float *qp = q + off[4 * c + 2 * p];                                     \
					float *dkp = dkeys + off[4 * c + 2 * p + 1];                                  \
					for (ptrdiff_t j = 0; j < half; j++) dkp[j] += ds * qp[j];                    \
				}                                                                                 \
			}                                                                                     \
			for (int p = 0; p < 2; p++)                                                           \
				wm_runs_axpy##SUFFIX(dq, keys, off + 4 * c0 + 2 * p, dsb, m, half);               \
			if (d64)                                                                              \
				memcpy(dphi, pa, sizeof pa);                                                      \
			else                                                                                  \
				wm_rows_axpy##SUFFIX(dphi, Edown, e + c0, zs, m, d);                              \
		}                                                                                         \
	}                                                                                             \
	ATTR void wm_cdmoe_bwd##SUFFIX(const float *g, const float *phi, const float *Edown,            \
	                               const float *Eup, const int32_t *e, const float *s, ptrdiff_t nc,  \
	                               ptrdiff_t d, float *dEdown, float *dEup, float *dphi,              \
	                               const float *q, const float *keys, const int32_t *off,             \
	                               ptrdiff_t half, float *dq, float *dkeys) {                         \
		if (d == 64 && half == 32)                                                                    \
			wm_cdmoe_bwd_body##SUFFIX(g, phi, Edown, Eup, e, s, nc, 64, dEdown, dEup, dphi, q, keys,  \
			                          off, 32, dq, dkeys, 1);                                         \
		else                                                                                          \
			wm_cdmoe_bwd_body##SUFFIX(g, phi, Edown, Eup, e, s, nc, d, dEdown, dEup, dphi, q, keys,   \
			                          off, half, dq, dkeys, 0);                                       \
	}                                                                                                 \
	ATTR void wm_cdmoe_parts##SUFFIX(const float *a, const float *base, const int32_t *e,             \
	                                 const float *w, ptrdiff_t m, ptrdiff_t n, float *dots,           \
	                                 float *dots1, float *y, float *y1, const int32_t *off, float *z, \
	                                 float *z1) {                                                     \
		wm_runs_axpy##SUFFIX(z, base, off, w, m, n);                                                  \
		for (ptrdiff_t c = 0; c < m; c++) {                                                           \
			const float *r = base + off[4 * c + 1];                                                   \
			float *zr = z1 + off[4 * c];                                                              \
			for (ptrdiff_t j = 0; j < n; j++) zr[j] += w[c] * r[j];                                   \
		}                                                                                             \
		wm_dots##SUFFIX(a, base, e, m, n, dots);                                                      \
		for (ptrdiff_t c = 0; c < m; c++) dots1[c] = wm_dot##SUFFIX(a, base + (ptrdiff_t)e[c] * n, n); \
		wm_rows_axpy##SUFFIX(y, base, e, w, m, n);                                                    \
		for (ptrdiff_t c = 0; c < m; c++) {                                                           \
			const float *r = base + (ptrdiff_t)e[c] * n;                                              \
			for (ptrdiff_t j = 0; j < n; j++) y1[j] += w[c] * r[j];                                   \
		}                                                                                             \
	}

WM_KERNELS(_sse, )
WM_GATED_KERNELS(_sse, )

// wm_row_max_sse is the largest of row[0..n) (n ≥ 1) as the Go maxOf
// finds it (v > m ? v : m from row[0]), over eight lanes; the maximum is
// exact, so only the sign of a zero maximum can depend on the order.
static float wm_row_max_sse(const float *row, ptrdiff_t n) {
	float mx[8];
	for (int l = 0; l < 8; l++) mx[l] = row[0];
	ptrdiff_t j = 0;
	for (; j + 8 <= n; j += 8)
		for (int l = 0; l < 8; l++) mx[l] = row[j + l] > mx[l] ? row[j + l] : mx[l];
	float m = mx[0];
	for (int l = 1; l < 8; l++) m = mx[l] > m ? mx[l] : m;
	for (; j < n; j++) m = row[j] > m ? row[j] : m;
	return m;
}

// wm_exp_shift_sum_sse writes e^(src−m) into dst (which may be src) and
// returns their sum in double, over four lanes.
static double wm_exp_shift_sum_sse(float *dst, const float *src, ptrdiff_t n, float m) {
	for (ptrdiff_t j = 0; j < n; j++) dst[j] = wm_exp(src[j] - m);
	double s[4] = {0, 0, 0, 0};
	ptrdiff_t j = 0;
	for (; j + 4 <= n; j += 4)
		for (int l = 0; l < 4; l++) s[l] += (double)dst[j + l];
	for (; j < n; j++) s[0] += (double)dst[j];
	return (s[0] + s[1]) + (s[2] + s[3]);
}

// wm_scale_row_sse finishes one row of the causal softmax: its first vis
// exponentials times 1/sum (rounded to float once), the rest zeroed.
static void wm_scale_row_sse(float *row, ptrdiff_t vis, ptrdiff_t n, double sum) {
	float inv = (float)(1.0 / sum);
	for (ptrdiff_t j = 0; j < vis; j++) row[j] *= inv;
	for (ptrdiff_t j = vis; j < n; j++) row[j] = 0;
}

// WM_SOFTMAX_GROUP rows of a softmax (or of a log-sum-exp) go through each
// pass before any goes through the next: their maxima, then their
// exponentials and sums, then their scaling. A row's exponentials wait on
// its maximum, and its scaling on the sum that ends its exponentials, so
// one row at a time left the core idle at each row's end while the last
// vectors finished their chains of dependent operations (wm_exp16 alone
// is about seventeen in a row); with four rows in a pass, the next row's
// vectors fill that wait. Each row is the same operations in the same
// order as one at a time, so the values are the same bits
// (TestSoftmaxRowsGroupedSameBits). On an Emerald Rapids Xeon,
// BenchmarkSoftmaxRowsVariants (64 query rows over 256 keys, the last
// block of a 256-token sequence) took 0.80 of the time of one row at a time on
// AVX-512 and 0.82 on AVX2 (medians of eight runs in turns); at 1024 keys,
// where a row is 64 vectors, grouping made no difference. Four rows of
// 1024 keys are 16 KB, so a group stays in the first-level cache between
// its passes.
#define WM_SOFTMAX_GROUP 4

// WM_SOFTMAX_ROWS defines, for one kernel level SUF (whose wm_row_max,
// wm_exp_shift_sum and wm_scale_row it uses):
//   wm_softmax_rows: the causal softmax of rows (row r sees its first
//     min(last0+r+1, n) entries; the rest are zeroed), in place;
//   wm_lse_parts_rows: for each of rows rows of n ≥ 1 logits (x and e
//     [rows, n]), its maximum in max, e^(row−max) in e and their sum in
//     double in sum.
// Both by groups of WM_SOFTMAX_GROUP rows (see there).
#define WM_SOFTMAX_ROWS(SUF, ATTR)                                                                               \
	ATTR static void wm_softmax_rows##SUF(float *p, ptrdiff_t rows, ptrdiff_t n, ptrdiff_t last0) {            \
		float m[WM_SOFTMAX_GROUP];                                                                            \
		double s[WM_SOFTMAX_GROUP];                                                                           \
		for (ptrdiff_t r0 = 0; r0 < rows; r0 += WM_SOFTMAX_GROUP) {                                           \
			const ptrdiff_t g = rows - r0 < WM_SOFTMAX_GROUP ? rows - r0 : WM_SOFTMAX_GROUP;                  \
			for (ptrdiff_t i = 0; i < g; i++) m[i] = wm_row_max##SUF(p + (r0 + i) * n, wm_visible(last0, r0 + i, n)); \
			for (ptrdiff_t i = 0; i < g; i++) {                                                               \
				float *row = p + (r0 + i) * n;                                                                \
				s[i] = wm_exp_shift_sum##SUF(row, row, wm_visible(last0, r0 + i, n), m[i]);                   \
			}                                                                                                 \
			for (ptrdiff_t i = 0; i < g; i++) wm_scale_row##SUF(p + (r0 + i) * n, wm_visible(last0, r0 + i, n), n, s[i]); \
		}                                                                                                     \
	}                                                                                                         \
	ATTR static void wm_lse_parts_rows##SUF(const float *x, float *e, ptrdiff_t rows, ptrdiff_t n, float *max, \
	                                         double *sum) {                                                   \
		for (ptrdiff_t r0 = 0; r0 < rows; r0 += WM_SOFTMAX_GROUP) {                                           \
			const ptrdiff_t g = rows - r0 < WM_SOFTMAX_GROUP ? rows - r0 : WM_SOFTMAX_GROUP;                  \
			for (ptrdiff_t i = r0; i < r0 + g; i++) max[i] = wm_row_max##SUF(x + i * n, n);                   \
			for (ptrdiff_t i = r0; i < r0 + g; i++) sum[i] = wm_exp_shift_sum##SUF(e + i * n, x + i * n, n, max[i]); \
		}                                                                                                     \
	}

// wm_visible is how many of its n entries row r of a causal softmax block
// sees: min(last0 + r + 1, n).
static inline ptrdiff_t wm_visible(ptrdiff_t last0, ptrdiff_t r, ptrdiff_t n) {
	return last0 + r + 1 < n ? last0 + r + 1 : n;
}

WM_SOFTMAX_ROWS(_sse, )

// wm_lse_parts_sse is, for one row of n ≥ 1 logits, its maximum m, e^(row−m)
// in e and their sum in double.
static double wm_lse_parts_sse(const float *row, float *e, ptrdiff_t n, float *max) {
	*max = wm_row_max_sse(row, n);
	return wm_exp_shift_sum_sse(e, row, n, *max);
}

// d = P ∘ (g − Σ_j g P) row by row; d may be g.
static void wm_softmax_grad_rows_sse(float *d, const float *p, const float *g, ptrdiff_t rows, ptrdiff_t n) {
	for (ptrdiff_t r = 0; r < rows; r++) {
		const float *pr = p + r * n, *gr = g + r * n;
		float *dr = d + r * n;
		double s[4] = {0, 0, 0, 0};
		ptrdiff_t j = 0;
		for (; j + 4 <= n; j += 4)
			for (int l = 0; l < 4; l++) s[l] += (double)gr[j + l] * (double)pr[j + l];
		for (; j < n; j++) s[0] += (double)gr[j] * (double)pr[j];
		float dot = (float)((s[0] + s[1]) + (s[2] + s[3]));
		for (j = 0; j < n; j++) dr[j] = pr[j] * (gr[j] - dot);
	}
}
// wm_ssd_mask_sse writes src [L,L] times exp(segsum) into gm (src may be
// gm), where row i of exp(segsum) is row i−1 times r_i with a 1 on the
// diagonal (row is double scratch of L), zeroes gm above the diagonal, and
// writes exp(segsum) into seg when seg is not NULL, as ssdMaskGo.
static void wm_ssd_mask_sse(float *gm, const float *src, float *seg, double *row, const double *r, ptrdiff_t L) {
	for (ptrdiff_t i = 0; i < L; i++) {
		if (i > 0) {
			double ri = r[i];
			for (ptrdiff_t j = 0; j < i; j++) row[j] *= ri;
		}
		row[i] = 1;
		float *g = gm + i * L;
		const float *sr = src + i * L;
		for (ptrdiff_t j = 0; j <= i; j++) g[j] = sr[j] * (float)row[j];
		for (ptrdiff_t j = i + 1; j < L; j++) g[j] = 0;
		if (seg != NULL) {
			float *s = seg + i * L;
			for (ptrdiff_t j = 0; j <= i; j++) s[j] = (float)row[j];
			for (ptrdiff_t j = i + 1; j < L; j++) s[j] = 0;
		}
	}
}

// wm_ssd_mask_grad_sse turns dG = Q = dY Uᵀ of a diagonal block (L×L)
// into seg∘Q (zero above the diagonal), adds R = G∘Q to dcum (dcum_i +=
// Σ_j R_ij, dcum_j −= Σ_i R_ij) and, when acc is not NULL, seg∘Q to acc's
// lower triangle, as ssdMaskGradGo, with row i's sum over four lanes. A
// float32 product in double is exact, so only the order of the sums can
// differ from Go's.
static void wm_ssd_mask_grad_sse(const float *gm, const float *seg, float *dG, double *dcum, float *acc, ptrdiff_t L) {
	for (ptrdiff_t i = 0; i < L; i++) {
		const float *g = gm + i * L, *s = seg + i * L;
		float *d = dG + i * L;
		double ri[4] = {0, 0, 0, 0};
		ptrdiff_t j = 0;
		for (; j + 4 <= i + 1; j += 4)
			for (int l = 0; l < 4; l++) {
				double rr = (double)g[j + l] * (double)d[j + l];
				ri[l] += rr;
				dcum[j + l] -= rr;
				d[j + l] *= s[j + l];
			}
		for (; j <= i; j++) {
			double rr = (double)g[j] * (double)d[j];
			ri[0] += rr;
			dcum[j] -= rr;
			d[j] *= s[j];
		}
		dcum[i] += (ri[0] + ri[1]) + (ri[2] + ri[3]);
		for (j = i + 1; j < L; j++) d[j] = 0;
		if (acc != NULL)
			for (j = 0; j <= i; j++) acc[i * L + j] += d[j];
	}
}
#ifdef WM_AVX2
WM_KERNELS(_avx2, __attribute__((target("avx2,fma"))))
WM_GATED_KERNELS(_avx2, __attribute__((target("avx2,fma"))))
#include <immintrin.h>
#include "wm_dot8.h"

// wm_exp8 is wm_exp on eight lanes, step by step: the clamps as selects that
// let NaN through, the same constants, fused multiply-adds where GCC
// contracts wm_exp's.
__attribute__((target("avx2,fma"))) static inline __m256 wm_exp8(__m256 x) {
	x = _mm256_max_ps(_mm256_set1_ps(-104.0f), x); // -104 > x ? -104 : x
	x = _mm256_min_ps(_mm256_set1_ps(89.0f), x);   // 89 < x ? 89 : x
	const __m256 shifter = _mm256_set1_ps(12582912.0f);
	__m256 n = _mm256_sub_ps(_mm256_fmadd_ps(x, _mm256_set1_ps(1.44269504088896341f), shifter), shifter);
	__m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693359375f), x);
	r = _mm256_fnmadd_ps(n, _mm256_set1_ps(-2.12194440e-4f), r);
	__m256 q = _mm256_fmadd_ps(_mm256_set1_ps(1.9875691500e-4f), r, _mm256_set1_ps(1.3981999507e-3f));
	q = _mm256_fmadd_ps(q, r, _mm256_set1_ps(8.3334519073e-3f));
	q = _mm256_fmadd_ps(q, r, _mm256_set1_ps(4.1665795894e-2f));
	q = _mm256_fmadd_ps(q, r, _mm256_set1_ps(1.6666665459e-1f));
	q = _mm256_fmadd_ps(q, r, _mm256_set1_ps(5.0000001201e-1f));
	q = _mm256_add_ps(_mm256_fmadd_ps(_mm256_mul_ps(q, r), r, r), _mm256_set1_ps(1.0f));
	__m256i e = _mm256_cvttps_epi32(n);
	__m256i h = _mm256_srai_epi32(e, 1);
	const __m256i bias = _mm256_set1_epi32(127);
	__m256 p1 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(h, bias), 23));
	__m256 p2 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(_mm256_sub_epi32(e, h), bias), 23));
	return _mm256_mul_ps(_mm256_mul_ps(q, p1), p2);
}

// wm_tail_mask8 has all bits set in the first n lanes (0 < n < 8), none in
// the others: the mask of a row's tail for maskload, maskstore and blendv.
__attribute__((target("avx2,fma"))) static inline __m256 wm_tail_mask8(ptrdiff_t n) {
	return _mm256_castsi256_ps(_mm256_cmpgt_epi32(_mm256_set1_epi32((int)n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7)));
}

// wm_row_max_avx2 is the largest of row[0..n) (n ≥ 1) as the Go maxOf
// finds it, v > m ? v : m from row[0], on eight lanes: a NaN is passed over
// unless it is row[0]; the maximum itself is exact, so only the sign of a
// zero maximum can depend on the order, which no caller reads.
__attribute__((target("avx2,fma"))) static float wm_row_max_avx2(const float *row, ptrdiff_t n) {
	ptrdiff_t j = 0;
	__m256 mx = _mm256_set1_ps(row[0]);
	for (; j + 8 <= n; j += 8) mx = _mm256_max_ps(_mm256_loadu_ps(row + j), mx);
	if (j < n) { // the tail as one masked load; lanes past the row keep the maximum
		const __m256 k = wm_tail_mask8(n - j);
		mx = _mm256_max_ps(_mm256_blendv_ps(mx, _mm256_maskload_ps(row + j, _mm256_castps_si256(k)), k), mx);
	}
	float lanes[8];
	_mm256_storeu_ps(lanes, mx);
	float m = lanes[0];
	for (int l = 1; l < 8; l++) m = lanes[l] > m ? lanes[l] : m;
	return m;
}

// wm_exp_shift_sum_avx2 writes e^(src−m) into dst (which may be src) and
// returns their sum in double, over two four-lane accumulators; the tail is
// one masked vector, not a scalar loop (causal rows end anywhere).
__attribute__((target("avx2,fma"))) static double wm_exp_shift_sum_avx2(float *dst, const float *src, ptrdiff_t n,
                                                                         float m) {
	const __m256 vm = _mm256_set1_ps(m);
	__m256d s0 = _mm256_setzero_pd(), s1 = _mm256_setzero_pd();
	ptrdiff_t j = 0;
	for (; j + 8 <= n; j += 8) {
		__m256 e = wm_exp8(_mm256_sub_ps(_mm256_loadu_ps(src + j), vm));
		_mm256_storeu_ps(dst + j, e);
		s0 = _mm256_add_pd(s0, _mm256_cvtps_pd(_mm256_castps256_ps128(e)));
		s1 = _mm256_add_pd(s1, _mm256_cvtps_pd(_mm256_extractf128_ps(e, 1)));
	}
	if (j < n) { // the tail as one masked vector; its unused lanes add zero
		const __m256 k = wm_tail_mask8(n - j);
		const __m256i ki = _mm256_castps_si256(k);
		__m256 e = _mm256_and_ps(wm_exp8(_mm256_sub_ps(_mm256_maskload_ps(src + j, ki), vm)), k);
		_mm256_maskstore_ps(dst + j, ki, e);
		s0 = _mm256_add_pd(s0, _mm256_cvtps_pd(_mm256_castps256_ps128(e)));
		s1 = _mm256_add_pd(s1, _mm256_cvtps_pd(_mm256_extractf128_ps(e, 1)));
	}
	double sl[4];
	_mm256_storeu_pd(sl, _mm256_add_pd(s0, s1));
	return (sl[0] + sl[1]) + (sl[2] + sl[3]);
}

// wm_scale_row_avx2 is wm_scale_row_sse on eight lanes, the tail as one
// masked vector (GCC had left the portable loops' maximum and sum scalar,
// hence this level's own row passes).
__attribute__((target("avx2,fma"))) static void wm_scale_row_avx2(float *row, ptrdiff_t vis, ptrdiff_t n, double sum) {
	const __m256 inv = _mm256_set1_ps((float)(1.0 / sum));
	ptrdiff_t j = 0;
	for (; j + 8 <= vis; j += 8) _mm256_storeu_ps(row + j, _mm256_mul_ps(_mm256_loadu_ps(row + j), inv));
	if (j < vis) {
		const __m256i k = _mm256_castps_si256(wm_tail_mask8(vis - j));
		_mm256_maskstore_ps(row + j, k, _mm256_mul_ps(_mm256_maskload_ps(row + j, k), inv));
	}
	if (vis < n) memset(row + vis, 0, (size_t)(n - vis) * sizeof(float));
}

WM_SOFTMAX_ROWS(_avx2, __attribute__((target("avx2,fma"))))

__attribute__((target("avx2,fma"))) static double wm_lse_parts_avx2(const float *row, float *e, ptrdiff_t n,
                                                                     float *max) {
	*max = wm_row_max_avx2(row, n);
	return wm_exp_shift_sum_avx2(e, row, n, *max);
}

// wm_softmax_grad_finish_avx2 finishes one row of the gradient, d = P ∘
// (g − Σ_j g P), from its dot product's eight double lanes (lo, hi) over
// the row's first j values: it adds the rest, folds the lanes as the
// single-row kernel did ((s0+s1)+(s2+s3) of lo + hi, then the rest), and
// writes the row (d may be g).
__attribute__((target("avx2,fma"))) static inline void wm_softmax_grad_finish_avx2(float *dr, const float *pr,
                                                                                   const float *gr, ptrdiff_t j,
                                                                                   ptrdiff_t n, __m256d lo,
                                                                                   __m256d hi) {
	double tail = 0;
	for (; j < n; j++) tail += (double)gr[j] * (double)pr[j];
	const __m256d s = _mm256_add_pd(lo, hi);
	const __m128d h = _mm256_extractf128_pd(s, 1), l = _mm256_castpd256_pd128(s);
	// ((s0+s1)+(s2+s3)) + tail
	const double s01 = _mm_cvtsd_f64(l) + _mm_cvtsd_f64(_mm_unpackhi_pd(l, l));
	const double s23 = _mm_cvtsd_f64(h) + _mm_cvtsd_f64(_mm_unpackhi_pd(h, h));
	const float dot = (float)((s01 + s23) + tail);
	const __m256 vd = _mm256_set1_ps(dot);
	for (j = 0; j + 8 <= n; j += 8) {
		__m256 pv = _mm256_loadu_ps(pr + j);
		_mm256_storeu_ps(dr + j, _mm256_mul_ps(pv, _mm256_sub_ps(_mm256_loadu_ps(gr + j), vd)));
	}
	for (; j < n; j++) dr[j] = pr[j] * (gr[j] - dot);
}

// wm_softmax_grad_rows_avx2 is the gradient with Σ_j g P in double over
// eight lanes. Four rows' dot products run side by side: one row's lanes
// are a chain of dependent fused multiply-adds (four cycles each), which
// four rows keep four of in flight. Each row's sums, and their order, are
// those of the row alone (the last rows % 4 run alone), so the bits do not
// depend on how many rows a call takes (TestSoftmaxGradRowsByFours).
__attribute__((target("avx2,fma"))) static void wm_softmax_grad_rows_avx2(float *d, const float *p, const float *g,
                                                                           ptrdiff_t rows, ptrdiff_t n) {
	ptrdiff_t r = 0;
	for (; r + 4 <= rows; r += 4) {
		const float *p0 = p + r * n, *g0 = g + r * n;
		__m256d l0 = _mm256_setzero_pd(), h0 = l0, l1 = l0, h1 = l0, l2 = l0, h2 = l0, l3 = l0, h3 = l0;
		ptrdiff_t j = 0;
		for (; j + 8 <= n; j += 8) {
			wm_dot8_step_avx2(g0 + j, p0 + j, &l0, &h0);
			wm_dot8_step_avx2(g0 + n + j, p0 + n + j, &l1, &h1);
			wm_dot8_step_avx2(g0 + 2 * n + j, p0 + 2 * n + j, &l2, &h2);
			wm_dot8_step_avx2(g0 + 3 * n + j, p0 + 3 * n + j, &l3, &h3);
		}
		wm_softmax_grad_finish_avx2(d + r * n, p0, g0, j, n, l0, h0);
		wm_softmax_grad_finish_avx2(d + (r + 1) * n, p0 + n, g0 + n, j, n, l1, h1);
		wm_softmax_grad_finish_avx2(d + (r + 2) * n, p0 + 2 * n, g0 + 2 * n, j, n, l2, h2);
		wm_softmax_grad_finish_avx2(d + (r + 3) * n, p0 + 3 * n, g0 + 3 * n, j, n, l3, h3);
	}
	for (; r < rows; r++) {
		const float *pr = p + r * n, *gr = g + r * n;
		__m256d lo = _mm256_setzero_pd(), hi = _mm256_setzero_pd();
		ptrdiff_t j = wm_dot8_avx2(gr, pr, n, &lo, &hi);
		wm_softmax_grad_finish_avx2(d + r * n, pr, gr, j, n, lo, hi);
	}
}

// wm_ssd_mask_avx2 is wm_ssd_mask_sse four entries at a time, in one pass
// over row i (GCC had vectorised only part of it): every entry takes the
// same operations, so the same bits.
__attribute__((target("avx2,fma"))) static void wm_ssd_mask_avx2(float *gm, const float *src, float *seg, double *row,
                                                                  const double *r, ptrdiff_t L) {
	for (ptrdiff_t i = 0; i < L; i++) {
		const __m256d ri = _mm256_set1_pd(i > 0 ? r[i] : 1.0);
		row[i] = 1; // the loop below scales only the entries before i
		float *g = gm + i * L, *s = seg == NULL ? NULL : seg + i * L;
		const float *sr = src + i * L;
		ptrdiff_t j = 0;
		for (; j + 4 <= i; j += 4) {
			__m256d rv = _mm256_mul_pd(_mm256_loadu_pd(row + j), ri);
			_mm256_storeu_pd(row + j, rv);
			__m128 f = _mm256_cvtpd_ps(rv);
			_mm_storeu_ps(g + j, _mm_mul_ps(_mm_loadu_ps(sr + j), f));
			if (s != NULL) _mm_storeu_ps(s + j, f);
		}
		for (; j < i; j++) {
			row[j] *= r[i];
			g[j] = sr[j] * (float)row[j];
			if (s != NULL) s[j] = (float)row[j];
		}
		g[i] = sr[i] * 1.0f;
		if (s != NULL) s[i] = 1.0f;
		if (i + 1 < L) {
			memset(g + i + 1, 0, (size_t)(L - i - 1) * sizeof(float));
			if (s != NULL) memset(s + i + 1, 0, (size_t)(L - i - 1) * sizeof(float));
		}
	}
}

// wm_ssd_mask_grad_avx2 is wm_ssd_mask_grad_sse on four double lanes (GCC
// had left it scalar): the same lanes, so the same bits.
__attribute__((target("avx2,fma"))) static void wm_ssd_mask_grad_avx2(const float *gm, const float *seg, float *dG,
                                                                       double *dcum, float *acc, ptrdiff_t L) {
	for (ptrdiff_t i = 0; i < L; i++) {
		const float *g = gm + i * L, *s = seg + i * L;
		float *d = dG + i * L, *a = acc == NULL ? NULL : acc + i * L;
		__m256d sum = _mm256_setzero_pd();
		ptrdiff_t j = 0;
		for (; j + 4 <= i + 1; j += 4) {
			__m128 dv = _mm_loadu_ps(d + j);
			__m256d rr = _mm256_mul_pd(_mm256_cvtps_pd(_mm_loadu_ps(g + j)), _mm256_cvtps_pd(dv));
			sum = _mm256_add_pd(sum, rr);
			_mm256_storeu_pd(dcum + j, _mm256_sub_pd(_mm256_loadu_pd(dcum + j), rr));
			dv = _mm_mul_ps(dv, _mm_loadu_ps(s + j));
			_mm_storeu_ps(d + j, dv);
			if (a != NULL) _mm_storeu_ps(a + j, _mm_add_ps(_mm_loadu_ps(a + j), dv));
		}
		double ri[4];
		_mm256_storeu_pd(ri, sum);
		for (; j <= i; j++) {
			double rr = (double)g[j] * (double)d[j];
			ri[0] += rr;
			dcum[j] -= rr;
			d[j] *= s[j];
			if (a != NULL) a[j] += d[j];
		}
		dcum[i] += (ri[0] + ri[1]) + (ri[2] + ri[3]);
		if (i + 1 < L) memset(d + i + 1, 0, (size_t)(L - i - 1) * sizeof(float));
	}
}

// The AVX-512 variant: the elementwise kernels compiled for 16 lanes, and
// the softmax rows and log-sum-exp parts in intrinsics (wm_exp16 gives
// wm_exp8's bits on sixteen lanes).
// Their double sums run over two eight-lane accumulators, so they round
// differently from the AVX2 ones (both held to the float64 definition).
#define WM_AVX512_ATTR __attribute__((target("avx512f,avx512dq,avx2,fma,prefer-vector-width=512")))
WM_KERNELS(_avx512, WM_AVX512_ATTR)

// wm_exp16 takes wm_exp8's steps on sixteen lanes up to the polynomial,
// then scales by 2^n in one vscalefps instead of two exponent-field
// factors: the result is the same to the bit (q·2^n is exact for a normal
// result, and rounded once for a subnormal one, in either), which
// TestExp16EqualsExp8 checks over a sweep of every float32 exponent; it
// made the softmax rows 10% faster here.
WM_AVX512_ATTR static inline __m512 wm_exp16(__m512 x) {
	x = _mm512_max_ps(_mm512_set1_ps(-104.0f), x); // -104 > x ? -104 : x
	x = _mm512_min_ps(_mm512_set1_ps(89.0f), x);   // 89 < x ? 89 : x
	const __m512 shifter = _mm512_set1_ps(12582912.0f);
	__m512 n = _mm512_sub_ps(_mm512_fmadd_ps(x, _mm512_set1_ps(1.44269504088896341f), shifter), shifter);
	__m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375f), x);
	r = _mm512_fnmadd_ps(n, _mm512_set1_ps(-2.12194440e-4f), r);
	__m512 q = _mm512_fmadd_ps(_mm512_set1_ps(1.9875691500e-4f), r, _mm512_set1_ps(1.3981999507e-3f));
	q = _mm512_fmadd_ps(q, r, _mm512_set1_ps(8.3334519073e-3f));
	q = _mm512_fmadd_ps(q, r, _mm512_set1_ps(4.1665795894e-2f));
	q = _mm512_fmadd_ps(q, r, _mm512_set1_ps(1.6666665459e-1f));
	q = _mm512_fmadd_ps(q, r, _mm512_set1_ps(5.0000001201e-1f));
	q = _mm512_add_ps(_mm512_fmadd_ps(_mm512_mul_ps(q, r), r, r), _mm512_set1_ps(1.0f));
	return _mm512_scalef_ps(q, n);
}

// wm_tail_mask selects the first n lanes (0 ≤ n < 16).
static inline __mmask16 wm_tail_mask(ptrdiff_t n) { return (__mmask16)((1u << n) - 1u); }

// wm_row_max_avx512 is wm_row_max_avx2 on sixteen lanes, the tail as one
// masked load (lanes past the row keep the running maximum). Every lane
// starts from row[0], so either all lanes are NaN (row[0] is) or none.
WM_AVX512_ATTR static float wm_row_max_avx512(const float *row, ptrdiff_t n) {
	ptrdiff_t j = 0;
	__m512 mx = _mm512_set1_ps(row[0]);
	for (; j + 16 <= n; j += 16) mx = _mm512_max_ps(_mm512_loadu_ps(row + j), mx);
	if (j < n) mx = _mm512_max_ps(_mm512_mask_loadu_ps(mx, wm_tail_mask(n - j), row + j), mx);
	return _mm512_reduce_max_ps(mx);
}

// wm_exp_shift_sum_avx512 writes e^(src−m) into dst (which may be src) and
// returns their sum in double, over two eight-lane accumulators; the tail
// is one masked vector (its unused lanes add zero), not a scalar loop:
// causal rows end anywhere, and at 256 keys the scalar tails cost as much
// as the vectors.
WM_AVX512_ATTR static double wm_exp_shift_sum_avx512(float *dst, const float *src, ptrdiff_t n, float m) {
	const __m512 vm = _mm512_set1_ps(m);
	__m512d s0 = _mm512_setzero_pd(), s1 = _mm512_setzero_pd();
	ptrdiff_t j = 0;
	for (; j + 16 <= n; j += 16) {
		__m512 e = wm_exp16(_mm512_sub_ps(_mm512_loadu_ps(src + j), vm));
		_mm512_storeu_ps(dst + j, e);
		s0 = _mm512_add_pd(s0, _mm512_cvtps_pd(_mm512_castps512_ps256(e)));
		s1 = _mm512_add_pd(s1, _mm512_cvtps_pd(_mm512_extractf32x8_ps(e, 1)));
	}
	if (j < n) {
		const __mmask16 k = wm_tail_mask(n - j);
		__m512 e = _mm512_maskz_mov_ps(k, wm_exp16(_mm512_sub_ps(_mm512_maskz_loadu_ps(k, src + j), vm)));
		_mm512_mask_storeu_ps(dst + j, k, e);
		s0 = _mm512_add_pd(s0, _mm512_cvtps_pd(_mm512_castps512_ps256(e)));
		s1 = _mm512_add_pd(s1, _mm512_cvtps_pd(_mm512_extractf32x8_ps(e, 1)));
	}
	double sl[8];
	_mm512_storeu_pd(sl, _mm512_add_pd(s0, s1));
	return ((sl[0] + sl[1]) + (sl[2] + sl[3])) + ((sl[4] + sl[5]) + (sl[6] + sl[7]));
}

// wm_scale_row_avx512 is wm_scale_row_avx2 on sixteen lanes.
WM_AVX512_ATTR static void wm_scale_row_avx512(float *row, ptrdiff_t vis, ptrdiff_t n, double sum) {
	const __m512 vi = _mm512_set1_ps((float)(1.0 / sum));
	ptrdiff_t j = 0;
	for (; j + 16 <= vis; j += 16) _mm512_storeu_ps(row + j, _mm512_mul_ps(_mm512_loadu_ps(row + j), vi));
	if (j < vis) {
		const __mmask16 k = wm_tail_mask(vis - j);
		_mm512_mask_storeu_ps(row + j, k, _mm512_mul_ps(_mm512_maskz_loadu_ps(k, row + j), vi));
	}
	if (vis < n) memset(row + vis, 0, (size_t)(n - vis) * sizeof(float));
}

WM_SOFTMAX_ROWS(_avx512, WM_AVX512_ATTR)

WM_AVX512_ATTR static double wm_lse_parts_avx512(const float *row, float *e, ptrdiff_t n, float *max) {
	*max = wm_row_max_avx512(row, n);
	return wm_exp_shift_sum_avx512(e, row, n, *max);
}

// The gated SiLU and its gradient in intrinsics. Compiled from WM_KERNELS,
// GCC split each vector into wm_exp's clamp cases and divided twice (the
// general case and the clamped one, blended after): 0.46 ns per value on
// the Zen 4, where one division per vector is the floor. These take
// wm_exp16 on the clamped argument and divide once, with the operations of
// WM_KERNELS' loops in their order: y = (x·z) / (1 + e^−z), and for the
// gradient s = 1 / (1 + e^−z), c = e^−z·s (1 where e^−z overflows),
// dx = (g·z)·s, dz = ((g·x)·s)·(1 + z·c) with 1 + z·c fused, as GCC
// contracts it. 1 + e^−z is one rounding in both: GCC fuses wm_exp's last
// product with the add, and that product is exact wherever the sum is not
// 1. So the values are the AVX2 variant's to the bit
// (TestGatedSiLU16EqualsAVX2). The tail is one masked vector.
WM_AVX512_ATTR static inline __m512 wm_gated_silu16(__m512 x, __m512 z) {
	__m512 e = wm_exp16(_mm512_sub_ps(_mm512_setzero_ps(), z));
	return _mm512_div_ps(_mm512_mul_ps(x, z), _mm512_add_ps(_mm512_set1_ps(1.0f), e));
}

WM_AVX512_ATTR static void wm_gated_silu_avx512(float *y, const float *x, const float *z, ptrdiff_t n) {
	ptrdiff_t i = 0;
	for (; i + 16 <= n; i += 16) _mm512_storeu_ps(y + i, wm_gated_silu16(_mm512_loadu_ps(x + i), _mm512_loadu_ps(z + i)));
	if (i < n) {
		const __mmask16 k = wm_tail_mask(n - i);
		_mm512_mask_storeu_ps(y + i, k, wm_gated_silu16(_mm512_maskz_loadu_ps(k, x + i), _mm512_maskz_loadu_ps(k, z + i)));
	}
}

// wm_gated_silu_grad16 writes the gradients of sixteen values (see above)
// and, where y is not NULL, their gated SiLU from the same exponential.
// Inlined into the two loops below, with y NULL in one of them.
WM_AVX512_ATTR static inline __attribute__((always_inline)) void wm_gated_silu_grad16(float *y, float *dx, float *dz,
                                                                                      __m512 g, __m512 x, __m512 z,
                                                                                      __mmask16 k) {
	const __m512 one = _mm512_set1_ps(1.0f);
	__m512 e = wm_exp16(_mm512_sub_ps(_mm512_setzero_ps(), z));
	__m512 d = _mm512_add_ps(one, e);
	__m512 s = _mm512_div_ps(one, d);
	__m512 c = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(e, _mm512_set1_ps(FLT_MAX), _CMP_GT_OQ), _mm512_mul_ps(e, s), one);
	if (y != NULL) _mm512_mask_storeu_ps(y, k, _mm512_div_ps(_mm512_mul_ps(x, z), d));
	_mm512_mask_storeu_ps(dx, k, _mm512_mul_ps(_mm512_mul_ps(g, z), s));
	_mm512_mask_storeu_ps(dz, k, _mm512_mul_ps(_mm512_mul_ps(_mm512_mul_ps(g, x), s), _mm512_fmadd_ps(z, c, one)));
}

// wm_gated_silu_grads_avx512 runs wm_gated_silu_grad16 over n values, the
// tail as one masked vector.
WM_AVX512_ATTR static inline __attribute__((always_inline)) void wm_gated_silu_grads_avx512(
	float *y, float *dx, float *dz, const float *g, const float *x, const float *z, ptrdiff_t n) {
	ptrdiff_t i = 0;
	for (; i + 16 <= n; i += 16)
		wm_gated_silu_grad16(y == NULL ? NULL : y + i, dx + i, dz + i, _mm512_loadu_ps(g + i), _mm512_loadu_ps(x + i),
		                     _mm512_loadu_ps(z + i), 0xffff);
	if (i < n) {
		const __mmask16 k = wm_tail_mask(n - i);
		wm_gated_silu_grad16(y == NULL ? NULL : y + i, dx + i, dz + i, _mm512_maskz_loadu_ps(k, g + i),
		                     _mm512_maskz_loadu_ps(k, x + i), _mm512_maskz_loadu_ps(k, z + i), k);
	}
}

WM_AVX512_ATTR static void wm_gated_silu_grad_avx512(float *dx, float *dz, const float *g, const float *x, const float *z,
                                                    ptrdiff_t n) {
	wm_gated_silu_grads_avx512(NULL, dx, dz, g, x, z, n);
}

// wm_gated_silu_both_avx512 is the gated SiLU and its gradients from one
// exponential: the same operations as the two kernels above.
WM_AVX512_ATTR static void wm_gated_silu_both_avx512(float *y, float *dx, float *dz, const float *g, const float *x,
                                                    const float *z, ptrdiff_t n) {
	wm_gated_silu_grads_avx512(y, dx, dz, g, x, z, n);
}

// wm_softmax_grad_finish_avx512 is wm_softmax_grad_finish_avx2 with the
// row's eight lanes in one register: its halves added are lo + hi, folded
// as there ((s0+s1)+(s2+s3), then the rest of the row's products), and the
// row is written sixteen values at a time, then eight, then one by one.
WM_AVX512_ATTR static inline __attribute__((always_inline)) void wm_softmax_grad_finish_avx512(
	float *dr, const float *pr, const float *gr, ptrdiff_t j, ptrdiff_t n, __m512d l) {
	double tail = 0;
	for (; j < n; j++) tail += (double)gr[j] * (double)pr[j];
	const __m256d s = _mm256_add_pd(_mm512_castpd512_pd256(l), _mm512_extractf64x4_pd(l, 1));
	const __m128d h = _mm256_extractf128_pd(s, 1), lo = _mm256_castpd256_pd128(s);
	const double s01 = _mm_cvtsd_f64(lo) + _mm_cvtsd_f64(_mm_unpackhi_pd(lo, lo));
	const double s23 = _mm_cvtsd_f64(h) + _mm_cvtsd_f64(_mm_unpackhi_pd(h, h));
	const float dot = (float)((s01 + s23) + tail);
	const __m512 vd = _mm512_set1_ps(dot);
	ptrdiff_t q = 0;
	for (; q + 16 <= n; q += 16)
		_mm512_storeu_ps(dr + q, _mm512_mul_ps(_mm512_loadu_ps(pr + q), _mm512_sub_ps(_mm512_loadu_ps(gr + q), vd)));
	if (q + 8 <= n) {
		const __m256 vd8 = _mm512_castps512_ps256(vd);
		_mm256_storeu_ps(dr + q, _mm256_mul_ps(_mm256_loadu_ps(pr + q), _mm256_sub_ps(_mm256_loadu_ps(gr + q), vd8)));
		q += 8;
	}
	for (; q < n; q++) dr[q] = pr[q] * (gr[q] - dot);
}

// wm_softmax_grad_step_avx512 adds a[q]·b[q] for q < 8 into lane q of l.
WM_AVX512_ATTR static inline __attribute__((always_inline)) __m512d wm_softmax_grad_step_avx512(const float *a,
                                                                                               const float *b,
                                                                                               __m512d l) {
	return _mm512_fmadd_pd(_mm512_cvtps_pd(_mm256_loadu_ps(a)), _mm512_cvtps_pd(_mm256_loadu_ps(b)), l);
}

// wm_softmax_grad_rows_avx512 is wm_softmax_grad_rows_avx2 with each row's
// eight lanes in one register, four rows side by side: each row's sums, and
// their order, are those of the row alone.
WM_AVX512_ATTR static void wm_softmax_grad_rows_avx512(float *d, const float *p, const float *g, ptrdiff_t rows,
                                                       ptrdiff_t n) {
	ptrdiff_t r = 0;
	for (; r + 4 <= rows; r += 4) {
		const float *p0 = p + r * n, *g0 = g + r * n;
		__m512d l0 = _mm512_setzero_pd(), l1 = l0, l2 = l0, l3 = l0;
		ptrdiff_t j = 0;
		for (; j + 8 <= n; j += 8) {
			l0 = wm_softmax_grad_step_avx512(g0 + j, p0 + j, l0);
			l1 = wm_softmax_grad_step_avx512(g0 + n + j, p0 + n + j, l1);
			l2 = wm_softmax_grad_step_avx512(g0 + 2 * n + j, p0 + 2 * n + j, l2);
			l3 = wm_softmax_grad_step_avx512(g0 + 3 * n + j, p0 + 3 * n + j, l3);
		}
		wm_softmax_grad_finish_avx512(d + r * n, p0, g0, j, n, l0);
		wm_softmax_grad_finish_avx512(d + (r + 1) * n, p0 + n, g0 + n, j, n, l1);
		wm_softmax_grad_finish_avx512(d + (r + 2) * n, p0 + 2 * n, g0 + 2 * n, j, n, l2);
		wm_softmax_grad_finish_avx512(d + (r + 3) * n, p0 + 3 * n, g0 + 3 * n, j, n, l3);
	}
	for (; r < rows; r++) {
		const float *pr = p + r * n, *gr = g + r * n;
		__m512d l = _mm512_setzero_pd();
		ptrdiff_t j = 0;
		for (; j + 8 <= n; j += 8) l = wm_softmax_grad_step_avx512(gr + j, pr + j, l);
		wm_softmax_grad_finish_avx512(d + r * n, pr, gr, j, n, l);
	}
}

// wm_rows_axpy_zmm is wm_rows_axpy on sixteen lanes, for n a multiple of
// 16: y[j] + Σ_c w[c]·base[e[c]·n + j], 64 values at a time in four
// vectors and then 16 at a time, each value over the experts in their
// order by one multiply-add each, so wm_rows_axpy's bits.
WM_AVX512_ATTR static inline __attribute__((always_inline)) void wm_rows_axpy_zmm(float *y, const float *base,
                                                                                  const int32_t *e, const float *w,
                                                                                  ptrdiff_t m, ptrdiff_t n) {
	ptrdiff_t j0 = 0;
	for (; j0 + 64 <= n; j0 += 64) {
		__m512 a[4];
		for (int v = 0; v < 4; v++) a[v] = _mm512_loadu_ps(y + j0 + 16 * v);
		for (ptrdiff_t c = 0; c < m; c++) {
			const float *r = base + (ptrdiff_t)e[c] * n + j0;
			const __m512 wc = _mm512_set1_ps(w[c]);
			for (int v = 0; v < 4; v++) a[v] = _mm512_fmadd_ps(wc, _mm512_loadu_ps(r + 16 * v), a[v]);
		}
		for (int v = 0; v < 4; v++) _mm512_storeu_ps(y + j0 + 16 * v, a[v]);
	}
	for (; j0 < n; j0 += 16) {
		__m512 a = _mm512_loadu_ps(y + j0);
		for (ptrdiff_t c = 0; c < m; c++)
			a = _mm512_fmadd_ps(_mm512_set1_ps(w[c]), _mm512_loadu_ps(base + (ptrdiff_t)e[c] * n + j0), a);
		_mm512_storeu_ps(y + j0, a);
	}
}

// wm_cdmoe_bwd_body_zmm is wm_cdmoe_bwd's body with the rows it updates
// on sixteen lanes, for d_model a multiple of 16 and query halves of 16,
// 32, 48 or 64: each expert's rows of dEup and dEdown, the two keys' rows
// of dkeys, dq's runs and the token's dφ (in four vectors over a block at
// d_model 64, as the AVX2 body's eight; summed over a block's experts 64
// values at a time otherwise, by wm_rows_axpy_zmm). Each value takes the same
// multiply-adds in the same order as in the AVX2 body, so the same bits
// (TestCDMoEExpertsAVX512KeepBits); the dots stay in wm_dots' eight-lane
// order and fold. A choice updates four rows, read and written back: on
// sixteen lanes that is half the loads and stores, which were most of this
// kernel's time at d_model 64.
WM_AVX512_ATTR static inline __attribute__((always_inline)) void wm_cdmoe_bwd_body_zmm(
    const float *g, const float *phi, const float *Edown, const float *Eup, const int32_t *e, const float *s,
    ptrdiff_t nc, const ptrdiff_t d, float *dEdown, float *dEup, float *dphi, const float *q, const float *keys,
    const int32_t *off, const ptrdiff_t half, float *dq, float *dkeys, const int d64) {
	float dp[WM_CDMOE_BLOCK], dg[WM_CDMOE_BLOCK], wb[WM_CDMOE_BLOCK], dzb[WM_CDMOE_BLOCK];
	float zs[WM_CDMOE_BLOCK], dsb[WM_CDMOE_BLOCK];
	const ptrdiff_t hv = half / 16;
	// At d_model 64 the token's g and φ stay in registers: read from
	// memory, they would be read again after every store to a row (the
	// compiler cannot know the rows are other arrays).
	__m512 gv[4], pv[4];
	if (d64)
		for (int v = 0; v < 4; v++) gv[v] = _mm512_loadu_ps(g + 16 * v), pv[v] = _mm512_loadu_ps(phi + 16 * v);
	for (ptrdiff_t c0 = 0; c0 < nc; c0 += WM_CDMOE_BLOCK) {
		const ptrdiff_t m = nc - c0 < WM_CDMOE_BLOCK ? nc - c0 : WM_CDMOE_BLOCK;
		wm_dots_avx512(phi, Edown, e + c0, m, d, dp);
		wm_dots_avx512(g, Eup, e + c0, m, d, dg);
		for (ptrdiff_t c = 0; c < m; c++) {
			float z = dp[c] * s[c0 + c];
			WM_SIGMOID_PAIR(z, sg, cc)
			wb[c] = z * sg;
			dzb[c] = dg[c] * sg * (1.0f + z * cc);
		}
		__m512 pa[4];
		if (d64)
			for (int v = 0; v < 4; v++) pa[v] = _mm512_loadu_ps(dphi + 16 * v);
		for (ptrdiff_t c = c0; c < c0 + m; c++) {
			const ptrdiff_t o = (ptrdiff_t)e[c] * d;
			const float dz = dzb[c - c0], dzs = dz * s[c];
			const __m512 w = _mm512_set1_ps(wb[c - c0]), vzs = _mm512_set1_ps(dzs);
			float *dEu = dEup + o, *dEd = dEdown + o;
			for (ptrdiff_t j = 0; j < d; j += 16) {
				const __m512 gj = d64 ? gv[j / 16] : _mm512_loadu_ps(g + j);
				const __m512 pj = d64 ? pv[j / 16] : _mm512_loadu_ps(phi + j);
				_mm512_storeu_ps(dEu + j, _mm512_fmadd_ps(w, gj, _mm512_loadu_ps(dEu + j)));
				_mm512_storeu_ps(dEd + j, _mm512_fmadd_ps(vzs, pj, _mm512_loadu_ps(dEd + j)));
			}
			zs[c - c0] = dzs;
			if (d64)
				for (int v = 0; v < 4; v++) pa[v] = _mm512_fmadd_ps(vzs, _mm512_loadu_ps(Edown + o + 16 * v), pa[v]);
			const float ds = dz * dp[c - c0];
			dsb[c - c0] = ds;
			const __m512 vds = _mm512_set1_ps(ds);
			for (int p = 0; p < 2; p++) {
				const float *qp = q + off[4 * c + 2 * p];
				float *dkp = dkeys + off[4 * c + 2 * p + 1];
				for (ptrdiff_t j = 0; j < half; j += 16)
					_mm512_storeu_ps(dkp + j, _mm512_fmadd_ps(vds, _mm512_loadu_ps(qp + j), _mm512_loadu_ps(dkp + j)));
			}
		}
		// dq: each head's half summed over its run of choices, as
		// wm_runs_axpy does.
		for (int p = 0; p < 2; p++) {
			const int32_t *op = off + 4 * c0 + 2 * p;
			for (ptrdiff_t c = 0; c < m;) {
				ptrdiff_t end = c + 1;
				while (end < m && op[4 * end] == op[4 * c]) end++;
				float *yr = dq + op[4 * c];
				__m512 a[4];
				for (ptrdiff_t v = 0; v < hv; v++) a[v] = _mm512_loadu_ps(yr + 16 * v);
				for (ptrdiff_t i = c; i < end; i++) {
					const float *r = keys + op[4 * i + 1];
					const __m512 wi = _mm512_set1_ps(dsb[i]);
					for (ptrdiff_t v = 0; v < hv; v++) a[v] = _mm512_fmadd_ps(wi, _mm512_loadu_ps(r + 16 * v), a[v]);
				}
				for (ptrdiff_t v = 0; v < hv; v++) _mm512_storeu_ps(yr + 16 * v, a[v]);
				c = end;
			}
		}
		if (d64) {
			for (int v = 0; v < 4; v++) _mm512_storeu_ps(dphi + 16 * v, pa[v]);
			continue;
		}
		wm_rows_axpy_zmm(dphi, Edown, e + c0, zs, m, d);
	}
}

// wm_cdmoe_fwd_zmm_ok and wm_cdmoe_bwd_zmm_ok say whether the sixteen-lane
// kernels take these sizes; the AVX2 ones run the others.
static inline int wm_cdmoe_fwd_zmm_ok(ptrdiff_t d) { return d > 0 && d % 16 == 0; }
static inline int wm_cdmoe_bwd_zmm_ok(ptrdiff_t d, ptrdiff_t half) {
	return wm_cdmoe_fwd_zmm_ok(d) && half > 0 && half % 16 == 0 && half <= 64;
}

// wm_cdmoe_bwd_zmm runs the body with d_model 64 and halves of 32 as
// constants (the benchmarks' small models; GCC unrolls the short loops),
// or with the sizes given.
WM_AVX512_ATTR static void wm_cdmoe_bwd_zmm(const float *g, const float *phi, const float *Edown, const float *Eup,
                                            const int32_t *e, const float *s, ptrdiff_t nc, ptrdiff_t d,
                                            float *dEdown, float *dEup, float *dphi, const float *q,
                                            const float *keys, const int32_t *off, ptrdiff_t half, float *dq,
                                            float *dkeys) {
	if (d == 64 && half == 32)
		wm_cdmoe_bwd_body_zmm(g, phi, Edown, Eup, e, s, nc, 64, dEdown, dEup, dphi, q, keys, off, 32, dq, dkeys, 1);
	else
		wm_cdmoe_bwd_body_zmm(g, phi, Edown, Eup, e, s, nc, d, dEdown, dEup, dphi, q, keys, off, half, dq, dkeys, 0);
}

// wm_cdmoe_fwd_zmm is wm_cdmoe_fwd for d_model a multiple of 16 with the
// token's output summed over a block's experts on sixteen lanes, 64 values
// at a time and then 16, each value over the experts in their order by the
// same multiply-adds as wm_rows_axpy's eight lanes, so the same bits
// (TestCDMoEExpertsAVX512KeepBits); the dots and the activation are
// wm_cdmoe_fwd's. d_model 64 runs as a constant.
WM_AVX512_ATTR static inline __attribute__((always_inline)) void wm_cdmoe_fwd_body_zmm(
    float *y, const float *phi, const float *Edown, const float *Eup, const int32_t *e, const float *s, ptrdiff_t nc,
    const ptrdiff_t d) {
	float w[WM_CDMOE_BLOCK];
	for (ptrdiff_t c0 = 0; c0 < nc; c0 += WM_CDMOE_BLOCK) {
		const ptrdiff_t m = nc - c0 < WM_CDMOE_BLOCK ? nc - c0 : WM_CDMOE_BLOCK;
		const int32_t *eb = e + c0;
		wm_dots_avx512(phi, Edown, eb, m, d, w);
		for (ptrdiff_t c = 0; c < m; c++) {
			float z = w[c] * s[c0 + c];
			w[c] = z / (1.0f + wm_exp(-z));
		}
		wm_rows_axpy_zmm(y, Eup, eb, w, m, d);
	}
}

WM_AVX512_ATTR static void wm_cdmoe_fwd_zmm(float *y, const float *phi, const float *Edown, const float *Eup,
                                            const int32_t *e, const float *s, ptrdiff_t nc, ptrdiff_t d) {
	if (d == 64)
		wm_cdmoe_fwd_body_zmm(y, phi, Edown, Eup, e, s, nc, 64);
	else
		wm_cdmoe_fwd_body_zmm(y, phi, Edown, Eup, e, s, nc, d);
}

static int wm_has_avx512(void) {
	__builtin_cpu_init();
	return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") &&
	       __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
}

static int wm_has_avx2(void) {
	__builtin_cpu_init();
	return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
}
#else
static int wm_has_avx2(void) { return 0; }
static int wm_has_avx512(void) { return 0; }
#define wm_silu_avx512 wm_silu_sse
#define wm_silu_grad_avx512 wm_silu_grad_sse
#define wm_gated_silu_avx512 wm_gated_silu_sse
#define wm_gated_silu_grad_avx512 wm_gated_silu_grad_sse
#define wm_gated_silu_both_avx512 wm_gated_silu_both_sse
#define wm_exp_shift_avx512 wm_exp_shift_sse
#define wm_softplus_avx512 wm_softplus_sse
#define wm_sigmoid_avx512 wm_sigmoid_sse
#define wm_softmax_rows_avx512 wm_softmax_rows_sse
#define wm_lse_parts_rows_avx512 wm_lse_parts_rows_sse
#define wm_lse_parts_avx512 wm_lse_parts_sse
#define wm_softmax_grad_rows_avx512 wm_softmax_grad_rows_sse
#define wm_silu_avx2 wm_silu_sse
#define wm_silu_grad_avx2 wm_silu_grad_sse
#define wm_gated_silu_avx2 wm_gated_silu_sse
#define wm_gated_silu_grad_avx2 wm_gated_silu_grad_sse
#define wm_gated_silu_both_avx2 wm_gated_silu_both_sse
#define wm_exp_shift_avx2 wm_exp_shift_sse
#define wm_softplus_avx2 wm_softplus_sse
#define wm_sigmoid_avx2 wm_sigmoid_sse
#define wm_softmax_rows_avx2 wm_softmax_rows_sse
#define wm_lse_parts_rows_avx2 wm_lse_parts_rows_sse
#define wm_softmax_grad_rows_avx2 wm_softmax_grad_rows_sse
#define wm_lse_parts_avx2 wm_lse_parts_sse
#define wm_ssd_mask_avx2 wm_ssd_mask_sse
#define wm_ssd_mask_grad_avx2 wm_ssd_mask_grad_sse
#define wm_cdmoe_fwd_avx2 wm_cdmoe_fwd_sse
#define wm_cdmoe_bwd_avx2 wm_cdmoe_bwd_sse
#define wm_cdmoe_bwd_zmm wm_cdmoe_bwd_sse
#define wm_cdmoe_fwd_zmm wm_cdmoe_fwd_sse
#define wm_cdmoe_fwd_zmm_ok(d) 0
#define wm_cdmoe_bwd_zmm_ok(d, half) 0
#define wm_cdmoe_parts_avx2 wm_cdmoe_parts_sse
#endif

// The entry points Go calls, through the variant chosen once: 2 for
// AVX-512, 1 for AVX2+FMA, 0 for SSE2 (setKernelLevel in Go sets it
// through wm_set_level; tests force lower ones). The SSD masks and CDMoE
// have no AVX-512 variant: level 2 runs their AVX2 one (GCC's AVX-512 build
// of CDMoE's kernels rounds differently).
static int wm_level = -1;
static int wm_best_level(void) { return wm_has_avx512() ? 2 : wm_has_avx2() ? 1 : 0; }
static inline int wm_use_avx2(void) {
	if (wm_level < 0) wm_level = wm_best_level();
	return wm_level >= 1;
}
static inline int wm_use_avx512(void) {
	if (wm_level < 0) wm_level = wm_best_level();
	return wm_level >= 2;
}
static int wm_get_level(void) {
	if (wm_level < 0) wm_level = wm_best_level();
	return wm_level;
}
static int wm_set_level(int most) {
	int best = wm_best_level();
	wm_level = most < best ? most : best;
	return wm_level;
}
static void wm_silu(float *y, const float *x, const float *s, ptrdiff_t n) {
	if (wm_use_avx512()) wm_silu_avx512(y, x, s, n);
	else if (wm_use_avx2()) wm_silu_avx2(y, x, s, n);
	else wm_silu_sse(y, x, s, n);
}
static void wm_silu_grad(float *y, const float *x, const float *s, ptrdiff_t n) {
	if (wm_use_avx512()) wm_silu_grad_avx512(y, x, s, n);
	else if (wm_use_avx2()) wm_silu_grad_avx2(y, x, s, n);
	else wm_silu_grad_sse(y, x, s, n);
}
static void wm_gated_silu(float *y, const float *x, const float *z, ptrdiff_t n) {
	if (wm_use_avx512()) wm_gated_silu_avx512(y, x, z, n);
	else if (wm_use_avx2()) wm_gated_silu_avx2(y, x, z, n);
	else wm_gated_silu_sse(y, x, z, n);
}
static void wm_gated_silu_grad(float *dx, float *dz, const float *g, const float *x, const float *z, ptrdiff_t n) {
	if (wm_use_avx512()) wm_gated_silu_grad_avx512(dx, dz, g, x, z, n);
	else if (wm_use_avx2()) wm_gated_silu_grad_avx2(dx, dz, g, x, z, n);
	else wm_gated_silu_grad_sse(dx, dz, g, x, z, n);
}
static void wm_gated_silu_both(float *y, float *dx, float *dz, const float *g, const float *x, const float *z, ptrdiff_t n) {
	if (wm_use_avx512()) wm_gated_silu_both_avx512(y, dx, dz, g, x, z, n);
	else if (wm_use_avx2()) wm_gated_silu_both_avx2(y, dx, dz, g, x, z, n);
	else wm_gated_silu_both_sse(y, dx, dz, g, x, z, n);
}
static void wm_exp_shift(float *y, ptrdiff_t n, float m) {
	if (wm_use_avx512()) wm_exp_shift_avx512(y, n, m);
	else if (wm_use_avx2()) wm_exp_shift_avx2(y, n, m);
	else wm_exp_shift_sse(y, n, m);
}
static void wm_softplus(float *y, const float *x, const float *s, ptrdiff_t n) {
	if (wm_use_avx512()) wm_softplus_avx512(y, x, s, n);
	else if (wm_use_avx2()) wm_softplus_avx2(y, x, s, n);
	else wm_softplus_sse(y, x, s, n);
}
static void wm_sigmoid(float *y, const float *x, const float *s, ptrdiff_t n) {
	if (wm_use_avx512()) wm_sigmoid_avx512(y, x, s, n);
	else if (wm_use_avx2()) wm_sigmoid_avx2(y, x, s, n);
	else wm_sigmoid_sse(y, x, s, n);
}
static void wm_softmax_rows(float *p, ptrdiff_t rows, ptrdiff_t n, ptrdiff_t last0) {
	if (wm_use_avx512()) wm_softmax_rows_avx512(p, rows, n, last0);
	else if (wm_use_avx2()) wm_softmax_rows_avx2(p, rows, n, last0);
	else wm_softmax_rows_sse(p, rows, n, last0);
}
static void wm_ssd_mask(float *gm, const float *src, float *seg, double *row, const double *r, ptrdiff_t L) {
	if (wm_use_avx2()) wm_ssd_mask_avx2(gm, src, seg, row, r, L); else wm_ssd_mask_sse(gm, src, seg, row, r, L);
}
static void wm_ssd_mask_grad(const float *gm, const float *seg, float *dG, double *dcum, float *acc, ptrdiff_t L) {
	if (wm_use_avx2()) wm_ssd_mask_grad_avx2(gm, seg, dG, dcum, acc, L); else wm_ssd_mask_grad_sse(gm, seg, dG, dcum, acc, L);
}
static double wm_lse_parts(const float *row, float *e, ptrdiff_t n, float *max) {
	if (wm_use_avx512()) return wm_lse_parts_avx512(row, e, n, max);
	return wm_use_avx2() ? wm_lse_parts_avx2(row, e, n, max) : wm_lse_parts_sse(row, e, n, max);
}
// wm_lse_parts_rows is wm_lse_parts of rows rows of n ≥ 1 logits each (x
// and e [rows, n]), their maxima and sums in max and sum: one call from Go
// for a block of rows instead of one a row, taken by groups of
// WM_SOFTMAX_GROUP rows.
static void wm_lse_parts_rows(const float *x, float *e, ptrdiff_t rows, ptrdiff_t n, float *max, double *sum) {
	if (wm_use_avx512()) wm_lse_parts_rows_avx512(x, e, rows, n, max, sum);
	else if (wm_use_avx2()) wm_lse_parts_rows_avx2(x, e, rows, n, max, sum);
	else wm_lse_parts_rows_sse(x, e, rows, n, max, sum);
}
// wm_scale_rows multiplies row i of e [rows, n] by f[i], one rounding per
// value, as Go's loop did.
static void wm_scale_rows(float *e, ptrdiff_t rows, ptrdiff_t n, const float *f) {
	for (ptrdiff_t i = 0; i < rows; i++) {
		float *r = e + i * n;
		const float fi = f[i];
		for (ptrdiff_t j = 0; j < n; j++) r[j] *= fi;
	}
}
static void wm_softmax_grad_rows(float *d, const float *p, const float *g, ptrdiff_t rows, ptrdiff_t n) {
	if (wm_use_avx512()) wm_softmax_grad_rows_avx512(d, p, g, rows, n);
	else if (wm_use_avx2()) wm_softmax_grad_rows_avx2(d, p, g, rows, n);
	else wm_softmax_grad_rows_sse(d, p, g, rows, n);
}
static void wm_cdmoe_fwd(float *y, const float *phi, const float *Edown, const float *Eup, const int32_t *e,
                         const float *s, ptrdiff_t nc, ptrdiff_t d) {
	if (wm_use_avx512() && wm_cdmoe_fwd_zmm_ok(d)) wm_cdmoe_fwd_zmm(y, phi, Edown, Eup, e, s, nc, d);
	else if (wm_use_avx2()) wm_cdmoe_fwd_avx2(y, phi, Edown, Eup, e, s, nc, d);
	else wm_cdmoe_fwd_sse(y, phi, Edown, Eup, e, s, nc, d);
}
static void wm_cdmoe_bwd(const float *g, const float *phi, const float *Edown, const float *Eup, const int32_t *e,
                         const float *s, ptrdiff_t nc, ptrdiff_t d, float *dEdown, float *dEup, float *dphi,
                         const float *q, const float *keys, const int32_t *off, ptrdiff_t half, float *dq, float *dkeys) {
	if (wm_use_avx512() && wm_cdmoe_bwd_zmm_ok(d, half))
		wm_cdmoe_bwd_zmm(g, phi, Edown, Eup, e, s, nc, d, dEdown, dEup, dphi, q, keys, off, half, dq, dkeys);
	else if (wm_use_avx2()) wm_cdmoe_bwd_avx2(g, phi, Edown, Eup, e, s, nc, d, dEdown, dEup, dphi, q, keys, off, half, dq, dkeys);
	else wm_cdmoe_bwd_sse(g, phi, Edown, Eup, e, s, nc, d, dEdown, dEup, dphi, q, keys, off, half, dq, dkeys);
}
// wm_cdmoe_parts is the check of CDMoE's interleaved passes
// (TestCDMoEPartsKeepBits): WM_DOTS dots at a time (dots) against wm_dot
// one expert at a time (dots1), the rows summed in registers (wm_rows_axpy,
// into y) against one expert's row at a time (into y1), and the runs of
// rows summed into the rows of z that off names (wm_runs_axpy, as dq) against
// one row at a time (into z1), in the variant the level selects.
static void wm_cdmoe_parts(const float *a, const float *base, const int32_t *e, const float *w, ptrdiff_t m,
                           ptrdiff_t n, float *dots, float *dots1, float *y, float *y1, const int32_t *off, float *z,
                           float *z1) {
	if (wm_use_avx2()) wm_cdmoe_parts_avx2(a, base, e, w, m, n, dots, dots1, y, y1, off, z, z1);
	else wm_cdmoe_parts_sse(a, base, e, w, m, n, dots, dots1, y, y1, off, z, z1);
}

// wm_choice is ops.expertChoice (see retrieve_openblas.go, which checks
// the layout).
typedef struct {
	int64_t e, ix, iy;
	double s;
} wm_choice;

// wm_choices_es writes m choices' experts and scores as the kernels take
// them.
static inline void wm_choices_es(const wm_choice *cb, ptrdiff_t m, int32_t *e, float *s) {
	for (ptrdiff_t c = 0; c < m; c++) {
		e[c] = (int32_t)cb[c].e;
		s[c] = (float)cb[c].s;
	}
}

// wm_cdmoe_fwd_tokens is step 3 for ntok tokens (rows of d; ch their
// heads·k choices each): y = φ, then wm_cdmoe_fwd over each token's
// experts, a block at a time.
static void wm_cdmoe_fwd_tokens(float *y, const float *phi, const float *Edown, const float *Eup, const wm_choice *ch,
                                ptrdiff_t ntok, ptrdiff_t nc, ptrdiff_t d) {
	int32_t e[WM_CDMOE_BLOCK];
	float s[WM_CDMOE_BLOCK];
	for (ptrdiff_t t = 0; t < ntok; t++) {
		float *yt = y + t * d;
		const float *pt = phi + t * d;
		memcpy(yt, pt, (size_t)d * sizeof(float));
		for (ptrdiff_t c0 = 0; c0 < nc; c0 += WM_CDMOE_BLOCK) {
			const ptrdiff_t m = nc - c0 < WM_CDMOE_BLOCK ? nc - c0 : WM_CDMOE_BLOCK;
			wm_choices_es(ch + t * nc + c0, m, e, s);
			wm_cdmoe_fwd(yt, pt, Edown, Eup, e, s, m, d);
		}
	}
}

// wm_cdmoe_bwd_tokens is step 3's gradient for ntok tokens (rows of d, q
// rows of qd; ch their heads·k choices each, head by head): for each
// chosen expert the offsets of its head's query halves in q and of its two
// keys in keys ([heads, nk, 2, half]), then wm_cdmoe_bwd a block at a time.
static void wm_cdmoe_bwd_tokens(const float *g, const float *phi, const float *Edown, const float *Eup,
                                const wm_choice *ch, ptrdiff_t ntok, ptrdiff_t heads, ptrdiff_t k, ptrdiff_t nk,
                                ptrdiff_t half, ptrdiff_t qd, ptrdiff_t d, float *dEdown, float *dEup, float *dphi,
                                const float *q, const float *keys, float *dq, float *dkeys) {
	int32_t e[WM_CDMOE_BLOCK], off[4 * WM_CDMOE_BLOCK];
	float s[WM_CDMOE_BLOCK];
	const ptrdiff_t nc = heads * k;
	for (ptrdiff_t t = 0; t < ntok; t++) {
		ptrdiff_t hh = 0, kk = 0; // the head and place of the next choice
		for (ptrdiff_t c0 = 0; c0 < nc; c0 += WM_CDMOE_BLOCK) {
			const ptrdiff_t m = nc - c0 < WM_CDMOE_BLOCK ? nc - c0 : WM_CDMOE_BLOCK;
			const wm_choice *cb = ch + t * nc + c0;
			wm_choices_es(cb, m, e, s);
			for (ptrdiff_t c = 0; c < m; c++) {
				off[4 * c] = (int32_t)(hh * half);
				off[4 * c + 1] = (int32_t)((hh * nk + cb[c].ix) * 2 * half);
				off[4 * c + 2] = (int32_t)((heads + hh) * half);
				off[4 * c + 3] = (int32_t)(((hh * nk + cb[c].iy) * 2 + 1) * half);
				if (++kk == k) kk = 0, hh++;
			}
			wm_cdmoe_bwd(g + t * d, phi + t * d, Edown, Eup, e, s, m, d, dEdown, dEup, dphi + t * d, q + t * qd, keys,
			              off, half, dq + t * qd, dkeys);
		}
	}
}
*/
import "C"

import "unsafe"

// f32p is the address of s's first element for C (nil for an empty or nil
// slice). The slices stay alive and unmoved for the call: Go's heap does
// not move objects, and cgo keeps arguments alive across the call.
func f32p(s []float32) *C.float {
	if len(s) == 0 {
		return nil
	}
	return (*C.float)(unsafe.Pointer(&s[0]))
}

// cbool is b as a C int, 1 or 0: the argument of the files' AVX2 switches
// (wm_avx2_switch.h).
func cbool(b bool) C.int {
	if b {
		return 1
	}
	return 0
}

// The kernel levels: the vector instructions the float32 C kernels may use.
const (
	levelSSE2   = 0
	levelAVX2   = 1 // AVX2 with FMA
	levelAVX512 = 2 // AVX-512 F and DQ
)

// The best variants the CPU has are chosen once, before any op runs.
func init() { setKernelLevel(levelAVX512) }

// setKernelLevel selects, for every C kernel of the package, the best
// variant the CPU has up to level most, and returns the level in effect.
// The activations, softmax rows and log-sum-exp parts have all three
// variants; the others (SSD masks and rows, RoPE, softmax gradient, MoE
// rows, Add and Mul, the paper mask) run their AVX2 one at both higher
// levels; CDMoE's experts' forward and backward have AVX-512 variants
// with the AVX2 ones' bits; CDMoE's retrieval and RMSNorm (forward and backward) have
// an AVX-512 and an AVX2 variant and a portable one; the
// 64-wide product kernel runs at AVX-512 only (below it, gemmHeadN goes to
// the BLAS). Tests and benchmarks call it to cover the variants.
func setKernelLevel(most int) int {
	avx2 := most >= levelAVX2
	rmsnormLevel(most)
	ssdRowsLevel(most)
	ssdBackRowsLevel(most)
	moeRowsLevel(most)
	binaryAVX2(avx2)
	ropeLevel(most)
	paperMaskAVX2(avx2)
	transposeAVX2(avx2)
	exp64AVX2(avx2)
	width64Level(most)
	retrieveLevel(most)
	dot8Level(most)
	return int(C.wm_set_level(C.int(most)))
}

// KernelISA names the vector instructions the float32 C kernels use on this
// CPU: "avx512", "avx2" or "sse2" (the openblas build picks the best the CPU
// has, once). wm bench reports it beside the BLAS: the kernels' speed, and
// the last bits of their sums, depend on it.
func KernelISA() string {
	switch C.wm_get_level() {
	case levelAVX512:
		return "avx512"
	case levelAVX2:
		return "avx2"
	}
	return "sse2"
}

// unaryC runs a C kernel of the form f(y, x, scale, n) (scale may be
// NULL) on dst = f(x) (times scale), after checking that x and scale are
// as long as dst.
func unaryC(dst, x, scale []float32, f func(y, x, s *C.float, n C.ptrdiff_t)) {
	x = x[:len(dst)]
	if scale != nil {
		scale = scale[:len(dst)]
	}
	if len(dst) > 0 {
		f(f32p(dst), f32p(x), f32p(scale), C.ptrdiff_t(len(dst)))
	}
}

func silu32(dst, x, scale []float32) {
	unaryC(dst, x, scale, func(y, x, s *C.float, n C.ptrdiff_t) { C.wm_silu(y, x, s, n) })
}

func siluGrad32(dst, x, scale []float32) {
	unaryC(dst, x, scale, func(y, x, s *C.float, n C.ptrdiff_t) { C.wm_silu_grad(y, x, s, n) })
}

// softplusVec32 sets dst[i] = softplus(x[i]) (times scale[i]): SSD's step
// sizes (softplus32 of softplus32.go, vectorised in C).
func softplusVec32(dst, x, scale []float32) {
	unaryC(dst, x, scale, func(y, x, s *C.float, n C.ptrdiff_t) { C.wm_softplus(y, x, s, n) })
}

// sigmoidVec32 sets dst[i] = σ(x[i]) (times scale[i]), softplus's
// derivative, in C.
func sigmoidVec32(dst, x, scale []float32) {
	unaryC(dst, x, scale, func(y, x, s *C.float, n C.ptrdiff_t) { C.wm_sigmoid(y, x, s, n) })
}

func gatedSiLU32(y, x, z []float32) {
	x, z = x[:len(y)], z[:len(y)]
	if len(y) > 0 {
		C.wm_gated_silu(f32p(y), f32p(x), f32p(z), C.ptrdiff_t(len(y)))
	}
}

func gatedSiLUGrad32(dx, dz, g, x, z []float32) {
	dx, dz, x, z = dx[:len(g)], dz[:len(g)], x[:len(g)], z[:len(g)]
	if len(g) > 0 {
		C.wm_gated_silu_grad(f32p(dx), f32p(dz), f32p(g), f32p(x), f32p(z), C.ptrdiff_t(len(g)))
	}
}

func gatedSiLUBoth32(y, dx, dz, g, x, z []float32) {
	y, dx, dz, x, z = y[:len(g)], dx[:len(g)], dz[:len(g)], x[:len(g)], z[:len(g)]
	if len(g) > 0 {
		C.wm_gated_silu_both(f32p(y), f32p(dx), f32p(dz), f32p(g), f32p(x), f32p(z), C.ptrdiff_t(len(g)))
	}
}

func softmaxRows32(p []float32, rows, n, last0 int) {
	if rows > 0 {
		_ = p[rows*n-1]
		C.wm_softmax_rows(f32p(p), C.ptrdiff_t(rows), C.ptrdiff_t(n), C.ptrdiff_t(last0))
	}
}

func softmaxGradRows32(d, p, g []float32, rows, n int) {
	if rows > 0 {
		_, _, _ = d[rows*n-1], p[rows*n-1], g[rows*n-1]
		C.wm_softmax_grad_rows(f32p(d), f32p(p), f32p(g), C.ptrdiff_t(rows), C.ptrdiff_t(n))
	}
}

// lseParts32 returns the largest of row (as maxOf) and Σ e^(row−m) in
// float64, leaving e^(row−m) in e (len(row) values); row is not empty.
func lseParts32(row, e []float32) (m float32, sum float64) {
	e = e[:len(row)]
	var cm C.float
	s := C.wm_lse_parts(f32p(row), f32p(e), C.ptrdiff_t(len(row)), &cm)
	return float32(cm), float64(s)
}

// lsePartsRows32 is lseParts32 of each of the rows rows of n values of x
// ([rows, n]), in one call: maxima in max, sums in sum, e^(row−m) in e.
func lsePartsRows32(x, e, max []float32, sum []float64, rows, n int) {
	if rows > 0 {
		_, _, _, _ = x[rows*n-1], e[rows*n-1], max[rows-1], sum[rows-1]
		C.wm_lse_parts_rows(f32p(x), f32p(e), C.ptrdiff_t(rows), C.ptrdiff_t(n), f32p(max), f64p(sum))
	}
}

// scaleRows32 multiplies row i of e ([rows, n]) by f[i].
func scaleRows32(e, f []float32, rows, n int) {
	if rows > 0 {
		_, _ = e[rows*n-1], f[rows-1]
		C.wm_scale_rows(f32p(e), C.ptrdiff_t(rows), C.ptrdiff_t(n), f32p(f))
	}
}

func f64p(s []float64) *C.double {
	if len(s) == 0 {
		return nil
	}
	return (*C.double)(unsafe.Pointer(&s[0]))
}

func ssdMask32(gm, src, seg []float32, row, r []float64, L int) {
	if L > 0 {
		_, _, _, _ = gm[L*L-1], src[L*L-1], row[L-1], r[L-1]
		if seg != nil {
			_ = seg[L*L-1]
		}
		C.wm_ssd_mask(f32p(gm), f32p(src), f32p(seg), f64p(row), f64p(r), C.ptrdiff_t(L))
	}
}

func ssdMaskGrad32(gm, seg, dG []float32, dcum []float64, acc []float32, L int) {
	if L > 0 {
		_, _, _, _ = gm[L*L-1], seg[L*L-1], dG[L*L-1], dcum[L-1]
		if acc != nil {
			_ = acc[L*L-1]
		}
		C.wm_ssd_mask_grad(f32p(gm), f32p(seg), f32p(dG), f64p(dcum), f32p(acc), C.ptrdiff_t(L))
	}
}

func expShift32(row []float32, m float32) {
	if len(row) > 0 {
		C.wm_exp_shift(f32p(row), C.ptrdiff_t(len(row)), C.float(m))
	}
}

// cdmoePartsC runs wm_cdmoe_parts for the bits test: a's dots with the m
// rows of n values of base that e names, WM_DOTS at a time and one at a
// time; y and y1 (n values each) plus Σ_c w[c]·row c, summed in registers
// and one row at a time; and z and z1 plus, for each c, w[c] times the n
// values of base at off[4c+1] added at off[4c], by runs of equal off[4c]
// and one c at a time.
func cdmoePartsC(a, base []float32, e []int32, w []float32, n int, y, y1 []float32, off []int32, z, z1 []float32) (dots, dots1 []float32) {
	m := len(e)
	dots, dots1 = make([]float32, m), make([]float32, m)
	_, _, _, _, _ = a[n-1], w[m-1], y[n-1], y1[n-1], off[4*m-1]
	for c, x := range e {
		_, _, _ = base[(int(x)+1)*n-1], base[int(off[4*c+1])+n-1], z1[int(off[4*c])+n-1]
		_ = z[int(off[4*c])+n-1]
	}
	C.wm_cdmoe_parts(f32p(a), f32p(base), (*C.int32_t)(unsafe.Pointer(&e[0])), f32p(w), C.ptrdiff_t(m), C.ptrdiff_t(n),
		f32p(dots), f32p(dots1), f32p(y), f32p(y1), (*C.int32_t)(unsafe.Pointer(&off[0])), f32p(z), f32p(z1))
	return dots, dots1
}

// cdmoeExpertsC runs step 3 of CDMoE for tokens [b.lo, b.hi) in C
// (float32, SiLU), each token's heads·k chosen experts (b.chosen, all
// tokens'): with b.g nil the forward y = φ + Σ_c silu((φ·Edown[e_c]) s_c)
// Eup[e_c]; with b.g the gradients into dEdown, dEup, dφ, and through s_c =
// sim_0 + sim_1 into the query halves dq and the keys. It reports that it
// ran (the pure-Go build has no C kernels).
func cdmoeExpertsC(b cdmoeRangeBufs) bool {
	n, d, nc := b.hi-b.lo, b.d, b.heads*b.topk
	if n <= 0 || nc == 0 || d == 0 {
		return true
	}
	// The bounds the C loops rely on, checked here so that a bad slice
	// panics in Go.
	_, _, _ = b.phi[b.hi*d-1], b.Edown[len(b.Edown)-1], b.Eup[len(b.Eup)-1]
	ch := b.chosen[b.lo*nc : b.hi*nc]
	cp := (*C.wm_choice)(unsafe.Pointer(&ch[0]))
	if b.g == nil {
		_ = b.y[b.hi*d-1]
		C.wm_cdmoe_fwd_tokens(f32p(b.y[b.lo*d:]), f32p(b.phi[b.lo*d:]), f32p(b.Edown), f32p(b.Eup), cp, C.ptrdiff_t(n), C.ptrdiff_t(nc), C.ptrdiff_t(d))
		return true
	}
	_, _, _, _ = b.g[b.hi*d-1], b.dphi[b.hi*d-1], b.q[b.hi*b.qd-1], b.dq[b.hi*b.qd-1]
	_, _, _ = b.dEdown[len(b.Edown)-1], b.dEup[len(b.Eup)-1], b.dkeys[len(b.keys)-1]
	C.wm_cdmoe_bwd_tokens(f32p(b.g[b.lo*d:]), f32p(b.phi[b.lo*d:]), f32p(b.Edown), f32p(b.Eup), cp, C.ptrdiff_t(n),
		C.ptrdiff_t(b.heads), C.ptrdiff_t(b.topk), C.ptrdiff_t(b.nk), C.ptrdiff_t(b.half), C.ptrdiff_t(b.qd), C.ptrdiff_t(d),
		f32p(b.dEdown), f32p(b.dEup), f32p(b.dphi[b.lo*d:]), f32p(b.q[b.lo*b.qd:]), f32p(b.keys), f32p(b.dq[b.lo*b.qd:]), f32p(b.dkeys))
	return true
}
