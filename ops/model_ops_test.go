package ops

import (
	"math"
	"math/rand"
	"testing"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

func TestLinearGradFD(t *testing.T) {
	for _, shape := range [][]int{{2, 3, 5}, {1, 4}, {7}} {
		checkGradFD(t, 11, []fdInput{{name: "x", shape: shape}, {name: "w", shape: []int{shape[len(shape)-1], 3}}},
			func(in []*G.Node) (*G.Node, error) { return Linear(in[0], in[1]) })
	}
}

func TestLinearMatchesNaive(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	x, w := randData(r, 2*9*6, nil), randData(r, 6*4, nil)
	g := G.NewGraph()
	y, err := Linear(tensorNode(g, "x", x, 2, 9, 6), tensorNode(g, "w", w, 6, 4))
	if err != nil {
		t.Fatal(err)
	}
	got := evaluate(t, g, y)[0]
	want := make([]float64, 18*4)
	for i := 0; i < 18; i++ {
		for j := 0; j < 4; j++ {
			for l := 0; l < 6; l++ {
				want[i*4+j] += x[i*6+l] * w[l*4+j]
			}
		}
	}
	assertClose(t, "y", got, want, 1e-12, 1e-12)
}

func TestAddBiasGradFD(t *testing.T) {
	checkGradFD(t, 12, []fdInput{{name: "x", shape: []int{2, 3, 4}}, {name: "b", shape: []int{4}}},
		func(in []*G.Node) (*G.Node, error) { return AddBias(in[0], in[1]) })
}

func TestRepeatHeadsGradFD(t *testing.T) {
	checkGradFD(t, 13, []fdInput{{name: "x", shape: []int{2, 3, 2, 3}}},
		func(in []*G.Node) (*G.Node, error) { return RepeatHeads(in[0], 6) })
}

func TestDogeBiasGradFD(t *testing.T) {
	checkGradFD(t, 14, []fdInput{{name: "dt", shape: []int{2, 5, 3}}, {name: "A", shape: []int{3}}},
		func(in []*G.Node) (*G.Node, error) { return DogeBias(in[0], in[1]) })
}

func TestTopKGatesGradFD(t *testing.T) {
	for _, k := range []int{1, 2, 5} {
		checkGradFD(t, 15, []fdInput{{name: "logits", shape: []int{3, 4, 5}}},
			func(in []*G.Node) (*G.Node, error) { return TopKGates(in[0], k) })
	}
}

func TestLoadBalanceLossGradFD(t *testing.T) {
	checkGradFD(t, 16, []fdInput{{name: "logits", shape: []int{2, 6, 4}}},
		func(in []*G.Node) (*G.Node, error) { return LoadBalanceLoss(in[0], 2) })
}

// A uniform router (equal logits) has loss exactly 1 whatever k; a router that
// sends every token to the same k of N experts has loss N/k · k·(1/N)... = the
// collapse value Σ_{i chosen} (N/k)·P_i, which is larger.
func TestLoadBalanceLossValues(t *testing.T) {
	lossOf := func(logits []float64, shape ...int) float64 {
		g := G.NewGraph()
		l, err := LoadBalanceLoss(tensorNode(g, "logits", logits, shape...), 2)
		if err != nil {
			t.Fatal(err)
		}
		return evaluate(t, g, l)[0][0]
	}
	// 4 tokens, 4 experts: token t prefers experts t and t+1 (mod 4) equally.
	balanced := make([]float64, 16)
	for tok := 0; tok < 4; tok++ {
		balanced[tok*4+tok], balanced[tok*4+(tok+1)%4] = 5, 5
	}
	collapsed := make([]float64, 16)
	for tok := 0; tok < 4; tok++ {
		collapsed[tok*4], collapsed[tok*4+1] = 5, 5
	}
	lb, lc := lossOf(balanced, 4, 4), lossOf(collapsed, 4, 4)
	if math.Abs(lb-1) > 1e-12 {
		t.Errorf("balanced routing: loss %v, want 1", lb)
	}
	if !(lc > 1.9) {
		t.Errorf("collapsed routing: loss %v, want about 2 (> 1.9)", lc)
	}
}

func TestMoEExpertsGradFD(t *testing.T) {
	// Every gate non-zero, so every expert computes every token and the
	// finite differences see the same function as the op.
	checkGradFD(t, 17, moeExpertsFDInputs(), moeExpertsFromNodes)
}

// moeExpertsFDInputs are MoEExperts' inputs for 2×3 tokens of d 4 and 3
// experts of width 5, every gate non-zero.
func moeExpertsFDInputs() []fdInput {
	return []fdInput{
		{name: "x", shape: []int{2, 3, 4}},
		{name: "gates", shape: []int{2, 3, 3}, gen: uniformIn(0.1, 1)},
		{name: "W1", shape: []int{3, 4, 5}},
		{name: "W3", shape: []int{3, 4, 5}},
		{name: "W2", shape: []int{3, 5, 4}},
	}
}

func moeExpertsFromNodes(in []*G.Node) (*G.Node, error) {
	return MoEExperts(in[0], in[1], in[2], in[3], in[4])
}

// MoEExperts with top-k gates equals the dense sum over every expert of
// gate × SwiGLU, written out directly.
func TestMoEExpertsMatchesDense(t *testing.T) {
	const T, d, f, N = 7, 4, 3, 4
	r := rand.New(rand.NewSource(5))
	x, logits := randData(r, T*d, nil), randData(r, T*N, nil)
	W1, W3, W2 := randData(r, N*d*f, nil), randData(r, N*d*f, nil), randData(r, N*f*d, nil)
	g := G.NewGraph()
	gates, err := TopKGates(tensorNode(g, "logits", logits, T, N), 2)
	if err != nil {
		t.Fatal(err)
	}
	y, err := MoEExperts(tensorNode(g, "x", x, T, d), gates,
		tensorNode(g, "W1", W1, N, d, f), tensorNode(g, "W3", W3, N, d, f), tensorNode(g, "W2", W2, N, f, d))
	if err != nil {
		t.Fatal(err)
	}
	out := evaluate(t, g, y, gates)
	got, gv := out[0], out[1]
	want := make([]float64, T*d)
	nonzero := 0
	for tok := 0; tok < T; tok++ {
		for e := 0; e < N; e++ {
			ge := gv[tok*N+e]
			if ge != 0 {
				nonzero++
			}
			a := make([]float64, f)
			for j := 0; j < f; j++ {
				var h1, h3 float64
				for l := 0; l < d; l++ {
					h1 += x[tok*d+l] * W1[(e*d+l)*f+j]
					h3 += x[tok*d+l] * W3[(e*d+l)*f+j]
				}
				a[j] = h1 / (1 + math.Exp(-h1)) * h3
			}
			for l := 0; l < d; l++ {
				for j := 0; j < f; j++ {
					want[tok*d+l] += ge * a[j] * W2[(e*f+j)*d+l]
				}
			}
		}
	}
	if nonzero != 2*T {
		t.Fatalf("%d non-zero gates, want k·T = %d", nonzero, 2*T)
	}
	assertClose(t, "y", got, want, 1e-12, 1e-12)
}

// The backward that takes the experts' activations its forward saved gives
// the same gradients, to the bit, as one that runs the experts again; a save
// from a forward on other inputs is not used, a save is used once, and a
// graph without the gradient (evaluation) saves nothing.
func TestMoEExpertsBackwardFromSave(t *testing.T) {
	moeBackwardFromSave[float64](t, 9, 4, 3, 8)
}

// The same in float32, where the C kernels run, at sizes that leave tails
// after every vector loop (TestMoEExpertsBackwardFromSaveEveryLevel runs it
// at each kernel level).
func TestMoEExpertsBackwardFromSave32(t *testing.T) {
	moeBackwardFromSave[float32](t, 37, 16, 40, 9)
}

// moeBackwardFromSave is TestMoEExpertsBackwardFromSave's check over T
// tokens of d values, 4 experts of d_ff f, random draws from seed.
func moeBackwardFromSave[F floats](t *testing.T, T, d, f int, seed int64) {
	t.Helper()
	const N = 4
	r := rand.New(rand.NewSource(seed))
	draw := func(n int) []F {
		v := make([]F, n)
		for i, x := range randData(r, n, nil) {
			v[i] = F(x)
		}
		return v
	}
	x, x2 := draw(T*d), draw(T*d)
	g := make([]F, T*N)
	for tok := 0; tok < T; tok++ { // two experts per token, one expert with none
		g[tok*N+tok%3], g[tok*N+(tok+1)%3] = F(0.3+r.Float64()), F(0.2+r.Float64())
	}
	W1, W3, W2 := draw(N*d*f), draw(N*d*f), draw(N*f*d)
	dy := draw(T * d)
	newK := func() moeKernel {
		return moeKernel{x: tensor.Shape{T, d}, n: N, d: d, f: f, saved: &moeSaved{wanted: true}}
	}
	grads := func(k moeKernel, xin []F) [][]F {
		d := [][]F{make([]F, T*d), make([]F, T*N), make([]F, N*d*f), make([]F, N*d*f), make([]F, N*f*d)}
		if err := k.backward([]any{xin, g, W1, W3, W2}, nil, dy, []any{d[0], d[1], d[2], d[3], d[4]}); err != nil {
			t.Fatal(err)
		}
		return d
	}
	forward := func(k moeKernel, xin []F) {
		if err := k.forward([]any{xin, g, W1, W3, W2}, make([]F, T*d)); err != nil {
			t.Fatal(err)
		}
	}
	want := grads(newK(), x) // no save: the experts run again

	k := newK()
	forward(k, x)
	if !k.saved.fresh {
		t.Fatal("the forward saved nothing")
	}
	got := grads(k, x)
	if k.saved.fresh || k.saved.experts != nil {
		t.Error("the save outlived the backward that used it")
	}
	assertSame(t, "from the save", got, want)

	stale := newK()
	forward(stale, x2) // saved for x2, not for x
	assertSame(t, "with a save for other inputs", grads(stale, x), want)

	eval := newK()
	eval.saved.wanted = false
	forward(eval, x)
	if eval.saved.fresh || eval.saved.experts != nil {
		t.Error("an evaluation forward kept its experts' activations")
	}
	assertSame(t, "after an evaluation forward", grads(eval, x), want)
}

// assertSame fails unless every gradient of got has want's bits.
func assertSame[F floats](t *testing.T, what string, got, want [][]F) {
	t.Helper()
	for i := range want {
		for j := range want[i] {
			if math.Float64bits(float64(got[i][j])) != math.Float64bits(float64(want[i][j])) {
				t.Fatalf("%s: gradient %d [%d] = %v, want %v (bit-identical)", what, i, j, got[i][j], want[i][j])
			}
		}
	}
}

// The router ops' backward from the routing their forward saved equals one
// that routes again, to the bit, for the gates and the balance loss, and
// routes once; a save for other logits, or for other values in the same
// buffer, is not used.
func TestRouterBackwardFromSave(t *testing.T) {
	const T, N, K = 11, 5, 2
	r := rand.New(rand.NewSource(9))
	logits, other := randData(r, T*N, nil), randData(r, T*N, nil)
	for _, loss := range []bool{false, true} {
		newK := func() routerKernel {
			return routerKernel{shape: tensor.Shape{T, N}, k: K, loss: loss, saved: &routerSaved{}}
		}
		out, dy := make([]float64, T*N), randData(r, T*N, nil)
		if loss {
			out, dy = out[:1], dy[:1]
		}
		grad := func(k routerKernel) []float64 {
			dx := make([]float64, T*N)
			if err := k.backward([]any{logits}, out, dy, []any{dx}); err != nil {
				t.Fatal(err)
			}
			return dx
		}
		want := grad(newK())
		k := newK()
		if err := k.forward([]any{logits}, out); err != nil {
			t.Fatal(err)
		}
		got := grad(k)
		if k.saved.routings != 1 {
			t.Errorf("loss=%v: a forward and a backward on the same logits routed %d times, want once", loss, k.saved.routings)
		}
		stale := newK()
		if err := stale.forward([]any{other}, out); err != nil {
			t.Fatal(err)
		}
		// The same buffer with other values, as in the next step of a run:
		// the save must not be used.
		inPlace := newK()
		buf := append([]float64(nil), other...)
		if err := inPlace.forward([]any{buf}, out); err != nil {
			t.Fatal(err)
		}
		copy(buf, logits)
		dx := make([]float64, T*N)
		if err := inPlace.backward([]any{buf}, out, dy, []any{dx}); err != nil {
			t.Fatal(err)
		}
		assertSame(t, "router from the save", [][]float64{got, grad(stale), dx}, [][]float64{want, want, want})
	}
}

// Router's gates and balance loss share one routing: a forward and a
// backward of both route once, and give the values and gradients of
// TopKGates and LoadBalanceLoss built apart.
func TestRouterSharesOneRouting(t *testing.T) {
	const T, N, K = 13, 6, 2
	r := rand.New(rand.NewSource(10))
	logits := randData(r, T*N, nil)
	run := func(shared bool) (gates, loss, dLogits []float64) {
		g := G.NewGraph()
		x := tensorNode(g, "logits", logits, T, N)
		var gn, ln *G.Node
		var err error
		if shared {
			gn, ln, err = Router(x, K, true)
		} else {
			if gn, err = TopKGates(x, K); err == nil {
				ln, err = LoadBalanceLoss(x, K)
			}
		}
		if err != nil {
			t.Fatal(err)
		}
		w := tensorNode(g, "w", randData(rand.New(rand.NewSource(11)), T*N, nil), T, N)
		cost := G.Must(G.Add(G.Must(G.Sum(G.Must(G.HadamardProd(gn, w)))), ln))
		if _, err := G.Grad(cost, x); err != nil {
			t.Fatal(err)
		}
		vals := evaluate(t, g, gn, ln)
		d, err := x.Grad()
		if err != nil {
			t.Fatal(err)
		}
		if shared {
			if sv := gn.Op().(fusedOp).k.(routerKernel).saved; sv.routings != 1 {
				t.Errorf("a forward and backward of the gates and the loss routed %d times, want once", sv.routings)
			}
		}
		return vals[0], vals[1], append([]float64(nil), d.Data().([]float64)...)
	}
	g1, l1, d1 := run(true)
	g2, l2, d2 := run(false)
	assertSame(t, "Router against TopKGates and LoadBalanceLoss", [][]float64{g1, l1, d1}, [][]float64{g2, l2, d2})
	if _, _, err := Router(tensorNode(G.NewGraph(), "logits", logits, T, N), N+1, true); err == nil {
		t.Error("Router with k > N gave no error")
	}
}
