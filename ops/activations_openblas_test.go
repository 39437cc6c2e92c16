//go:build openblas

package ops

import (
	"math"
	"math/rand"
	"testing"
)

// The openblas build has two C variants of its float32 kernels (activations,
// softmax rows, SSD masks and rows, RMSNorm, RoPE); the other tests run on the one the CPU selects,
// these on the SSE2 one: the activation checks and the golden cases, whose
// float32 runs go through every C kernel.
func TestFloat32KernelsSSE2(t *testing.T) {
	defer useAVX2(true)
	defer rmsnormAVX2(true)
	defer ssdRowsAVX2(true)
	defer ropeAVX2(true)
	if useAVX2(false) || rmsnormAVX2(false) || ssdRowsAVX2(false) || ropeAVX2(false) {
		t.Fatal("useAVX2(false), rmsnormAVX2(false), ssdRowsAVX2(false) or ropeAVX2(false) left AVX2 kernels selected")
	}
	runKernelChecks(t, activationChecks)
	runKernelChecks(t, []kernelCheck{
		{"rmsnorm rows", TestRMSNormRowsMatchGo},
		{"ssd mask grad", TestSSDMaskGradMatchesGo},
		{"ssd mask", TestSSDMaskMatchesGo},
		{"ssd rows", TestSSDRowsMatchGo},
		{"rope rows", TestRopeRowsMatchGo},
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
}

func runKernelChecks(t *testing.T, checks []kernelCheck) {
	for _, c := range checks {
		t.Run(c.name, c.run)
	}
}

// On a CPU with AVX-512 the other tests run its variant (activations,
// softmax rows, log-sum-exp); this runs the same checks on the AVX2 one.
func TestFloat32KernelsAVX2(t *testing.T) {
	defer useAVX2(true)
	if !useAVX512(true) {
		t.Skip("this CPU has no AVX-512: the other tests run the AVX2 kernels")
	}
	if useAVX512(false) || KernelISA() != "avx2" {
		t.Fatal("useAVX512(false) did not leave the AVX2 kernels selected")
	}
	runKernelChecks(t, append(activationChecks, kernelCheck{"golden", TestGolden}))
}

// The AVX2 variant of the SSD mask gradient (intrinsics) sums on the
// portable variant's lanes, so the two agree to the bit.
func TestSSDMaskGradAVX2EqualsSSE2(t *testing.T) {
	if !useAVX2(true) {
		t.Skip("this CPU has no AVX2")
	}
	defer useAVX2(true)
	r := rand.New(rand.NewSource(8))
	for _, L := range []int{1, 3, 4, 5, 17, 64, 67} {
		c := newSSDMaskGradCase(r, L)
		avx, sse := c.clone(), c.clone()
		useAVX2(true)
		ssdMaskGrad32(avx.gm, avx.seg, avx.dG, avx.dcum, avx.acc, L)
		useAVX2(false)
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
	defer useAVX2(true)
	for _, v := range []struct {
		name string
		set  func() bool
	}{{"avx512", func() bool { return useAVX512(true) }}, {"avx2", func() bool { useAVX512(false); return KernelISA() == "avx2" }},
		{"sse2", func() bool { return !useAVX2(false) }}} {
		b.Run(v.name, func(b *testing.B) {
			if !v.set() {
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
