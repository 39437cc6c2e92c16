// Package layertest checks a sublayer the way the framework checks its
// own: the symbolic gradient of every parameter and of the input against
// central finite differences in float64. It is for tests, the framework's
// and those of a package that registers a sublayer of its own (see
// graph.RegisterSublayer).
package layertest

import (
	"fmt"
	"math"
	"math/rand"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/wonderful-matrices/wonderful-matrices-go/layers"
	"github.com/wonderful-matrices/wonderful-matrices-go/ops"
)

// Settings size a gradient check; a zero field is its default.
type Settings struct {
	// Batch, Time and DModel are the input's shape (default 2, 5, and the
	// width the layer was made for, which must be given).
	Batch, Time, DModel int
	// Seed draws the weights' jitter, the input and the upstream weights
	// (default 3).
	Seed int64
	// Coords is the number of coordinates checked per tensor (default 12).
	Coords int
	// Jitter is added to every weight, times a standard normal draw, so
	// that every path carries signal (default 0.3; N(0, 0.02) weights are
	// too small to see most second-order terms).
	Jitter float64
	// Step is the finite-difference step (default 1e-5); a coordinate
	// passes when |symbolic − numeric| <= Abs + Rel·|numeric| (defaults
	// 1e-6 and 1e-4).
	Step, Abs, Rel float64
}

func (s Settings) resolved() Settings {
	def := func(v *float64, d float64) {
		if *v == 0 {
			*v = d
		}
	}
	if s.Batch == 0 {
		s.Batch = 2
	}
	if s.Time == 0 {
		s.Time = 5
	}
	if s.Seed == 0 {
		s.Seed = 3
	}
	if s.Coords == 0 {
		s.Coords = 12
	}
	def(&s.Jitter, 0.3)
	def(&s.Step, 1e-5)
	def(&s.Abs, 1e-6)
	def(&s.Rel, 1e-4)
	return s
}

// Mismatch is one coordinate whose symbolic gradient disagrees with finite
// differences.
type Mismatch struct {
	Tensor              string
	Index               int
	Symbolic, Numerical float64
}

func (m Mismatch) String() string {
	return fmt.Sprintf("%s[%d]: symbolic %.8g, finite differences %.8g", m.Tensor, m.Index, m.Symbolic, m.Numerical)
}

// CheckGradients initialises l's parameters in float64 (seed 7, plus the
// jitter), builds sum(l(x) ⊙ w) plus any auxiliary loss the layer adds for
// a random x and w, and compares the gradient of every parameter and of x
// with central differences on a random sample of coordinates. It returns
// the coordinates that disagree (none when the gradient is right) and an
// error when the layer does not build or run.
func CheckGradients(l layers.Sublayer, s Settings) ([]Mismatch, error) {
	s = s.resolved()
	if s.DModel < 1 {
		return nil, fmt.Errorf("layertest: Settings.DModel is required")
	}
	r, err := initParams(l, s)
	if err != nil {
		return nil, err
	}
	n := s.Batch * s.Time * s.DModel
	c := &checker{l: l, s: s, r: r, x: normals(r, n), w: normals(r, n)}
	b, xn, loss, err := objective(l, s, c.x, c.w)
	if err != nil {
		return nil, err
	}
	params, nodes := b.ParamNodes()
	grads, err := ops.Grad(loss, append(nodes, xn)...)
	if err != nil {
		return nil, fmt.Errorf("layertest: gradient of %s: %w", l.Kind(), err)
	}
	if err := run(b.G); err != nil {
		return nil, err
	}
	for i, p := range params {
		if err := c.check(p.Name, p.Data().([]float64), grads[i]); err != nil {
			return c.bad, err
		}
	}
	return c.bad, c.check("x", c.x, grads[len(grads)-1])
}

// initParams initialises l's parameters in float64 (seed 7) plus s.Jitter
// times a normal draw each, from the stream of s.Seed, which it returns
// for the caller's further draws.
func initParams(l layers.Sublayer, s Settings) (*rand.Rand, error) {
	if err := l.Params().Initialize(tensor.Float64, 7); err != nil {
		return nil, err
	}
	r := rand.New(rand.NewSource(s.Seed))
	for _, p := range l.Params() {
		d := p.Data().([]float64)
		for i := range d {
			d[i] += s.Jitter * r.NormFloat64()
		}
	}
	return r, nil
}

// checker compares symbolic gradients with central differences of the
// objective at fixed x and w.
type checker struct {
	l    layers.Sublayer
	s    Settings
	r    *rand.Rand
	x, w []float64
	bad  []Mismatch
}

// loss evaluates the objective afresh at the current values.
func (c *checker) loss() (float64, error) {
	_, _, l, err := objective(c.l, c.s, c.x, c.w)
	if err != nil {
		return 0, err
	}
	if err := run(l.Graph()); err != nil {
		return 0, err
	}
	return l.Value().Data().(float64), nil
}

