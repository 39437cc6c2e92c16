package ops

import (
	"math"
	"math/rand"
	"testing"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

func TestBinaryGradFD(t *testing.T) {
	for name, f := range map[string]func(x, y *G.Node) (*G.Node, error){"add": Add, "mul": Mul, "gated silu": GatedSiLU} {
		t.Run(name, func(t *testing.T) {
			checkGradFD(t, 11, []fdInput{{name: "x", shape: []int{2, 3, 4}}, {name: "y", shape: []int{2, 3, 4}, gen: uniformIn(-12, 12)}},
				func(in []*G.Node) (*G.Node, error) { return f(in[0], in[1]) })
		})
	}
}

func TestBinaryShapeErrors(t *testing.T) {
	g := G.NewGraph()
	x := G.NewTensor(g, tensor.Float64, 2, G.WithShape(2, 3), G.WithName("x"))
	y := G.NewTensor(g, tensor.Float64, 2, G.WithShape(3, 2), G.WithName("y"))
	if _, err := GatedSiLU(x, y); err == nil {
		t.Fatal("gated silu of [2 3] and [3 2]: no error")
	} else if want := "gated silu: x (2, 3) and y (3, 2) must be tensors of one shape"; err.Error() != want {
		t.Errorf("error %q, want %q", err, want)
	}
}

// The float32 paths (exp32, no per-element call) agree with the float64
// definitions to float32 precision, in both passes, far into the tails.
func TestFloat32ActivationsMatchFloat64(t *testing.T) {
	r := rand.New(rand.NewSource(12))
	const n = 20000
	x32, z32, g32 := make([]float32, n), make([]float32, n), make([]float32, n)
	for i := range x32 {
		x32[i], z32[i], g32[i] = float32(r.NormFloat64()), float32(40*r.Float64()-20), float32(r.NormFloat64())
	}
	copy(z32, []float32{-1000, -104, -89, -88, 88, 89, 104, 1000, 0})
	x64, z64, g64 := widen(x32), widen(z32), widen(g32)
	check := func(what string, got32 []float32, want64 []float64) {
		t.Helper()
		for i := range got32 {
			if d := math.Abs(float64(got32[i]) - want64[i]); d > 1e-6*math.Abs(want64[i])+1e-30 && d > 4e-7 {
				t.Fatalf("%s[%d] = %g, float64 gives %g", what, i, got32[i], want64[i])
			}
		}
	}
	y32, y64 := make([]float32, n), make([]float64, n)
	for _, u := range []unaryFunc{siluFunc, softplusFunc} {
		mapUnary32(y32, z32, nil, u.f, u.f32)
		mapUnary(y64, z64, nil, u.f)
		check(u.name, y32, y64)
		mapUnary32(y32, z32, g32, u.df, u.df32)
		mapUnary(y64, z64, g64, u.df)
		check(u.name+" grad", y32, y64)
	}
	binaryForward(binaryGatedSiLU, y32, [][]float32{x32, z32})
	binaryForward(binaryGatedSiLU, y64, [][]float64{x64, z64})
	check("gated silu", y32, y64)
	dx32, dz32, dx64, dz64 := make([]float32, n), make([]float32, n), make([]float64, n), make([]float64, n)
	binaryBackward(binaryGatedSiLU, [][]float32{dx32, dz32}, g32, [][]float32{x32, z32})
	binaryBackward(binaryGatedSiLU, [][]float64{dx64, dz64}, g64, [][]float64{x64, z64})
	check("gated silu dx", dx32, dx64)
	check("gated silu dz", dz32, dz64)
}

// widen is x in float64.
func widen[T floats](x []T) []float64 {
	y := make([]float64, len(x))
	for i, v := range x {
		y[i] = float64(v)
	}
	return y
}

// NaN in, NaN out, in the kernels of this build (C under openblas, Go
// otherwise); huge arguments saturate instead of producing NaN.
func TestFloat32ActivationsEdges(t *testing.T) {
	nan := float32(math.NaN())
	inf := float32(math.Inf(1))
	x := []float32{nan, inf, -1e30, 0}
	y := make([]float32, len(x))
	silu32(y, x, nil)
	if y[0] == y[0] || y[1] != inf || y[2] != 0 || y[3] != 0 {
		t.Errorf("silu(NaN, Inf, -1e30, 0) = %v", y)
	}
	x[2] = -inf
	copy(y, x)
	expShift32(y, 0)
	if y[0] == y[0] || y[1] != inf || y[2] != 0 || y[3] != 1 {
		t.Errorf("exp(NaN, Inf, -Inf, 0) = %v", y)
	}
	dx, dz := make([]float32, 2), make([]float32, 2)
	gatedSiLUGrad32(dx, dz, []float32{1, 1}, []float32{1, 1}, []float32{-200, 200})
	if dx[0] != 0 || dz[0] != 0 || dx[1] != 200 || dz[1] != 1 {
		t.Errorf("gated silu grad at z = ∓200: dx %v dz %v, want [0 200] [0 1]", dx, dz)
	}
}

func BenchmarkGatedSiLU32(b *testing.B) {
	const n = 1 << 16
	x, z, y := make([]float32, n), make([]float32, n), make([]float32, n)
	for i := range x {
		x[i], z[i] = float32(i%17)/4-2, float32(i%23)/3-4
	}
	b.Run("build", func(b *testing.B) {
		b.SetBytes(n * 4)
		for i := 0; i < b.N; i++ {
			gatedSiLU32(y, x, z)
		}
	})
	b.Run("go", func(b *testing.B) {
		b.SetBytes(n * 4)
		for i := 0; i < b.N; i++ {
			gatedSiLUGo32(y, x, z)
		}
	})
	b.Run("grad", func(b *testing.B) {
		g, dx := make([]float32, n), make([]float32, n)
		for i := range g {
			g[i] = float32(i%13)/6 - 1
		}
		b.SetBytes(n * 4)
		for i := 0; i < b.N; i++ {
			gatedSiLUGrad32(dx, y, g, x, z)
		}
	})
	b.Run("both", func(b *testing.B) { // the value and the gradient, as SwiGLU's backward takes them
		g, dx, dz := make([]float32, n), make([]float32, n), make([]float32, n)
		for i := range g {
			g[i] = float32(i%13)/6 - 1
		}
		b.SetBytes(n * 4)
		for i := 0; i < b.N; i++ {
			gatedSiLUBoth32(y, dx, dz, g, x, z)
		}
	})
}
