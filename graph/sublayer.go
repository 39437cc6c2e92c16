package graph

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"sync"

	"github.com/pkg/errors"

	"github.com/wonderful-matrices/wonderful-matrices-go/layers"
)

// SublayerKind is one letter of the pattern language: everything the stack
// needs to know about a kind of sublayer, so that graph keeps no list of
// letters and a package outside this module can add one (as
// database/sql drivers register themselves). The built-in kinds register
// themselves from graph's sublayer_*.go files, one file each.
type SublayerKind struct {
	// Letter is the pattern letter: an ASCII letter, unique.
	Letter byte
	// Name says what the letter stands for ("SSD (variant from config)").
	Name string
	// Section is the config key of the kind's settings ("ssd"), "" when it
	// has none. Kinds may share a section (routed MoE and MoE-SEI: "moe").
	Section string
	// Resolve fills in the defaults of the kind's section of c; Validate
	// checks the resolved section (errors name the field, "config.ssd.…").
	// Both may be nil. A kind registered with Config gets both from it.
	Resolve  func(c *Config)
	Validate func(c Config) error
	// New makes the layer of one block, named name ("blocks.3.S"), from a
	// resolved and validated config.
	New func(name string, c Config, shape layers.Shape) (layers.Sublayer, error)
	// Config, for a kind registered from outside graph, is a pointer to
	// the zero value of its section's type; the section is kept in the
	// config's JSON under Section beside the built-in ones, and the layer
	// reads it with Config.DecodeSection.
	Config SectionConfig
}

// SectionConfig is the config section of a kind registered from outside
// graph: plain data (a struct with JSON tags) that fills its own defaults
// and checks itself against the model's config.
type SectionConfig interface {
	// Defaults fills in zero fields (it is called on a pointer).
	Defaults(c Config)
	// Validate checks the section; field is its config path ("config.gla").
	Validate(field string, c Config) error
}

var (
	kindsMu sync.RWMutex
	kinds   = map[byte]SublayerKind{}
)

// RegisterSublayer adds a kind of sublayer under its letter. It is meant
// for init functions, so its errors panic at start-up: a letter that is not
// an ASCII letter, a letter registered twice (the message names both
// kinds), a missing name or constructor, or an outside kind's section that
// clashes with a config field.
func RegisterSublayer(k SublayerKind) {
	if err := registerSublayer(k); err != nil {
		panic(err.Error())
	}
}

func registerSublayer(k SublayerKind) error {
	kindsMu.Lock()
	defer kindsMu.Unlock()
	l := k.Letter
	switch {
	case !(l >= 'A' && l <= 'Z' || l >= 'a' && l <= 'z'):
		return errors.Errorf("graph: sublayer %q: the letter %q is not an ASCII letter", k.Name, l)
	case k.Name == "" || k.New == nil:
		return errors.Errorf("graph: sublayer %q: a kind needs a Name and a New", string(l))
	}
	if old, dup := kinds[l]; dup {
		return errors.Errorf("graph: the letter %c is registered twice: %q and %q", l, old.Name, k.Name)
	}
	if k.Config != nil {
		if reflect.TypeOf(k.Config).Kind() != reflect.Pointer {
			return errors.Errorf("graph: sublayer %c (%s): Config must be a pointer to the section's zero value", l, k.Name)
		}
		if k.Section == "" || builtinSections[k.Section] {
			return errors.Errorf("graph: sublayer %c (%s): Section %q is empty or a field of the config", l, k.Name, k.Section)
		}
		k.Resolve, k.Validate = outsideResolve(k), outsideValidate(k)
	}
	kinds[l] = k
	return nil
}

// kind is the registered kind of a letter.
func kind(l byte) (SublayerKind, bool) {
	kindsMu.RLock()
	defer kindsMu.RUnlock()
	k, ok := kinds[l]
	return k, ok
}

// Kinds lists the registered kinds by letter.
func Kinds() []SublayerKind {
	kindsMu.RLock()
	defer kindsMu.RUnlock()
	out := make([]SublayerKind, 0, len(kinds))
	for _, k := range kinds {
		out = append(out, k)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Letter < out[j].Letter })
	return out
}

// letterList is the valid letters in a fixed order, for messages.
func letterList() string {
	var ls []string
	for _, k := range Kinds() {
		ls = append(ls, string(k.Letter))
	}
	return strings.Join(ls, " ")
}

// outsideKinds are the registered kinds with a section of their own, by
// section.
func outsideKinds() map[string]SublayerKind {
	out := map[string]SublayerKind{}
	for _, k := range Kinds() {
		if k.Config != nil {
			out[k.Section] = k
		}
	}
	return out
}

// newSection is a fresh pointer to the zero value of k's section type.
func (k SublayerKind) newSection() SectionConfig {
	return reflect.New(reflect.TypeOf(k.Config).Elem()).Interface().(SectionConfig)
}

// DecodeSection reads the config section key (of a kind registered from
// outside graph) into dst, a pointer to its type; a config without the
// section leaves dst as it is.
func (c Config) DecodeSection(key string, dst any) error {
	raw, ok := c.Sections[key]
	if !ok {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	return errors.Wrapf(dec.Decode(dst), "config.%s", key)
}

// SetSection stores v as the config section key (of a kind registered from
// outside graph).
func (c *Config) SetSection(key string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return errors.Wrapf(err, "config.%s", key)
	}
	if c.Sections == nil {
		c.Sections = map[string]json.RawMessage{}
	}
	c.Sections[key] = b
	return nil
}

func outsideResolve(k SublayerKind) func(c *Config) {
	return func(c *Config) {
		s := k.newSection()
		if c.DecodeSection(k.Section, s) != nil {
			return // Validate reports it
		}
		s.Defaults(*c)
		_ = c.SetSection(k.Section, s)
	}
}

func outsideValidate(k SublayerKind) func(c Config) error {
	return func(c Config) error {
		s := k.newSection()
		if err := c.DecodeSection(k.Section, s); err != nil {
			return err
		}
		return s.Validate("config."+k.Section, c)
	}
}

// newSublayer makes the layer of a letter of a validated, resolved config.
func newSublayer(letter byte, name string, c Config, shape layers.Shape) (layers.Sublayer, error) {
	k, ok := kind(letter)
	if !ok {
		return nil, errors.Errorf("graph: letter %q has no registered kind (valid: %s)", letter, letterList())
	}
	l, err := k.New(name, c, shape)
	if err != nil {
		return nil, errors.Wrapf(err, "%s (%c)", name, letter)
	}
	if l == nil {
		return nil, fmt.Errorf("graph: the kind %c (%s) made no layer", letter, k.Name)
	}
	return l, nil
}
