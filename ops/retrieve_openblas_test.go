//go:build openblas

package ops

import (
	"fmt"
	"math"
	"math/big"
	"math/rand"
	"testing"
)

// The C search picks what retrieve picks, to the bit, at every kernel
// level: rows of normal similarities, rows of many ties (and -0 beside +0),
// rows with NaN or infinities among them, mixed within the vector blocks,
// blocks and rows left over, rows longer than k's limit. A k above the C
// search's limit is declined.
func TestRetrieveRowsMatchGo(t *testing.T) {
	defer setKernelLevel(levelAVX512)
	for _, level := range []int{levelAVX512, levelAVX2, levelSSE2} {
		if got := retrieveLevel(level); got != level {
			t.Logf("level %d: the CPU runs level %d at most", level, got)
			continue
		}
		r := rand.New(rand.NewSource(int64(17 + level)))
		for trial := 0; trial < 1500; trial++ {
			nk, rows := 1+r.Intn(80), 1+r.Intn(40)
			if trial%4 == 1 {
				// Rows of a multiple of 16 values, up to 256 and one
				// past it, and at least one block of 16: the vector
				// searches read these through their transpose.
				nk, rows = 8*(1+r.Intn(17)), 16+r.Intn(40)
			}
			k := cdmoeKernel{nk: nk, topk: 1 + r.Intn(min(nk, 32))}
			if trial%3 == 0 && nk >= 8 {
				k.topk = 8 // the default, which has a kernel of its own
			}
			sims := make([]float32, rows*2*nk)
			levels := 1 + r.Intn(12)
			for row := 0; row < rows; row++ {
				kind := r.Intn(6)
				for i := row * 2 * nk; i < (row+1)*2*nk; i++ {
					switch {
					case kind == 0:
						sims[i] = float32(r.Intn(levels)) / 4 // many ties
						if sims[i] == 0 && r.Intn(2) == 0 {
							sims[i] = float32(math.Copysign(0, -1))
						}
					case kind == 1 && r.Intn(8) == 0:
						sims[i] = []float32{float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1))}[r.Intn(3)]
					case kind == 2 && r.Intn(4) == 0:
						sims[i] = []float32{math.MaxFloat32, -math.MaxFloat32}[r.Intn(2)] // sums overflow to ±Inf
					default:
						sims[i] = float32(r.NormFloat64())
					}
				}
			}
			got, want := make([]expertChoice, (rows+1)*k.topk), make([]expertChoice, (rows+1)*k.topk)
			lo := r.Intn(2)
			if !retrieveRows32(k, sims, lo, rows, got) {
				t.Fatalf("level %d: nk=%d k=%d declined", level, nk, k.topk)
			}
			b := newRetrieveBufs[float32](k)
			for row := lo; row < rows; row++ {
				retrieve(k, sims[row*2*nk:], &b, want[row*k.topk:(row+1)*k.topk])
			}
			for i := range want {
				g, w := got[i], want[i]
				if g.e != w.e || g.ix != w.ix || g.iy != w.iy || math.Float64bits(g.s) != math.Float64bits(w.s) {
					row := i / k.topk
					t.Fatalf("level %d, nk=%d k=%d, rows [%d,%d): row %d choice %d = %+v, want %+v\nrow %v",
						level, nk, k.topk, lo, rows, row, i%k.topk, g, w, sims[row*2*nk:(row+1)*2*nk])
				}
			}
		}
	}
	if retrieveRows32(cdmoeKernel{nk: 40, topk: 33}, make([]float32, 80), 0, 1, make([]expertChoice, 33)) {
		t.Error("k = 33, above the C search's limit, was not declined")
	}
}

// BenchmarkRetrieveRows times the product-key search of one (token, head)
// on normal similarities, in Go (retrieve) and in C at each kernel level.
func BenchmarkRetrieveRows(b *testing.B) {
	defer setKernelLevel(levelAVX512)
	for _, c := range []struct{ nk, k int }{{32, 8}, {64, 8}, {64, 16}} {
		k := cdmoeKernel{nk: c.nk, topk: c.k}
		r := rand.New(rand.NewSource(1))
		const rows = 4096
		sims := make([]float32, rows*2*c.nk)
		for i := range sims {
			sims[i] = float32(r.NormFloat64())
		}
		out := make([]expertChoice, rows*c.k)
		b.Run(fmt.Sprintf("nk=%d/k=%d/go", c.nk, c.k), func(b *testing.B) {
			buf := newRetrieveBufs[float32](k)
			for i := 0; i < b.N; i++ {
				row := i % rows
				retrieve(k, sims[row*2*c.nk:], &buf, out[row*c.k:(row+1)*c.k])
			}
		})
		for _, level := range []int{levelSSE2, levelAVX2, levelAVX512} {
			if retrieveLevel(level) != level {
				continue
			}
			b.Run(fmt.Sprintf("nk=%d/k=%d/c-level%d", c.nk, c.k, level), func(b *testing.B) {
				for i := 0; i < b.N; i += rows {
					retrieveRows32(k, sims, 0, min(rows, b.N-i), out)
				}
			})
		}
	}
}