// check perturbs a sample of data's coordinates (a parameter's or x's
// values) by ±Step and records those where grad disagrees.
func (c *checker) check(what string, data []float64, grad *G.Node) error {
	g := grad.Value().Data().([]float64)
	for _, i := range c.r.Perm(len(data))[:min(c.s.Coords, len(data))] {
		old := data[i]
		data[i] = old + c.s.Step
		fp, err := c.loss()
		if err != nil {
			return err
		}
		data[i] = old - c.s.Step
		fm, err := c.loss()
		data[i] = old
		if err != nil {
			return err
		}
		want := (fp - fm) / (2 * c.s.Step)
		if math.Abs(g[i]-want) > c.s.Abs+c.s.Rel*math.Abs(want) {
			c.bad = append(c.bad, Mismatch{what, i, g[i], want})
		}
	}
	return nil
}

// objective builds sum(l(x) ⊙ w) plus the layer's auxiliary losses.
func objective(l layers.Sublayer, s Settings, x, w []float64) (*layers.Builder, *G.Node, *G.Node, error) {
	b := layers.NewBuilder(tensor.Float64)
	var xn, loss *G.Node
	err := b.Run(l.Kind(), func() {
		xn = b.Input("x", x, s.Batch, s.Time, s.DModel)
		y := l.Forward(b, xn, nil)
		loss = b.Must(G.Sum(b.Mul(y, b.Input("w", w, s.Batch, s.Time, s.DModel))))
		for _, a := range b.Aux() {
			loss = b.Add(loss, a)
		}
	})
	return b, xn, loss, err
}

func run(g *G.ExprGraph) error {
	vm := ops.NewTapeMachine(g)
	defer vm.Close()
	if err := vm.RunAll(); err != nil {
		return fmt.Errorf("layertest: run: %w", err)
	}
	return nil
}

func normals(r *rand.Rand, n int) []float64 {
	v := make([]float64, n)
	for i := range v {
		v[i] = r.NormFloat64()
	}
	return v
}

// CheckClosing checks a layer that closes its own pre-norm block
// (layers.Closer): in float64, with l's parameters as CheckGradients
// initialises them, the block's output and the gradients of every
// parameter, of x and of the norm's weight must be, bit for bit, those of
// the block closed by an add, x + l.Forward(RMSNorm(x)). A layer that does
// not implement layers.Closer passes.
func CheckClosing(l layers.Sublayer, s Settings) error {
	cl, ok := l.(layers.Closer)
	if !ok {
		return nil
	}
	s = s.resolved()
	if s.DModel < 1 {
		return fmt.Errorf("layertest: Settings.DModel is required")
	}
	r, err := initParams(l, s)
	if err != nil {
		return err
	}
	n := s.Batch * s.Time * s.DModel
	x, w, g := normals(r, n), normals(r, n), normals(r, s.DModel)
	for i := range g {
		g[i] = 1 + 0.3*g[i]
	}
	// block returns the block's output and the gradients, by name.
	block := func(closing bool) (map[string][]float64, error) {
		b := layers.NewBuilder(tensor.Float64)
		var xn, gn, y, loss *G.Node
		err := b.Run(l.Kind(), func() {
			xn = b.Input("x", x, s.Batch, s.Time, s.DModel)
			gn = b.Input("norm", g, s.DModel)
			if closing {
				h, res, err := ops.PreNorm(xn, gn, ops.DefaultRMSNormEps)
				y = cl.ForwardClosing(b, b.Must(h, err), res, nil)
			} else {
				h := b.Must(ops.RMSNorm(xn, gn, ops.DefaultRMSNormEps))
				y = b.Add(xn, l.Forward(b, h, nil))
			}
			loss = b.Must(G.Sum(b.Mul(y, b.Input("w", w, s.Batch, s.Time, s.DModel))))
			for _, a := range b.Aux() {
				loss = b.Add(loss, a)
			}
		})
		if err != nil {
			return nil, err
		}
		params, nodes := b.ParamNodes()
		grads, err := ops.Grad(loss, append(nodes, xn, gn)...)
		if err != nil {
			return nil, fmt.Errorf("layertest: gradient of %s's block (closing %v): %w", l.Kind(), closing, err)
		}
		if err := run(b.G); err != nil {
			return nil, err
		}
		values := func(n *G.Node) []float64 { return append([]float64(nil), n.Value().Data().([]float64)...) }
		out := map[string][]float64{"the block's output": values(y)}
		for i, p := range params {
			out["the gradient of "+p.Name] = values(grads[i])
		}
		out["the gradient of x"] = values(grads[len(params)])
		out["the gradient of the norm's weight"] = values(grads[len(params)+1])
		return out, nil
	}
	got, err := block(true)
	if err != nil {
		return err
	}
	want, err := block(false)
	if err != nil {
		return err
	}
	for name, wv := range want {
		gv, ok := got[name]
		if !ok || len(gv) != len(wv) {
			return fmt.Errorf("layertest: %s: %s has %d values closed by ForwardClosing, %d closed by an add", l.Kind(), name, len(gv), len(wv))
		}
		for j := range gv {
			if math.Float64bits(gv[j]) != math.Float64bits(wv[j]) {
				return fmt.Errorf("layertest: %s: %s[%d] is %v closed by ForwardClosing, %v closed by an add (must be the same bits)",
					l.Kind(), name, j, gv[j], wv[j])
			}
		}
	}
	if len(got) != len(want) {
		return fmt.Errorf("layertest: %s: ForwardClosing reads %d parameters, Forward %d", l.Kind(), len(got)-3, len(want)-3)
	}
	return nil
}
