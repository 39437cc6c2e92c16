package ops

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/pkg/errors"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// goldenTensor is one tensor of a golden case (SPEC §9): row-major float64.
type goldenTensor struct {
	Shape []int     `json:"shape"`
	Data  []float64 `json:"data"`
}

// goldenCase is one file of testdata/golden (a copy of the project's
// shared/golden), written by a PyTorch reference of the papers' listings.
type goldenCase struct {
	Op       string                  `json:"op"`
	Attrs    map[string]any          `json:"attrs"`
	Inputs   map[string]goldenTensor `json:"inputs"`
	Outputs  map[string]goldenTensor `json:"outputs"`
	Upstream map[string]goldenTensor `json:"upstream"`
	Grads    map[string]goldenTensor `json:"grads"`
	Rtol     float64                 `json:"rtol"`
	Atol     float64                 `json:"atol"`
}

// goldenDir is testdata/golden, the module's copy of the cases, or the
// folder named by WM_GOLDEN_DIR.
func goldenDir() string {
	if d := os.Getenv("WM_GOLDEN_DIR"); d != "" {
		return d
	}
	return filepath.Join("testdata", "golden")
}

// sharedGoldenDir is the project's shared/golden beside the repository,
// where the cases are maintained; a user's clone does not have it.
var sharedGoldenDir = filepath.Join("..", "..", "shared", "golden")

// The module's copy of the golden cases equals shared/golden file for
// file, where shared/ is beside the repository (skipped otherwise), so the
// copy cannot drift from the cases the project maintains.
func TestGoldenCopyIsCurrent(t *testing.T) {
	shared, _ := filepath.Glob(filepath.Join(sharedGoldenDir, "*.json"))
	if len(shared) == 0 {
		t.Skipf("no %s beside the repository: nothing to compare the copy with", sharedGoldenDir)
	}
	local, _ := filepath.Glob(filepath.Join("testdata", "golden", "*.json"))
	have := map[string]bool{}
	for _, f := range local {
		have[filepath.Base(f)] = true
	}
	for _, f := range shared {
		name := filepath.Base(f)
		want, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(filepath.Join("testdata", "golden", name))
		switch {
		case err != nil:
			t.Errorf("%s is in %s but not in testdata/golden: copy it (cp %s/*.json ops/testdata/golden/)", name, sharedGoldenDir, sharedGoldenDir)
		case !bytes.Equal(got, want):
			t.Errorf("testdata/golden/%s differs from %s: copy it again", name, f)
		}
		delete(have, name)
	}
	for name := range have {
		t.Errorf("testdata/golden/%s is not in %s: remove it or add it there", name, sharedGoldenDir)
	}
}

// TestGolden runs every case file of the golden folder, in float64 and
// float32, checking the output and the gradient of every input the case
// lists. An op the builder does not know is a failure.
func TestGolden(t *testing.T) {
	dir := goldenDir()
	files, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatalf("no golden case (*.json) in %s: WM_GOLDEN_DIR names a folder without cases, or testdata/golden is missing from the checkout", dir)
	}
	sort.Strings(files)
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".json")
		t.Run(name, func(t *testing.T) {
			raw, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			var c goldenCase
			if err := json.Unmarshal(raw, &c); err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			for _, dt := range []tensor.Dtype{tensor.Float64, tensor.Float32} {
				t.Run(dt.String(), func(t *testing.T) { runGolden(t, &c, dt) })
			}
		})
	}
}

func runGolden(t *testing.T, c *goldenCase, dt tensor.Dtype) {
	g := G.NewGraph()
	in := map[string]*G.Node{}
	for name, v := range c.Inputs {
		in[name] = constNode(g, dt, name, v)
	}
	build, ok := goldenBuilders[c.Op]
	if !ok {
		t.Fatalf("op %q has no builder: the golden suite must know every op", c.Op)
	}
	outs, err := build(in, attrReader{c.Attrs})
	if err != nil {
		t.Fatalf("building %s: %+v", c.Op, err)
	}
	if len(c.Outputs) == 0 {
		t.Fatal("case has no outputs")
	}
	// The cost is Σ over the case's outputs of sum(output * upstream).
	var cost *G.Node
	outNames := make([]string, 0, len(c.Outputs))
	for name := range c.Outputs {
		out, ok := outs[name]
		if !ok {
			t.Fatalf("case has output %q; the %s builder gives %v", name, c.Op, outs.names())
		}
		up, ok := c.Upstream[name]
		if !ok {
			t.Fatalf("case has no upstream gradient for output %q", name)
		}
		term, err := weightedSum(out, constNode(g, dt, "upstream_"+name, up))
		if err != nil {
			t.Fatal(err)
		}
		if cost == nil {
			cost = term
		} else if cost, err = G.Add(cost, term); err != nil {
			t.Fatal(err)
		}
		outNames = append(outNames, name)
	}
	sort.Strings(outNames)
	names := make([]string, 0, len(c.Grads))
	wrt := make(G.Nodes, 0, len(c.Grads))
	for name := range c.Grads {
		n, ok := in[name]
		if !ok {
			t.Fatalf("gradient given for %q, which is not an input", name)
		}
		names = append(names, name)
		wrt = append(wrt, n)
	}
	grads, err := G.Grad(cost, wrt...)
	if err != nil {
		t.Fatalf("gradients: %+v", err)
	}
	vm := NewTapeMachine(g) // the engine the model runners use
	defer vm.Close()
	if err := vm.RunAll(); err != nil {
		t.Fatalf("running: %+v", err)
	}
	// The case's own tolerances hold in both precisions.
	for _, name := range outNames {
		checkClose(t, "output "+name, outs[name].Value(), c.Outputs[name], c.Rtol, c.Atol)
	}
	for i, name := range names {
		checkClose(t, "grad "+name, grads[i].Value(), c.Grads[name], c.Rtol, c.Atol)
	}
}

