package graph_test

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/wonderful-matrices/wonderful-matrices-go/graph"
)

func TestExpandPattern(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"SMSMSMSMSMSMSMA", "SMSMSMSMSMSMSMA"},
		{"SE SMSMSMSMSMSMAE", "SESMSMSMSMSMSMAE"},
		{"(SE)7 AE", "SESESESESESESEAE"},
		{"((SM)2 E)2", "SMSMESMSME"},
		{" \tI\nE ", "IE"},
	} {
		got, err := graph.ExpandPattern(c.in)
		if err != nil || string(got) != c.want {
			t.Errorf("ExpandPattern(%q) = %q, %v; want %q", c.in, got, err, c.want)
		}
	}
}

func TestPatternErrors(t *testing.T) {
	for _, c := range []struct {
		in   string
		pos  int
		text string
	}{
		{"SMX", 3, "unknown letter 'X'"},
		{"(SE", 4, "never closed"},
		{"SE)2", 3, "closes no"},
		{"(SE)", 5, "needs a repeat count"},
		{"(SE)0", 5, ">= 1"},
		{"()3", 1, "empty group"},
		{"S3", 2, "must follow a group"},
		{"", 1, "empty pattern"},
		{"s", 1, "unknown letter 's'"},
		{"(S)99999", 4, "repeat count above"},
	} {
		_, err := graph.Parse(c.in)
		pe, ok := err.(*graph.PatternError)
		if !ok {
			t.Errorf("Parse(%q): error %v, want a *PatternError", c.in, err)
			continue
		}
		if pe.Pos != c.pos || !strings.Contains(pe.Error(), c.text) {
			t.Errorf("Parse(%q): %v (position %d); want position %d and %q", c.in, err, pe.Pos, c.pos, c.text)
		}
	}
}

func TestCDMoERatio(t *testing.T) {
	l, _ := graph.ExpandPattern("(SE)7 AE")
	if r := graph.CDMoERatio(l); r != 0.5 {
		t.Errorf("ratio of (SE)7 AE = %v, want 0.5", r)
	}
}

// TestConfigErrors: each bad config is reported before anything is built,
// with the field it is about.
func TestConfigErrors(t *testing.T) {
	for _, c := range []struct {
		name  string
		edit  func(c *graph.Config)
		field string
	}{
		{"bad letter", func(c *graph.Config) { c.Pattern = "SXM" }, "position 2"},
		{"unbalanced", func(c *graph.Config) { c.Pattern = "(SM" }, "unbalanced"},
		{"heads do not divide", func(c *graph.Config) { c.Heads = 3 }, "config.heads"},
		{"ssd heads", func(c *graph.Config) { c.SSD.Heads = 5 }, "config.ssd.heads"},
		{"non-square experts", func(c *graph.Config) { c.CDMoE.Experts = 10 }, "config.cdmoe.experts"},
		{"missing d_model", func(c *graph.Config) { c.DModel = 0 }, "config.d_model"},
		{"missing vocab", func(c *graph.Config) { c.Vocab = 0 }, "config.vocab"},
		{"unknown arch", func(c *graph.Config) { c.Pattern = ""; c.Arch = "gpt5" }, "gpt5"},
		{"arch and pattern", func(c *graph.Config) { c.Arch = "llama" }, "not both"},
		{"ssd variant", func(c *graph.Config) { c.SSD.Variant = "rotary" }, "config.ssd.variant"},
		{"ifa mask", func(c *graph.Config) { c.IFA.Mask = "dm" }, "config.ifa.dynamic_mask"},
		{"moe top_k", func(c *graph.Config) { c.MoE.TopK = 9 }, "config.moe.top_k"},
		{"gqa", func(c *graph.Config) { c.Attention.KVHeads = 3 }, "config.attention.kv_heads"},
		{"odd rope d_state", func(c *graph.Config) { c.SSD.DState = 7 }, "config.ssd.d_state"},
	} {
		cfg := tinyConfig("", "SAIKBMERH")
		c.edit(&cfg)
		err := cfg.Validate()
		if err == nil || !strings.Contains(err.Error(), c.field) {
			t.Errorf("%s: error %v, want one naming %q", c.name, err, c.field)
		}
		if _, err2 := graph.New(cfg); err2 == nil {
			t.Errorf("%s: New accepted the config", c.name)
		}
	}
}

// TestConfigJSONRoundTrip: a resolved config survives JSON unchanged, and
// an unknown field is an error.
func TestConfigJSONRoundTrip(t *testing.T) {
	cfg := tinyConfig("cheems", "").Resolved()
	data, err := cfg.MarshalIndent()
	if err != nil {
		t.Fatal(err)
	}
	back, err := graph.ParseConfig(data)
	if err != nil {
		t.Fatalf("%+v", err)
	}
	if !reflect.DeepEqual(back, cfg) {
		t.Errorf("round trip changed the config:\n%+v\n%+v", cfg, back)
	}
	var raw map[string]any
	_ = json.Unmarshal(data, &raw)
	raw["d_modle"] = 3
	bad, _ := json.Marshal(raw)
	if _, err := graph.ParseConfig(bad); err == nil || !strings.Contains(err.Error(), "d_modle") {
		t.Errorf("unknown field: error %v, want one naming d_modle", err)
	}
}
