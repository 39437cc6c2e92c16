package ops

import (
	"fmt"
	"math"
	"math/rand"
	"testing"
)

// An expert's forward that keeps everything whole (a backward without a
// save) computes the SwiGLU of its gathered rows (against sums in float64),
// and the forwards by blocks of rows (an evaluation's, and a training
// forward's that keeps H1 and H3) give its bits: Y, and the kept H1 and
// H3. 293 of 300 tokens at d_model 64, in the small kernels' blocks and in
// swigluPackedRows blocks (a short last block each), float32 and float64;
// and at d_model 256, where on the 64-wide kernel the forwards by blocks
// (an evaluation's and a training one's) read their tokens' rows of x in
// place instead of gathering them.
func TestMoEExpertForwardBlocksSameBits(t *testing.T) {
	t.Run("d256", func(t *testing.T) {
		const d, f = 256, 344
		if !width64On() {
			t.Skip("no 64-wide kernel in this build or on this CPU: an evaluation's forward gathers its rows as a training one does")
		}
		if !newRightOperand(false, make([]float32, d*f), f, d, f, 293).readsRowsInPlace() {
			t.Fatal("an expert's W1 at d_model 256 is not read from panels: the rows-in-place path goes untested")
		}
		expertForwardBlocksSameBits[float32](t, "d256 float32", d, f, 2, 300, true)
	})
	defer func(s, p bool) { blasSmallKernels, blasPackedBlocks = s, p }(blasSmallKernels, blasPackedBlocks)
	const d, f, n, tokens = 64, 176, 2, 300
	for _, path := range []struct{ small, packed bool }{{true, false}, {false, true}} {
		blasSmallKernels, blasPackedBlocks = path.small, path.packed
		if blk := swigluRowBlock(f, d); blk == 0 || blk >= tokens || tokens%blk == 0 {
			t.Fatalf("small %v packed %v: blocks of %d rows do not cut %d tokens with a short last block", path.small, path.packed, blk, tokens)
		}
		name := fmt.Sprintf("small=%v packed=%v", path.small, path.packed)
		expertForwardBlocksSameBits[float32](t, name+" float32", d, f, n, tokens, false)
		expertForwardBlocksSameBits[float64](t, name+" float64", d, f, n, tokens, false)
	}
}

// With scaled, the weights are drawn at 1/√fan-in, as an initialisation
// draws them, so that wide layers' float32 sums stay near 1 and within the
// reference's tolerance; unscaled, at 1.
func expertForwardBlocksSameBits[T floats](t *testing.T, name string, d, f, n, tokens int, scaled bool) {
	t.Helper()
	r := rand.New(rand.NewSource(9))
	draw := func(size int) []T {
		v := make([]T, size)
		for i := range v {
			v[i] = T(r.NormFloat64())
		}
		return v
	}
	k := moeKernel{x: []int{tokens, d}, d: d, f: f, n: n}
	x, w1, w3, w2 := draw(tokens*d), draw(n*d*f), draw(n*d*f), draw(n*f*d)
	if scaled {
		for _, w := range []struct {
			v     []T
			fanIn int
		}{{w1, d}, {w3, d}, {w2, f}} {
			s := T(1 / math.Sqrt(float64(w.fanIn)))
			for i := range w.v {
				w.v[i] *= s
			}
		}
	}
	order := r.Perm(tokens)[:tokens-7] // an expert's tokens need not be all of them
	whole := moeExpertForward(k, 1, order, x, w1, w3, w2, true, false)
	defer whole.release()
	// The whole forward against the SwiGLU of the gathered rows, summed
	// here one value at a time in float64.
	df := d * f
	h1, h3, y := make([]float64, len(order)*f), make([]float64, len(order)*f), make([]float64, len(order)*d)
	for r, tok := range order {
		for j := 0; j < f; j++ {
			for i := 0; i < d; i++ {
				h1[r*f+j] += float64(x[tok*d+i]) * float64(w1[df+i*f+j])
				h3[r*f+j] += float64(x[tok*d+i]) * float64(w3[df+i*f+j])
			}
		}
		for j := 0; j < f; j++ {
			a := h1[r*f+j] / (1 + math.Exp(-h1[r*f+j])) * h3[r*f+j]
			for i := 0; i < d; i++ {
				y[r*d+i] += a * float64(w2[df+j*d+i])
			}
		}
	}
	var zero T
	tol := 1e-12 // float64: only the order of the sums differs
	if _, f32 := any(zero).(float32); f32 {
		tol = 1e-3
	}
	for _, c := range []struct {
		what      string
		got, want []float64
	}{{"H1", asFloat64s(whole.H1), h1}, {"H3", asFloat64s(whole.H3), h3}, {"Y", asFloat64s(whole.Y), y}} {
		assertClose(t, name+" whole forward "+c.what, c.got, c.want, tol, tol)
	}
	w1op := newRightOperand(false, w1[df:], f, d, f, len(order))
	inPlace := w1op.readsRowsInPlace()
	w1op.release()
	for _, keep := range []bool{true, false} {
		got := moeExpertForward(k, 1, order, x, w1, w3, w2, false, keep)
		if gathered := got.X != nil; gathered == inPlace {
			t.Fatalf("%s keep %v: X gathered %v, where the 64-wide kernel reads rows in place %v", name, keep, gathered, inPlace)
		}
		same := func(what string, a, b []T) {
			for i := range b {
				if math.Float64bits(float64(a[i])) != math.Float64bits(float64(b[i])) {
					t.Fatalf("%s keep %v: %s[%d] = %v, whole forward %v", name, keep, what, i, a[i], b[i])
				}
			}
		}
		if kept := got.H1 != nil && got.H3 != nil; kept != keep {
			t.Fatalf("%s keep %v: H1 and H3 kept whole %v", name, keep, kept)
		}
		if keep {
			same("H1", got.H1, whole.H1)
			same("H3", got.H3, whole.H3)
		}
		same("Y", got.Y, whole.Y)
		if got.A != nil {
			t.Fatalf("%s keep %v: the blocked forward kept A whole", name, keep)
		}
		got.release()
	}
}
