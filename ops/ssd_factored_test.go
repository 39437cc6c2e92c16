package ops

import (
	"fmt"
	"math"
	"math/rand"
	"testing"
)

// TestSSDFactorable: a chunk takes the factored path only when every
// head's decays lie within the bound, and then iw holds 1/w exactly.
func TestSSDFactorable(t *testing.T) {
	const chunk, hb, L = 8, 3, 6
	k := ssdKernel{b: 1, t: L, h: hb, g: 1, p: 2, n: 2, chunk: chunk}
	c := newSSDChunk[float32](k, hb, false)
	defer c.release()
	set := func(v func(j, i int) float64) {
		for j := 0; j < hb; j++ {
			for i, w := 0, c.vec(c.w, j); i < L; i++ {
				w[i] = v(j, i)
			}
		}
	}
	set(func(j, i int) float64 { return math.Exp(-float64((L-1-i)*(j+1)) * 0.7) })
	if !ssdFactorable(c, L) {
		t.Fatal("decays within the bound: want the factored path")
	}
	for j := 0; j < hb; j++ {
		for i := 0; i < L; i++ {
			if got, want := c.vec(c.iw, j)[i], 1/c.vec(c.w, j)[i]; got != want {
				t.Fatalf("iw[%d][%d] = %v, want %v", j, i, got, want)
			}
		}
	}
	for _, bad := range []float64{ssdFactorBound / 2, 2 / ssdFactorBound, 0, math.NaN(), math.Inf(1)} {
		set(func(j, i int) float64 {
			if j == hb-1 && i == 0 {
				return bad
			}
			return 0.5
		})
		if ssdFactorable(c, L) {
			t.Fatalf("w = %v in the last head: want the per-head masks", bad)
		}
	}
	defer func(off bool) { ssdFactorOff = off }(ssdFactorOff)
	ssdFactorOff = true
	set(func(int, int) float64 { return 1 })
	if ssdFactorable(c, L) {
		t.Fatal("ssdFactorOff set: want the per-head masks")
	}
}

// floatsAs converts v to T (nil stays nil).
func floatsAs[T floats](v []float64) []T {
	if v == nil {
		return nil
	}
	r := make([]T, len(v))
	for i, x := range v {
		r[i] = T(x)
	}
	return r
}

// ssdArgsOf is the case's data as the scan's arguments in T.
func ssdArgsOf[T floats](d ssdData) ssdArgs[T] {
	return ssdArgs[T]{x: floatsAs[T](d.x), dt: floatsAs[T](d.dt), A: floatsAs[T](d.A), B: floatsAs[T](d.B), C: floatsAs[T](d.C), D: floatsAs[T](d.D)}
}

// ssdForwardOf runs the scan's forward on the case's data in T and returns
// y as float64; D is dropped when withD is false.
func ssdForwardOf[T floats](c ssdCase, g int, d ssdData) []float64 {
	k := ssdKernel{b: c.b, t: c.t, h: c.h, g: g, p: c.p, n: c.n, chunk: c.chunk, hasD: c.withD, out: ssdOutY}
	y := make([]T, c.b*c.t*c.h*c.p)
	ssdForward(k, ssdArgsOf[T](d), y)
	return asFloat64s(y)
}

// ssdFactoredCases are the benchmarks' SSD at d_model 64 (four heads of
// 16 sharing one group of B and C) with a partial last chunk: decays
// within ssdFactorBound in every chunk (the span of dt·|A| over a chunk is
// at most 64·0.05·8 < 60·ln 2), and decays too strong for it.
var ssdFactoredCases = []struct {
	name     string
	c        ssdCase
	factored bool // every chunk takes the factored path
}{
	{"mild decay", ssdCase{b: 2, t: 150, h: 4, p: 16, n: 16, chunk: 64, withD: true, dtLo: 0.001, dtHi: 0.05, aScale: 8}, true},
	{"strong decay", ssdCase{b: 2, t: 150, h: 4, p: 16, n: 16, chunk: 64, withD: true, dtLo: 0.5, dtHi: 2, aScale: 8}, false},
}