// The C search of queries (retrieveQueries32) picks what retrieve picks
// from similarities formed as WM_RETRIEVE_Q defines them (fma32 chains in
// the index order, from zero), to the bit: queries and keys of normal
// values, of few levels (many ties), keys all zero (their
// initialisation), NaN and infinities among the queries; token counts
// that leave a partial vector, any first token, heads and halves of
// several sizes, at each vector level. Sizes the C search does not take
// are declined.
func TestRetrieveQueriesMatchGo(t *testing.T) {
	defer setKernelLevel(levelAVX512)
	for _, level := range []int{levelAVX512, levelAVX2} {
		if got := retrieveLevel(level); got != level {
			t.Logf("level %d: the CPU runs level %d at most", level, got)
			continue
		}
		lanes := map[int]int{levelAVX512: 16, levelAVX2: 8}[level]
		r := rand.New(rand.NewSource(int64(29 + level)))
		for trial := 0; trial < 300; trial++ {
			k := cdmoeKernel{heads: 1 + r.Intn(5), nk: 1 + r.Intn(70)}
			k.half = lanes * (1 + r.Intn(4)) / 2 // 2·heads·half a multiple of the lanes
			k.topk = 1 + r.Intn(min(k.nk, 32))
			if trial%3 == 0 && k.nk >= 8 {
				k.topk = 8
			}
			m := 1 + r.Intn(70)
			if trial == 0 {
				k, m = cdmoeKernel{heads: 4, nk: 32, half: 32, topk: 8}, 300 // the defaults
			}
			qd := k.qdim()
			q, keys := make([]float32, m*qd), make([]float32, k.heads*k.nk*2*k.half)
			kind := r.Intn(4)
			levels := 1 + r.Intn(4)
			for i := range q {
				q[i] = float32(r.NormFloat64())
				if kind == 1 {
					q[i] = float32(r.Intn(levels)) / 2
				}
				if kind == 3 && r.Intn(200) == 0 {
					q[i] = []float32{float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1))}[r.Intn(3)]
				}
			}
			for i := range keys {
				switch kind {
				case 0, 3:
					keys[i] = float32(r.NormFloat64())
				case 1:
					keys[i] = float32(r.Intn(levels)) / 4
				} // kind 2: zeros
			}
			if !retrieveQueriesOK(k) {
				t.Fatalf("level %d: %+v declined", level, k)
			}
			nc := k.heads * k.topk
			got, want := make([]expertChoice, m*nc), make([]expertChoice, m*nc)
			lo := r.Intn(min(m, 3))
			retrieveQueries32(k, q, keys, lo, m, got)
			sims := fmaKeySims(k, q, keys, m)
			b := newRetrieveBufs[float32](k)
			for row := lo * k.heads; row < m*k.heads; row++ {
				retrieve(k, sims[row*2*k.nk:], &b, want[row*k.topk:(row+1)*k.topk])
			}
			for i := range want {
				g, w := got[i], want[i]
				if g.e != w.e || g.ix != w.ix || g.iy != w.iy || math.Float64bits(g.s) != math.Float64bits(w.s) {
					row := i / k.topk
					t.Fatalf("level %d, heads %d nk %d half %d k %d, tokens [%d,%d) (kind %d): token %d head %d choice %d = %+v, want %+v",
						level, k.heads, k.nk, k.half, k.topk, lo, m, kind, row/k.heads, row%k.heads, i%k.topk, g, w)
				}
			}
		}
		for _, k := range []cdmoeKernel{
			{heads: 4, nk: 32, half: 32, topk: 33},         // k above the search's limit
			{heads: 4, nk: 129, half: 32, topk: 8},         // halves longer than the column buffer
			{heads: 3, nk: 32, half: 96, topk: 8},          // query rows longer than 512
			{heads: 1, nk: 32, half: lanes/2 + 1, topk: 8}, // query rows not a multiple of the lanes
		} {
			if retrieveQueriesOK(k) {
				t.Errorf("level %d: heads %d nk %d half %d k %d was not declined", level, k.heads, k.nk, k.half, k.topk)
			}
		}
	}
	retrieveLevel(levelSSE2)
	if retrieveQueriesOK(cdmoeKernel{heads: 4, nk: 32, half: 32, topk: 8}) {
		t.Error("the portable level has no vector search of queries, but it was not declined")
	}
}

