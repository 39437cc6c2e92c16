//go:build openblas

package ops

import (
	"math"
	"math/rand"
	"testing"
)

// The openblas build has C variants of its float32 kernels (activations,
// softmax rows, SSD masks and rows, MoE rows, RMSNorm, RoPE, the paper mask) for SSE2, AVX2 and, for
// some, AVX-512; the other tests run on the best the CPU has, these on the
// SSE2 ones: the kernel checks and the golden cases, whose float32 runs go
// through every C kernel.
func TestFloat32KernelsSSE2(t *testing.T) {
	defer setKernelLevel(levelAVX512)
	if setKernelLevel(levelSSE2) != levelSSE2 || KernelISA() != "sse2" ||
		rmsnormLevel(levelSSE2) != levelSSE2 || ssdRowsLevel(levelSSE2) != levelSSE2 || ssdBackRowsLevel(levelSSE2) != levelSSE2 || moeRowsLevel(levelSSE2) != levelSSE2 || binaryAVX2(false) || ropeLevel(levelSSE2) != levelSSE2 || paperMaskAVX2(false) || transposeAVX2(false) || exp64AVX2(false) {
		t.Fatalf("setKernelLevel(levelSSE2) left AVX2 kernels selected (activations: %s)", KernelISA())
	}
	runKernelChecks(t, activationChecks)
	runKernelChecks(t, []kernelCheck{
		{"rmsnorm rows", TestRMSNormRowsMatchGo},
		{"ssd mask grad", TestSSDMaskGradMatchesGo},
		{"ssd mask", TestSSDMaskMatchesGo},
		{"ssd rows", TestSSDRowsMatchGo},
		{"ssd backward rows", TestSSDBackRowsMatchGo},
		{"moe rows", TestMoERowsMatchGo},
		{"moe tokens", TestMoETokensMatchesAppend},
		{"add and mul", TestBinaryKernelsMatchGo},
		{"rope rows", TestRopeRowsMatchGo},
		{"paper mask rows", TestPaperMaskRowsMatchGo},
		{"transpose", TestTransposeRowsMatchesTiles},
		{"float64 exp", TestExpInPlaceMatchesMathExp},
		{"golden", TestGolden},
	})
}

// kernelCheck is one test run again on a chosen variant of the C kernels.
type kernelCheck struct {
	name string
	run  func(*testing.T)
}

// activationChecks are the tests of the kernels that have an AVX-512
// variant as well as the SSE2 and AVX2 ones.
var activationChecks = []kernelCheck{
	{"match float64", TestFloat32ActivationsMatchFloat64},
	{"edges", TestFloat32ActivationsEdges},
	{"softmax rows", TestFloat32SoftmaxRowsMatchFloat64},
	{"softmax NaN", TestFloat32SoftmaxRowsNaN},
	{"log-sum-exp", TestFloat32LogSumExpPartsMatchFloat64},
	{"softplus and sigmoid", TestFloat32SoftplusKernels},
}

func runKernelChecks(t *testing.T, checks []kernelCheck) {
	for _, c := range checks {
		t.Run(c.name, c.run)
	}
}

// On a CPU with AVX-512 the other tests run its variant (activations,
// softmax rows, log-sum-exp); this runs the same checks on the AVX2 one.
func TestFloat32KernelsAVX2(t *testing.T) {
	defer setKernelLevel(levelAVX512)
	if setKernelLevel(levelAVX512) != levelAVX512 {
		t.Skip("this CPU has no AVX-512: the other tests run the AVX2 kernels")
	}
	if got := setKernelLevel(levelAVX2); got != levelAVX2 || KernelISA() != "avx2" {
		t.Fatalf("setKernelLevel(levelAVX2) left level %d (%s) selected", got, KernelISA())
	}
	runKernelChecks(t, append(activationChecks, kernelCheck{"golden", TestGolden}))
}