// ssdFactoredData draws a case's inputs with g groups of B and C.
func ssdFactoredData(c ssdCase, g int, r *rand.Rand) ssdData {
	return ssdData{
		x:  randData(r, c.b*c.t*c.h*c.p, nil),
		dt: randData(r, c.b*c.t*c.h, uniformIn(c.dtLo, c.dtHi)),
		A:  randData(r, c.h, uniformIn(-c.aScale, -0.1*c.aScale)),
		B:  randData(r, c.b*c.t*g*c.n, nil),
		C:  randData(r, c.b*c.t*g*c.n, nil),
		D:  randData(r, c.h, nil),
	}
}

// TestSSDFactoredMatchesMasked: the forward's diagonal blocks as one
// product (ssdFactorable) give the per-head masked result, to float64's
// precision in float64, and in float32 no further from the token-by-token
// recurrence than the masked form is; where the decay within a chunk is
// too strong, the chunks fall back to the masks and the bits are the
// masked form's. The shapes are the benchmarks' SSD at d_model 64 (four
// heads of 16 sharing one group of B and C), with a partial last chunk.
func TestSSDFactoredMatchesMasked(t *testing.T) {
	defer func(off bool) { ssdFactorOff = off }(ssdFactorOff)
	const g = 1
	for _, tc := range ssdFactoredCases {
		t.Run(tc.name, func(t *testing.T) {
			c := tc.c
			d := ssdFactoredData(c, g, rand.New(rand.NewSource(31)))
			run := func(off bool, f32 bool) []float64 {
				ssdFactorOff = off
				if f32 {
					return ssdForwardOf[float32](c, g, d)
				}
				return ssdForwardOf[float64](c, g, d)
			}
			fact64, mask64 := run(false, false), run(true, false)
			fact32, mask32 := run(false, true), run(true, true)
			if !tc.factored {
				for i := range fact32 {
					if math.Float64bits(fact32[i]) != math.Float64bits(mask32[i]) || math.Float64bits(fact64[i]) != math.Float64bits(mask64[i]) {
						t.Fatalf("y[%d]: %v / %v with the bound, %v / %v masked: the chunks must fall back to the masks, to the bit",
							i, fact32[i], fact64[i], mask32[i], mask64[i])
					}
				}
				return
			}
			assertClose(t, "float64 y, factored against masked", fact64, mask64, 1e-12, 1e-13)
			differ := false
			for i := range fact32 {
				differ = differ || fact32[i] != mask32[i]
			}
			if !differ {
				t.Fatal("float32 y is the masked form's to the bit: the factored path did not run")
			}
			// The recurrence in float64, expanded to the heads' B and C.
			hB, hC := make([]float64, c.b*c.t*c.h*c.n), make([]float64, c.b*c.t*c.h*c.n)
			for bt := 0; bt < c.b*c.t; bt++ {
				for h := 0; h < c.h; h++ {
					copy(hB[(bt*c.h+h)*c.n:(bt*c.h+h+1)*c.n], d.B[bt*c.n:(bt+1)*c.n])
					copy(hC[(bt*c.h+h)*c.n:(bt*c.h+h+1)*c.n], d.C[bt*c.n:(bt+1)*c.n])
				}
			}
			ref, _ := ssdRef(c.b, c.t, c.h, c.p, c.n, d.x, d.dt, d.A, hB, hC, d.D, nil)
			errOf := func(y []float64) (worst float64) {
				for i := range y {
					worst = max(worst, math.Abs(y[i]-ref[i])/(1+math.Abs(ref[i])))
				}
				return worst
			}
			ef, em := errOf(fact32), errOf(mask32)
			t.Logf("float32 against the recurrence: factored %.3g, masked %.3g", ef, em)
			if ef > 2*em+1e-6 {
				t.Fatal(fmt.Sprintf("float32 factored error %.3g, masked %.3g: the one product must be as accurate", ef, em))
			}
		})
	}
}

