package graph

import (
	"bytes"
	"encoding/json"
	"reflect"
	"sort"
	"strings"

	"github.com/pkg/errors"

	"github.com/wonderful-matrices/wonderful-matrices-go/layers"
	"github.com/wonderful-matrices/wonderful-matrices-go/ops"
)

// Config is a model as plain data (STYLE §5): the stack (a named
// architecture or a pattern), the sizes, and one section per layer kind. A
// zero field means its default; Resolved fills them in, and the resolved
// config is what a run saves. Validate runs before anything is built.
type Config struct {
	// Arch is a named architecture (ArchNames); empty to use Pattern.
	Arch string `json:"arch,omitempty"`
	// Pattern is a stack in the pattern language (SPEC §4), when Arch is "".
	Pattern string `json:"pattern,omitempty"`
	// NBlocks repeats the pattern (default 1).
	NBlocks int `json:"n_blocks,omitempty"`
	// DogeCDMoE is the number of CDMoE sublayers after doge's IFA (default 3).
	DogeCDMoE int `json:"doge_cdmoe,omitempty"`

	// Vocab is the vocabulary size (required).
	Vocab int `json:"vocab"`
	// DModel is the residual width (required).
	DModel int `json:"d_model"`
	// Heads is the default head count of every mixer (required).
	Heads int `json:"heads"`
	// MaxPosition sizes the paper dynamic mask and is where dynamic NTK
	// starts (default 2048).
	MaxPosition int `json:"max_position,omitempty"`
	// RopeBase is RoPE's base (default 10000).
	RopeBase float64 `json:"rope_base,omitempty"`
	// LogNTrainLen turns on log-n query scaling in attention (TransXSSM
	// appendix A) when > 0.
	LogNTrainLen int `json:"logn_train_len,omitempty"`
	// TieEmbeddings uses the embedding as the LM head (default untied).
	TieEmbeddings bool `json:"tie_embeddings,omitempty"`
	// NormEps is RMSNorm's eps (default 1e-6).
	NormEps float64 `json:"norm_eps,omitempty"`

	SSD       layers.SSDConfig       `json:"ssd"`
	Mamba2    layers.Mamba2Config    `json:"mamba2"`
	Attention layers.AttentionConfig `json:"attention"`
	IFA       layers.InnerFuncConfig `json:"ifa"`
	CoCA      layers.CoCAConfig      `json:"coca"`
	MLP       layers.MLPConfig       `json:"mlp"`
	CDMoE     layers.CDMoEConfig     `json:"cdmoe"`
	MoE       layers.MoEConfig       `json:"moe"`

	// Sections hold the config sections of sublayer kinds registered from
	// outside graph (SublayerKind.Config), by key; in JSON they sit beside
	// the sections above. Read one with DecodeSection.
	Sections map[string]json.RawMessage `json:"-"`
}

// configFields is Config without its JSON methods.
type configFields Config

// builtinSections are the JSON keys of Config's own fields: an outside
// kind's section may not take one.
var builtinSections = func() map[string]bool {
	out := map[string]bool{}
	t := reflect.TypeOf(configFields{})
	for i := 0; i < t.NumField(); i++ {
		if name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ","); name != "" && name != "-" {
			out[name] = true
		}
	}
	return out
}()

// MarshalJSON writes the config's fields, then the sections of outside
// kinds in key order. A config without them gives the bytes it always did.
func (c Config) MarshalJSON() ([]byte, error) {
	b, err := json.Marshal(configFields(c))
	if err != nil || len(c.Sections) == 0 {
		return b, err
	}
	keys := make([]string, 0, len(c.Sections))
	for k := range c.Sections {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := append([]byte{}, b[:len(b)-1]...) // without the closing brace
	for _, k := range keys {
		kb, _ := json.Marshal(k)
		out = append(append(append(append(out, ','), kb...), ':'), c.Sections[k]...)
	}
	return append(out, '}'), nil
}

// UnmarshalJSON reads a config, rejecting unknown fields (a typo in a field
// name is an error, not a silent default); a key that is the section of a
// registered outside kind goes to Sections.
func (c *Config) UnmarshalJSON(b []byte) error {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	outside := outsideKinds()
	sections := map[string]json.RawMessage{}
	for key, v := range raw {
		if _, ok := outside[key]; ok {
			sections[key] = v
			delete(raw, key)
		}
	}
	rest, err := json.Marshal(raw)
	if err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(rest))
	dec.DisallowUnknownFields()
	var f configFields
	if err := dec.Decode(&f); err != nil {
		return err
	}
	*c = Config(f)
	if len(sections) > 0 {
		c.Sections = sections
	}
	return nil
}