// The AVX2 variant of the SSD mask gradient (intrinsics) sums on the
// portable variant's lanes, so the two agree to the bit.
func TestSSDMaskGradAVX2EqualsSSE2(t *testing.T) {
	defer setKernelLevel(levelAVX512)
	if setKernelLevel(levelAVX2) < levelAVX2 {
		t.Skip("this CPU has no AVX2")
	}
	r := rand.New(rand.NewSource(8))
	for _, L := range []int{1, 3, 4, 5, 17, 64, 67} {
		c := newSSDMaskGradCase(r, L)
		avx, sse := c.clone(), c.clone()
		setKernelLevel(levelAVX2)
		ssdMaskGrad32(avx.gm, avx.seg, avx.dG, avx.dcum, avx.acc, L)
		setKernelLevel(levelSSE2)
		ssdMaskGrad32(sse.gm, sse.seg, sse.dG, sse.dcum, sse.acc, L)
		for i := range sse.dG {
			if math.Float32bits(avx.dG[i]) != math.Float32bits(sse.dG[i]) {
				t.Fatalf("L=%d: dG[%d] = %v (AVX2), %v (SSE2)", L, i, avx.dG[i], sse.dG[i])
			}
		}
		for i := range sse.acc {
			if math.Float32bits(avx.acc[i]) != math.Float32bits(sse.acc[i]) {
				t.Fatalf("L=%d: acc[%d] = %v (AVX2), %v (SSE2)", L, i, avx.acc[i], sse.acc[i])
			}
		}
		for i := range sse.dcum {
			if math.Float64bits(avx.dcum[i]) != math.Float64bits(sse.dcum[i]) {
				t.Fatalf("L=%d: dcum[%d] = %v (AVX2), %v (SSE2)", L, i, avx.dcum[i], sse.dcum[i])
			}
		}
	}
}

// BenchmarkSoftmaxRowsVariants times the causal softmax of one attention
// block (64 query rows over 256 keys, the last block of a 256-token
// sequence) in each kernel variant this CPU has, from the same scores each
// time (the copy is part of the figure). ns/visible is per probability
// the softmax computes.
func BenchmarkSoftmaxRowsVariants(b *testing.B) {
	const rows, n = 64, 256
	last0 := n - rows
	src := make([]float32, rows*n)
	r := rand.New(rand.NewSource(1))
	for i := range src {
		src[i] = float32(3 * r.NormFloat64())
	}
	visible := rows*last0 + rows*(rows+1)/2
	p := make([]float32, rows*n)
	defer setKernelLevel(levelAVX512)
	for _, v := range []struct {
		name  string
		level int
	}{{"avx512", levelAVX512}, {"avx2", levelAVX2}, {"sse2", levelSSE2}} {
		b.Run(v.name, func(b *testing.B) {
			if setKernelLevel(v.level) != v.level {
				b.Skip("not on this CPU")
			}
			for i := 0; i < b.N; i++ {
				copy(p, src)
				softmaxRows32(p, rows, n, last0)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(visible), "ns/visible")
		})
	}
}

// skipWithoutAVX512 selects the AVX-512 kernels for the test, and selects
// them again when it ends (it may select lower levels on the way); it skips
// the test on a CPU without them.
func skipWithoutAVX512(t *testing.T) {
	t.Helper()
	t.Cleanup(func() { setKernelLevel(levelAVX512) })
	if setKernelLevel(levelAVX512) != levelAVX512 {
		t.Skip("this CPU has no AVX-512")
	}
}

// The AVX-512 exponential (wm_exp16, through the log-sum-exp parts) gives
// the AVX2 one's bits (wm_exp8) for every float32 exponent: a sweep of
// about 700,000 arguments from 95 down to the smallest positive float and
// from the largest negative subnormal down to −120, taken as x − max with
// max = 95.5, so that the results run from 1 through the subnormals to 0;
// and −Inf and NaN.
func TestExp16EqualsExp8(t *testing.T) {
	skipWithoutAVX512(t)
	var row []float32
	const stride = 3001
	for b := math.Float32bits(95); b >= stride; b -= stride {
		row = append(row, math.Float32frombits(b))
	}
	for b := uint32(0x80000001); b < math.Float32bits(-120); b += stride {
		row = append(row, math.Float32frombits(b))
	}
	row = append(row, 95.5, float32(math.Inf(-1)), float32(math.NaN()))
	avx512, avx2 := make([]float32, len(row)), make([]float32, len(row))
	lseParts32(row, avx512)
	setKernelLevel(levelAVX2)
	lseParts32(row, avx2)
	for i := range row {
		if math.Float32bits(avx512[i]) != math.Float32bits(avx2[i]) {
			t.Fatalf("exp(%g − 95.5) = %g (%#x) in AVX-512, %g (%#x) in AVX2", row[i], avx512[i],
				math.Float32bits(avx512[i]), avx2[i], math.Float32bits(avx2[i]))
		}
	}
}