// fmaKeySims is keySims's similarities as WM_RETRIEVE_Q forms them: each
// the float32 fused multiply-add chain over the query half's values in
// order, from zero.
func fmaKeySims(k cdmoeKernel, q, keys []float32, N int) []float32 {
	sims := make([]float32, N*k.heads*2*k.nk)
	for n := 0; n < N; n++ {
		for hh := 0; hh < k.heads; hh++ {
			for p := 0; p < 2; p++ {
				qh := q[n*k.qdim()+(p*k.heads+hh)*k.half:]
				for j := 0; j < k.nk; j++ {
					kj := keys[((hh*k.nk+j)*2+p)*k.half:]
					var acc float32
					for i := 0; i < k.half; i++ {
						acc = fma32(qh[i], kj[i], acc)
					}
					sims[((n*k.heads+hh)*2+p)*k.nk+j] = acc
				}
			}
		}
	}
	return sims
}

// fma32 is a·b + c rounded once to float32. The product is exact in
// float64; the sum is taken in float64 rounded to odd (its last bit set
// when it is inexact), from which one rounding to float32 is the correct
// one (Boldo and Melquiond, "When double rounding is odd", 2005).
func fma32(a, b, c float32) float32 {
	p, cf := float64(a)*float64(b), float64(c)
	s := p + cf
	if math.IsInf(s, 0) || math.IsNaN(s) {
		return float32(s)
	}
	v := s - p
	e := (p - (s - v)) + (cf - v) // s + e = p + c exactly (TwoSum)
	if e != 0 && math.Float64bits(s)&1 == 0 {
		s = math.Nextafter(s, math.Copysign(math.Inf(1), e))
	}
	return float32(s)
}

// fma32, the reference of TestRetrieveQueriesMatchGo, rounds a·b + c once:
// it agrees with the exact value rounded by math/big on random operands
// and on sums that round twice in float64 and then in float32.
func TestFma32IsOneRounding(t *testing.T) {
	exact := func(a, b, c float32) float32 {
		x := new(big.Float).SetPrec(300).SetFloat64(float64(a))
		x.Mul(x, new(big.Float).SetPrec(300).SetFloat64(float64(b)))
		x.Add(x, new(big.Float).SetPrec(300).SetFloat64(float64(c)))
		f, _ := x.Float32()
		return f
	}
	r := rand.New(rand.NewSource(3))
	// (1 + 2⁻¹²)(1 − 4095·2⁻²⁴) = 1 + 2⁻³⁶, and 2²⁴ + 1 + 2⁻³⁶ rounds in
	// float64 to 2²⁴ + 1, a tie in float32 that goes to 2²⁴, while the
	// exact sum is above the tie and rounds to 2²⁴ + 2.
	a, b := float32(1+1.0/(1<<12)), float32(1-4095.0/(1<<24))
	cases := [][3]float32{{a, b, 1 << 24}, {-a, b, -(1 << 24)}}
	for i := 0; i < 20000; i++ {
		a, b, c := float32(r.NormFloat64()), float32(r.NormFloat64()), float32(r.NormFloat64())
		if i%2 == 0 { // c near -a·b: the sum cancels
			c = -float32(float64(a) * float64(b))
		}
		cases = append(cases, [3]float32{a, b, c})
	}
	for _, c := range cases {
		if got, want := fma32(c[0], c[1], c[2]), exact(c[0], c[1], c[2]); math.Float32bits(got) != math.Float32bits(want) {
			t.Fatalf("fma32(%g, %g, %g) = %g, want %g", c[0], c[1], c[2], got, want)
		}
	}
}