// ssdGradsOf runs the scan's backward on the case's data in T, for dL/dy =
// dOut, and returns the gradients of x, dt, A, B, C and D as float64. With
// save, a forward first keeps what the backward may take from it
// (ssdSaved).
func ssdGradsOf[T floats](c ssdCase, g int, d ssdData, dOut []float64, save bool) [][]float64 {
	k := ssdKernel{b: c.b, t: c.t, h: c.h, g: g, p: c.p, n: c.n, chunk: c.chunk, hasD: c.withD, out: ssdOutY}
	if save {
		k.saved = &ssdSaved{}
		k.gradientWanted()
	}
	zeros := func(v []T) []T {
		if v == nil {
			return nil
		}
		return make([]T, len(v))
	}
	a := ssdArgsOf[T](d)
	if save {
		ssdForward(k, a, make([]T, len(a.x)))
	}
	dA := ssdArgs[T]{x: zeros(a.x), dt: zeros(a.dt), A: zeros(a.A), B: zeros(a.B), C: zeros(a.C), D: zeros(a.D)}
	ssdBackward(k, a, floatsAs[T](dOut), dA)
	var out [][]float64
	for _, v := range [][]T{dA.x, dA.dt, dA.A, dA.B, dA.C, dA.D} {
		out = append(out, asFloat64s(v))
	}
	return out
}

// TestSSDFactoredBackwardMatchesMasked: the backward's diagonal blocks for
// all heads at once (ssdDiagonalBackwardFactored) give the per-head masked
// gradients, to float64's precision in float64, and in float32 no further
// from the float64 gradients than the masked form's are; with and without
// the forward's kept states they are the same to the bit; where the decay within a chunk is too strong, the chunks fall back
// to the masks and the bits are the masked form's. The shapes are the
// benchmarks' SSD at d_model 64 (four heads of 16 sharing one group of B
// and C), with a partial last chunk; the path is forced on in builds whose
// BLAS would not take it.
func TestSSDFactoredBackwardMatchesMasked(t *testing.T) {
	defer func(off, small bool) { ssdFactorOff, blasSmallKernels = off, small }(ssdFactorOff, blasSmallKernels)
	blasSmallKernels = true // the factored backward's condition (ssdBackwardFactored), in every build
	const g = 1
	names := []string{"x", "dt", "A", "B", "C", "D"}
	for _, tc := range ssdFactoredCases {
		t.Run(tc.name, func(t *testing.T) {
			c := tc.c
			r := rand.New(rand.NewSource(37))
			d := ssdFactoredData(c, g, r)
			dOut := randData(r, c.b*c.t*c.h*c.p, nil)
			ssdFactorOff = true
			mask64 := ssdGradsOf[float64](c, g, d, dOut, true)
			mask32 := ssdGradsOf[float32](c, g, d, dOut, true)
			ssdFactorOff = false
			fact64 := ssdGradsOf[float64](c, g, d, dOut, true)
			fact32 := ssdGradsOf[float32](c, g, d, dOut, true)
			fact32again := ssdGradsOf[float32](c, g, d, dOut, false)
			for q, name := range names {
				assertSame(t, "float32 d"+name+" without the kept states", [][]float64{fact32again[q]}, [][]float64{fact32[q]})
				if !tc.factored {
					assertSame(t, "float32 d"+name+", strong decay, against masked", [][]float64{fact32[q]}, [][]float64{mask32[q]})
					assertSame(t, "float64 d"+name+", strong decay, against masked", [][]float64{fact64[q]}, [][]float64{mask64[q]})
				}
			}
			if !tc.factored {
				return
			}
			differ := false
			for q, name := range names {
				assertClose(t, "float64 d"+name+", factored against masked", fact64[q], mask64[q], 1e-10, 1e-12)
				errOf := func(v []float64) (worst float64) {
					for i := range v {
						worst = max(worst, math.Abs(v[i]-mask64[q][i])/(1+math.Abs(mask64[q][i])))
					}
					return worst
				}
				ef, em := errOf(fact32[q]), errOf(mask32[q])
				t.Logf("float32 d%s against float64: factored %.3g, masked %.3g", name, ef, em)
				if ef > 2*em+1e-6 {
					t.Errorf("float32 d%s: factored error %.3g, masked %.3g: the factored backward must be as accurate", name, ef, em)
				}
				for i := range fact32[q] {
					differ = differ || fact32[q][i] != mask32[q][i]
				}
			}
			if !differ {
				t.Fatal("float32 gradients are the masked form's to the bit: the factored backward did not run")
			}
		})
	}
}