// The AVX-512 gated SiLU and its gradient (intrinsics) take the AVX2
// variant's operations in its order, so the two agree to the bit, and at
// every level gatedSiLUBoth32 gives the two kernels' values: over z
// sweeping every float32 exponent of either sign up to past the clamps,
// ±Inf and NaN, each with x of either sign, and lengths that leave a tail.
func TestGatedSiLU16EqualsAVX2(t *testing.T) {
	skipWithoutAVX512(t)
	var z []float32
	const stride = 3001
	for b := uint32(1); b < math.Float32bits(120); b += stride {
		z = append(z, math.Float32frombits(b), -math.Float32frombits(b))
	}
	z = append(z, 0, float32(math.Copysign(0, -1)), 89, -89, 104, -104, float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN()))
	rng := rand.New(rand.NewSource(3))
	x, g := make([]float32, len(z)), make([]float32, len(z))
	for i := range x {
		x[i], g[i] = float32(rng.NormFloat64()*3), float32(rng.NormFloat64())
	}
	x[len(x)-1] = float32(math.Inf(1))
	run := func(level int) (y, dx, dz []float32) {
		setKernelLevel(level)
		y, dx, dz = make([]float32, len(z)), make([]float32, len(z)), make([]float32, len(z))
		for lo := 0; lo < len(z); lo += 997 { // pieces of 997 values: tails of every length mod 16 come up
			hi := min(lo+997, len(z))
			gatedSiLU32(y[lo:hi], x[lo:hi], z[lo:hi])
			gatedSiLUGrad32(dx[lo:hi], dz[lo:hi], g[lo:hi], x[lo:hi], z[lo:hi])
		}
		return
	}
	y512, dx512, dz512 := run(levelAVX512)
	y2, dx2, dz2 := run(levelAVX2)
	// gatedSiLUBoth gives the two kernels' values at every level.
	for _, level := range []int{levelSSE2, levelAVX2, levelAVX512} {
		y, dx, dz := run(level)
		by, bdx, bdz := make([]float32, len(z)), make([]float32, len(z)), make([]float32, len(z))
		for lo := 0; lo < len(z); lo += 997 {
			hi := min(lo+997, len(z))
			gatedSiLUBoth32(by[lo:hi], bdx[lo:hi], bdz[lo:hi], g[lo:hi], x[lo:hi], z[lo:hi])
		}
		for i := range z {
			if math.Float32bits(by[i]) != math.Float32bits(y[i]) || math.Float32bits(bdx[i]) != math.Float32bits(dx[i]) ||
				math.Float32bits(bdz[i]) != math.Float32bits(dz[i]) {
				t.Fatalf("level %d, x %g, z %g, g %g: gatedSiLUBoth32 gives %g %g %g, the two kernels %g %g %g",
					level, x[i], z[i], g[i], by[i], bdx[i], bdz[i], y[i], dx[i], dz[i])
			}
		}
	}
	for i := range z {
		for _, c := range []struct {
			name string
			a, b float32
		}{{"y", y512[i], y2[i]}, {"dx", dx512[i], dx2[i]}, {"dz", dz512[i], dz2[i]}} {
			if math.Float32bits(c.a) != math.Float32bits(c.b) {
				t.Fatalf("gated silu %s at x %g, z %g, g %g: %g (%#x) in AVX-512, %g (%#x) in AVX2",
					c.name, x[i], z[i], g[i], c.a, math.Float32bits(c.a), c.b, math.Float32bits(c.b))
			}
		}
	}
}