// Resolved returns c with every default filled in. It does not validate.
func (c Config) Resolved() Config {
	if c.NBlocks == 0 {
		c.NBlocks = 1
	}
	if c.Arch == "doge" && c.DogeCDMoE == 0 {
		c.DogeCDMoE = 3
	}
	if c.MaxPosition == 0 {
		c.MaxPosition = 2048
	}
	if c.RopeBase == 0 {
		c.RopeBase = 10000
	}
	if c.NormEps == 0 {
		c.NormEps = ops.DefaultRMSNormEps
	}
	if seiArchs[c.Arch] && c.MoE.Experts == 0 {
		c.MoE.Experts = 4
	}
	if c.Sections != nil { // a copy: resolving must not write into the caller's map
		s := make(map[string]json.RawMessage, len(c.Sections))
		for k, v := range c.Sections {
			s[k] = v
		}
		c.Sections = s
	}
	for _, k := range Kinds() {
		if k.Resolve != nil {
			k.Resolve(&c)
		}
	}
	return c
}

// Letters returns the expanded stack: the architecture's or the config's
// pattern, repeated NBlocks times.
func (c Config) Letters() ([]byte, error) {
	p := c.Pattern
	switch {
	case c.Arch != "" && c.Pattern != "":
		return nil, errors.Errorf("config: give arch or pattern, not both (arch %q, pattern %q)", c.Arch, c.Pattern)
	case c.Arch != "":
		var err error
		if p, err = ArchPattern(c.Arch, c.DogeCDMoE); err != nil {
			return nil, errors.Wrap(err, "config")
		}
	case p == "":
		return nil, errors.Errorf("config: arch or pattern is required (arch is one of %v)", ArchNames())
	}
	letters, err := ExpandPattern(p)
	if err != nil {
		return nil, errors.Wrap(err, "config.pattern")
	}
	if c.NBlocks < 1 {
		return nil, errors.Errorf("config.n_blocks: must be >= 1, got %d", c.NBlocks)
	}
	out := make([]byte, 0, len(letters)*c.NBlocks)
	for i := 0; i < c.NBlocks; i++ {
		out = append(out, letters...)
	}
	return out, nil
}

// Validate checks a config (resolving it first): the stack, the sizes, and
// the section of every letter the stack uses. Each error names the field.
func (c Config) Validate() error {
	c = c.Resolved()
	letters, err := c.Letters()
	if err != nil {
		return err
	}
	switch {
	case c.Vocab < 1:
		return errors.Errorf("config.vocab: must be >= 1, got %d (missing?)", c.Vocab)
	case c.DModel < 1:
		return errors.Errorf("config.d_model: must be >= 1, got %d (missing?)", c.DModel)
	case c.Heads < 1:
		return errors.Errorf("config.heads: must be >= 1, got %d (missing?)", c.Heads)
	case c.DModel%c.Heads != 0:
		return errors.Errorf("config.heads: %d does not divide d_model %d", c.Heads, c.DModel)
	case c.MaxPosition < 1:
		return errors.Errorf("config.max_position: must be >= 1, got %d", c.MaxPosition)
	case !(c.RopeBase > 1):
		return errors.Errorf("config.rope_base: must be > 1, got %v", c.RopeBase)
	case c.LogNTrainLen < 0:
		return errors.Errorf("config.logn_train_len: must be >= 0, got %d", c.LogNTrainLen)
	case !(c.NormEps > 0):
		return errors.Errorf("config.norm_eps: must be > 0, got %v", c.NormEps)
	case c.Arch == "doge" && c.DogeCDMoE < 0:
		return errors.Errorf("config.doge_cdmoe: must be >= 0, got %d", c.DogeCDMoE)
	}
	used := map[byte]bool{}
	for _, l := range letters {
		if used[l] {
			continue
		}
		used[l] = true
		if k, _ := kind(l); k.Validate != nil {
			if err := k.Validate(c); err != nil {
				return err
			}
		}
	}
	return nil
}

// MarshalIndent is the config as indented JSON (what a run saves).
func (c Config) MarshalIndent() ([]byte, error) {
	return json.MarshalIndent(c, "", "  ")
}

// ParseConfig reads a config from JSON, rejecting unknown fields (a typo in
// a field name is an error, not a silent default), then validates it.
func ParseConfig(data []byte) (Config, error) {
	var c Config
	if err := json.Unmarshal(data, &c); err != nil {
		return Config{}, errors.Wrap(err, "config: JSON")
	}
	if err := c.Validate(); err != nil {
		return Config{}, err
	}
	return c, nil
}

// Rope is the model's RoPE config (no NTK; CoCA, and QCAtn with
// attention.ntk, add it).
func (c Config) Rope() ops.RopeConfig {
	r := ops.DefaultRope()
	r.Base = c.RopeBase
	return r
}
