package train

import (
	"fmt"
	"math"
	"math/rand"
	"runtime"
	"testing"

	"gorgonia.org/tensor"

	"github.com/wonderful-matrices/wonderful-matrices-go/experiments/data"
	"github.com/wonderful-matrices/wonderful-matrices-go/graph"
	"github.com/wonderful-matrices/wonderful-matrices-go/layers"
	"github.com/wonderful-matrices/wonderful-matrices-go/ops"
)

// gradValues is n float32 values from 1e-20 to 1e15 in size, both signs,
// zeros and subnormals (1e-40) among them.
func gradValues(r *rand.Rand, n int) []float32 { return spreadValues(r, n, 7, 1e-40, -20, 36) }

// spreadValues is n float32 values for the kernel tests: the values at
// indices ≡ 0 mod period are zero, those ≡ 1 are tiny·N(0, 1), and the
// others N(0, 1)·10^e with e drawn uniformly from [lo, lo+span).
func spreadValues(r *rand.Rand, n, period int, tiny float64, lo, span int) []float32 {
	x := make([]float32, n)
	for j := range x {
		switch j % period {
		case 0:
			x[j] = 0
		case 1:
			x[j] = float32(r.NormFloat64() * tiny)
		default:
			x[j] = float32(r.NormFloat64() * math.Pow(10, float64(r.Intn(span)+lo)))
		}
	}
	return x
}

// gradNorm gives the same bits on one goroutine as on several (each
// parameter's sum is one goroutine's, and they are added in parameter
// order), is the square root of the parameters' sums added in order, on
// float32 and float64 gradients alike, and names no parameter when all are
// finite.
func TestGradNormSameOnAnyCores(t *testing.T) {
	r := rand.New(rand.NewSource(7))
	var params layers.Params
	var grads []any
	var want float64
	for i, n := range []int{3, 5000, 17, 40000, 1, 0, 999} {
		params = append(params, layers.LinearWeight(fmt.Sprintf("p%d", i), 1, 1, max(n, 1)))
		x := gradValues(r, n)
		if i%2 == 1 {
			x64 := make([]float64, n)
			for j, v := range x {
				x64[j] = float64(v) * 1.5
			}
			grads = append(grads, x64)
			want += ops.Dot8(x64, x64)
		} else {
			grads = append(grads, x)
			want += ops.Dot8(x, x)
		}
	}
	want = math.Sqrt(want)
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	for _, procs := range []int{1, 2, 5} {
		runtime.GOMAXPROCS(procs)
		got, first := gradNorm(grads, params)
		if math.Float64bits(got) != math.Float64bits(want) || first != "" {
			t.Errorf("GOMAXPROCS %d: norm %v, first %q; want %v and none", procs, got, first, want)
		}
	}
}

// A NaN or an infinity in a gradient makes the norm non-finite and names
// the first such parameter in parameter order, wherever in the gradient
// the value is (a tail value included) and whichever goroutine summed it.
func TestGradNormNamesFirstNonFinite(t *testing.T) {
	r := rand.New(rand.NewSource(8))
	params := layers.Params{layers.LinearWeight("a", 1, 1, 10), layers.LinearWeight("b", 1, 1, 1001),
		layers.LinearWeight("c", 1, 1, 9), layers.LinearWeight("d", 1, 1, 5000)}
	fresh := func() []any {
		return []any{gradValues(r, 10), gradValues(r, 1001), gradValues(r, 9), gradValues(r, 5000)}
	}
	grads := fresh()
	grads[2].([]float32)[8] = float32(math.Inf(-1)) // the tail after eight
	grads[3].([]float32)[77] = float32(math.NaN())
	if norm, first := gradNorm(grads, params); first != "c" || !math.IsNaN(norm) && !math.IsInf(norm, 0) {
		t.Errorf("norm %v, first %q; want non-finite and c", norm, first)
	}
	grads = fresh()
	grads[1].([]float32)[0] = float32(math.Inf(1))
	if norm, first := gradNorm(grads, params); first != "b" || !math.IsInf(norm, 1) {
		t.Errorf("norm %v, first %q; want +Inf and b", norm, first)
	}
}

// BenchmarkGradNorm times the clipping norm of a step's gradients for
// (SM)4's parameters at d_model 64 (0.2M values) and 256 (2.8M), and
// reports nanoseconds per value. Compare -cpu 1 with -cpu 2: the
// parameters' sums share the goroutines.
func BenchmarkGradNorm(b *testing.B) {
	for _, d := range []int{64, 256} {
		cfg := graph.Config{Pattern: "(SM)4", Vocab: data.ByteVocab, DModel: d, Heads: 4, MaxPosition: 256}
		m, err := graph.New(cfg)
		if err != nil {
			b.Fatal(err)
		}
		if err := m.Init(tensor.Float32, 1); err != nil {
			b.Fatal(err)
		}
		ps := m.Params()
		grads, n := make([]any, len(ps)), 0
		for i, p := range ps {
			grads[i] = p.Value.Data()
			n += p.Size()
		}
		b.Run(fmt.Sprintf("d=%d", d), func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				gradNorm(grads, ps)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/value")
		})
	}
}