func constNode(g *G.ExprGraph, dt tensor.Dtype, name string, v goldenTensor) *G.Node {
	if len(v.Shape) == 0 {
		if dt == tensor.Float32 {
			return G.NewScalar(g, dt, G.WithName(name), G.WithValue(float32(v.Data[0])))
		}
		return G.NewScalar(g, dt, G.WithName(name), G.WithValue(v.Data[0]))
	}
	var back any = append([]float64(nil), v.Data...)
	if dt == tensor.Float32 {
		f := make([]float32, len(v.Data))
		for i, x := range v.Data {
			f[i] = float32(x)
		}
		back = f
	}
	val := tensor.New(tensor.WithShape(v.Shape...), tensor.WithBacking(back))
	return G.NewTensor(g, dt, len(v.Shape), G.WithName(name), G.WithValue(val))
}

// weightedSum is sum(y * w): its gradient with respect to y is w.
func weightedSum(y, w *G.Node) (*G.Node, error) {
	p, err := G.HadamardProd(y, w)
	if err != nil {
		return nil, errors.Wrap(err, "y*upstream")
	}
	if p.IsScalar() {
		return p, nil
	}
	return G.Sum(p)
}

func checkClose(t *testing.T, what string, got G.Value, want goldenTensor, rtol, atol float64) {
	t.Helper()
	if got == nil {
		t.Errorf("%s: no value", what)
		return
	}
	var g []float64
	switch d := got.Data().(type) {
	case []float64:
		g = d
	case []float32:
		g = make([]float64, len(d))
		for i, x := range d {
			g[i] = float64(x)
		}
	case float64:
		g = []float64{d}
	case float32:
		g = []float64{float64(d)}
	default:
		t.Errorf("%s: unexpected data %T", what, d)
		return
	}
	if len(g) != len(want.Data) {
		t.Errorf("%s: %d values, want %d (shape %v vs %v)", what, len(g), len(want.Data), got.Shape(), want.Shape)
		return
	}
	bad := 0
	for i := range g {
		if d := math.Abs(g[i] - want.Data[i]); !(d <= atol+rtol*math.Abs(want.Data[i])) {
			if bad < 5 {
				t.Errorf("%s[%d] = %.8g, want %.8g (diff %.3g)", what, i, g[i], want.Data[i], d)
			}
			bad++
		}
	}
	if bad > 5 {
		t.Errorf("%s: %d of %d values out of tolerance", what, bad, len(g))
	}
}

// outputs are an op's outputs by the names golden cases give them.
type outputs map[string]*G.Node

func (o outputs) names() []string {
	n := make([]string, 0, len(o))
	for k := range o {
		n = append(n, k)
	}
	sort.Strings(n)
	return n
}

// one names a single-output op's result "y".
func one(n *G.Node, err error) (outputs, error) {
	if err != nil {
		return nil, err
	}
	return outputs{"y": n}, nil
}

// attrReader reads a case's attributes with errors that name the attribute.
type attrReader struct{ m map[string]any }

func (a attrReader) float(name string, def float64) (float64, error) {
	v, ok := a.m[name]
	if !ok || v == nil {
		return def, nil
	}
	switch x := v.(type) {
	case float64:
		return x, nil
	case bool:
		if x {
			return 1, nil
		}
		return 0, nil
	}
	return 0, errors.Errorf("attribute %s: %v is not a number", name, v)
}

func (a attrReader) int(name string, def int) (int, error) {
	f, err := a.float(name, float64(def))
	if err == nil && f != math.Trunc(f) {
		err = errors.Errorf("attribute %s: %v is not an integer", name, f)
	}
	return int(f), err
}

func (a attrReader) bool(name string) (bool, error) {
	f, err := a.float(name, 0)
	return f != 0, err
}

func (a attrReader) string(name, def string) (string, error) {
	v, ok := a.m[name]
	if !ok || v == nil {
		return def, nil
	}
	s, ok := v.(string)
	if !ok {
		return "", errors.Errorf("attribute %s: %v is not a string", name, v)
	}
	return s, nil
}

// input returns a case input, or an error naming it when it is missing.
func input(in map[string]*G.Node, name string) (*G.Node, error) {
	n, ok := in[name]
	if !ok {
		return nil, errors.Errorf("case has no input %q", name)
	}
	return n, nil
}

// ropeFromAttrs reads the RoPE attributes of rope and coca_scores cases.
func ropeFromAttrs(a attrReader) (RopeConfig, error) {
	c := DefaultRope()
	var err error
	if c.Base, err = a.float("base", c.Base); err != nil {
		return c, err
	}
	if c.MaxPosition, err = a.int("max_position", 0); err != nil {
		return c, err
	}
	if c.ScalingFactor, err = a.float("scaling_factor", 1); err != nil {
		return c, err
	}
	c.Offset, err = a.int("offset", 0)
	return c, err
}

// goldenBuilders builds each op of SPEC §2 from a case's inputs and attributes.
var goldenBuilders = map[string]func(in map[string]*G.Node, a attrReader) (outputs, error){
	"rope": func(in map[string]*G.Node, a attrReader) (outputs, error) {
		c, err := ropeFromAttrs(a)
		if err != nil {
			return nil, err
		}
		x, err := input(in, "x")
		if err != nil {
			return nil, err
		}
		return one(Rope(x, c))
	},
}
