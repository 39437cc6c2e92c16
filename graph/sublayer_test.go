package graph

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pkg/errors"
	G "gorgonia.org/gorgonia"

	"github.com/wonderful-matrices/wonderful-matrices-go/layers"
)

// A checkpoint written by main before the sublayer registry (every letter
// of the time in one model, testdata/checkpoint-643041d) still loads, its
// config bytes unchanged when written again, and gives the logits it gave
// then.
func TestLegacyCheckpointLoads(t *testing.T) {
	dir := filepath.Join("testdata", "checkpoint-643041d")
	m, meta, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(meta["written_by"], "643041d") {
		t.Errorf("metadata %v", meta)
	}
	var want struct {
		IDs    [][]int   `json:"ids"`
		Logits []float64 `json:"logits"`
	}
	b, err := os.ReadFile(filepath.Join(dir, "expected_logits.json"))
	if err != nil || json.Unmarshal(b, &want) != nil {
		t.Fatalf("expected logits: %v", err)
	}
	got, err := m.Logits(want.IDs)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want.Logits) {
		t.Fatalf("%d logits, want %d", len(got), len(want.Logits))
	}
	for i := range got {
		if math.Abs(got[i]-want.Logits[i]) > 1e-6*(1+math.Abs(want.Logits[i])) {
			t.Fatalf("logit %d: %v, then %v", i, got[i], want.Logits[i])
		}
	}
	old, _ := os.ReadFile(filepath.Join(dir, ConfigFile))
	var cfg Config
	if err := json.Unmarshal(old, &cfg); err != nil {
		t.Fatal(err)
	}
	again, _ := json.MarshalIndent(cfg, "", "  ")
	if !bytes.Equal(bytes.TrimSpace(again), bytes.TrimSpace(old)) {
		t.Errorf("the config written again differs:\n%s\nthen:\n%s", again, old)
	}
}

func TestRegisterSublayerRefuses(t *testing.T) {
	ok := func(string, Config, layers.Shape) (layers.Sublayer, error) { return nil, nil }
	for _, c := range []struct {
		k    SublayerKind
		want string
	}{
		{SublayerKind{Letter: 'S', Name: "my SSD", New: ok}, `the letter S is registered twice: "SSD (variant from config)" and "my SSD"`},
		{SublayerKind{Letter: '1', Name: "digit", New: ok}, "not an ASCII letter"},
		{SublayerKind{Letter: 'Z'}, "needs a Name and a New"},
		{SublayerKind{Letter: 'Z', Name: "clash", New: ok, Section: "ssd", Config: &testSection{}}, `Section "ssd" is empty or a field of the config`},
	} {
		err := registerSublayer(c.k)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", c.k.Name, err, c.want)
		}
	}
	if _, taken := kind('Z'); taken {
		t.Error("a refused kind was registered")
	}
}

// testSection is the config of a sublayer registered as from outside: a
// scaled copy of its input.
type testSection struct {
	Scale float64 `json:"scale,omitempty"`
}

func (s *testSection) Defaults(Config) {
	if s.Scale == 0 {
		s.Scale = 0.5
	}
}

func (s *testSection) Validate(field string, _ Config) error {
	if !(s.Scale > 0) {
		return errors.Errorf("%s.scale: must be > 0, got %v", field, s.Scale)
	}
	return nil
}

// scaled is the test layer: y = scale · x, no parameters.
type scaled struct{ scale float64 }

func (scaled) Kind() string          { return "scaled" }
func (scaled) Params() layers.Params { return nil }
func (l scaled) Forward(b *layers.Builder, x *G.Node, _ *layers.State) *G.Node {
	return b.Must(G.Mul(x, b.Scalar(l.scale)))
}

// An outside kind: its letter parses, its section rides in the config's
// JSON (defaults filled, errors named), and its layer builds and runs.
func TestOutsideSublayerKind(t *testing.T) {
	RegisterSublayer(SublayerKind{Letter: 'Q', Name: "scaled copy (test)", Section: "scaled", Config: &testSection{},
		New: func(_ string, c Config, _ layers.Shape) (layers.Sublayer, error) {
			var s testSection
			if err := c.DecodeSection("scaled", &s); err != nil {
				return nil, err
			}
			return scaled{s.Scale}, nil
		}})
	defer func() {
		kindsMu.Lock()
		delete(kinds, 'Q')
		kindsMu.Unlock()
	}()
	c := Config{Pattern: "QM", Vocab: 8, DModel: 4, Heads: 1}
	r := c.Resolved()
	var s testSection
	if err := r.DecodeSection("scaled", &s); err != nil || s.Scale != 0.5 {
		t.Fatalf("the default was not filled: %+v %v", s, err)
	}
	b, err := json.Marshal(r)
	if err != nil || !bytes.Contains(b, []byte(`"scaled":{"scale":0.5}`)) {
		t.Fatalf("JSON %s (%v)", b, err)
	}
	back, err := ParseConfig(b)
	if err != nil || string(back.Sections["scaled"]) != `{"scale":0.5}` {
		t.Fatalf("parsed back: %+v %v", back.Sections, err)
	}
	bad := bytes.Replace(b, []byte(`"scale":0.5`), []byte(`"scale":-1`), 1)
	if _, err := ParseConfig(bad); err == nil || !strings.Contains(err.Error(), "config.scaled.scale: must be > 0") {
		t.Errorf("a bad section: %v", err)
	}
	typo := bytes.Replace(b, []byte(`"scale":0.5`), []byte(`"sclae":0.5`), 1)
	if _, err := ParseConfig(typo); err == nil || !strings.Contains(err.Error(), "sclae") {
		t.Errorf("an unknown field of the section: %v", err)
	}
	m, err := New(back)
	if err != nil {
		t.Fatal(err)
	}
	if m.Blocks[0].Layer.Kind() != "scaled" {
		t.Errorf("block 0 is %s", m.Blocks[0].Layer.Kind())
	}
}