// The inner-function value's forward rows in C (innerFuncRowsC) are
// innerFuncRowsGo's to the bit (a NaN as any NaN): scores of normal values,
// of many ties, with NaN and infinities; E and x with −0, NaN and
// infinities; k from 1 to its
// limit; rows wider than the C loop's blocks of 256; any first token. A k
// above the limit is declined.
func TestInnerFuncRowsMatchGo(t *testing.T) {
	r := rand.New(rand.NewSource(41))
	special := []float32{float32(math.Copysign(0, -1)), 0, float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1))}
	for trial := 0; trial < 300; trial++ {
		k := innerFuncKernel{dm: 1 + r.Intn(80), nv: 1 + r.Intn(90)}
		if trial%5 == 0 {
			k.dm = 250 + r.Intn(300)
		}
		k.k = 1 + r.Intn(min(k.nv, 32))
		if trial%3 == 0 {
			k.k = 1 // the default
		}
		m := 1 + r.Intn(40)
		x, sim, E := make([]float32, m*k.dm), make([]float32, m*k.nv), make([]float32, k.nv*k.dm)
		levels := 1 + r.Intn(4)
		kind := r.Intn(3)
		fill := func(v []float32, ties bool) {
			for i := range v {
				v[i] = float32(r.NormFloat64())
				if ties {
					v[i] = float32(r.Intn(levels)) / 2
				}
				if kind == 2 && r.Intn(20) == 0 {
					v[i] = special[r.Intn(len(special))]
				}
			}
		}
		fill(x, false)
		fill(sim, kind == 1)
		fill(E, false)
		got, want := make([]float32, m*k.dm), make([]float32, m*k.dm)
		lo := r.Intn(min(m, 3))
		if !innerFuncRowsC(k, x, sim, E, got, lo, m) {
			t.Fatalf("dm %d nv %d k %d declined", k.dm, k.nv, k.k)
		}
		innerFuncRowsGo(k, x, sim, E, want, lo, m)
		for i := range want {
			bothNaN := got[i] != got[i] && want[i] != want[i] // a NaN's payload follows the operands' order
			if math.Float32bits(got[i]) != math.Float32bits(want[i]) && !bothNaN {
				t.Fatalf("dm %d nv %d k %d, tokens [%d,%d) (kind %d): y[%d][%d] = %g, want %g",
					k.dm, k.nv, k.k, lo, m, kind, i/k.dm, i%k.dm, got[i], want[i])
			}
		}
	}
	if innerFuncRowsC(innerFuncKernel{dm: 8, nv: 40, k: 33}, make([]float32, 8), make([]float32, 40), make([]float32, 320), make([]float32, 8), 0, 1) {
		t.Error("k = 33, above the C top-k's limit, was not declined")
	}
}

// BenchmarkInnerFuncRows times the inner-function value's forward rows
// (top-k of the scores, the values summed, times x) of 2048 tokens at
// listing 7's sizes (64 values, d_model 64, k 1), in Go and in C.
func BenchmarkInnerFuncRows(b *testing.B) {
	k := innerFuncKernel{dm: 64, nv: 64, k: 1}
	const m = 2048
	r := rand.New(rand.NewSource(1))
	x, sim, E, y := make([]float32, m*k.dm), make([]float32, m*k.nv), make([]float32, k.nv*k.dm), make([]float32, m*k.dm)
	for _, v := range [][]float32{x, sim, E} {
		for i := range v {
			v[i] = float32(r.NormFloat64())
		}
	}
	b.Run("go", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			innerFuncRowsGo(k, x, sim, E, y, 0, m)
		}
	})
	b.Run("c", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			innerFuncRowsC(k, x, sim, E, y, 0, m)
		}
	})
}

// BenchmarkRetrieveQueries times CDMoE's retrieval of 2048 tokens at the
// default sizes (4 heads, 32 keys and 32 values a half, k 8) from their
// queries: keySims's products then the row search, against the search
// that forms the similarities itself (retrieveQueries32), which runs on
// the calling goroutine: compare them with -cpu 1, as keySims's products
// split over GOMAXPROCS workers.
func BenchmarkRetrieveQueries(b *testing.B) {
	k := cdmoeKernel{heads: 4, nk: 32, half: 32, topk: 8}
	const m = 2048
	r := rand.New(rand.NewSource(1))
	q, keys := make([]float32, m*k.qdim()), make([]float32, k.heads*k.nk*2*k.half)
	for _, v := range [][]float32{q, keys} {
		for i := range v {
			v[i] = float32(r.NormFloat64())
		}
	}
	out := make([]expertChoice, m*k.heads*k.topk)
	b.Run("keySims+rows", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			sims := keySims(k, q, keys, m)
			retrieveRows32(k, sims, 0, m*k.heads, out)
			releaseScratch(sims)
		}
	})
	b.Run("queries", func(b *testing.B) {
		if !retrieveQueriesOK(k) {
			b.Skip("no vector search of queries on this CPU")
		}
		for i := 0; i < b.N; i++ {
			retrieveQueries32(k, q, keys, 0, m, out)
		}
	})
}
