package graph

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"gorgonia.org/tensor"
)

// FuzzParsePattern: any string parses or gives a *PatternError, never a
// panic; a parsed pattern expands to at most MaxSublayers letters, and the
// expansion parses back to itself.
func FuzzParsePattern(f *testing.F) {
	for _, s := range []string{"(SM)7 AM", "(SE)7 IE", "AH", "((S)3 M)2", "", "(", ")", "(S)0", "S3", "((S)1000)1000", "x", "(SM)1001"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		nodes, err := Parse(s)
		if err != nil {
			if _, ok := err.(*PatternError); !ok {
				t.Fatalf("%q: error %T %v is not a *PatternError", s, err, err)
			}
			return
		}
		letters := Expand(nodes)
		if len(letters) == 0 || len(letters) > MaxSublayers {
			t.Fatalf("%q expands to %d letters", s, len(letters))
		}
		again, err := ExpandPattern(string(letters))
		if err != nil || !bytes.Equal(again, letters) {
			t.Fatalf("%q: the expansion %q does not parse back to itself (%v)", s, letters, err)
		}
	})
}

// FuzzParseConfig: any bytes give a config that validates or an error,
// never a panic; a config that parses survives MarshalIndent and parses to
// the same JSON.
func FuzzParseConfig(f *testing.F) {
	f.Add([]byte(`{"pattern": "(SM)2 AM", "vocab": 256, "d_model": 64, "heads": 4}`))
	f.Add([]byte(`{"pattern": "(SE)3 IE", "vocab": 256, "d_model": 32, "heads": 2, "cdmoe": {"experts": 64, "top_k": 4}}`))
	f.Add([]byte(`{"pattern": "S", "vocab": 0}`))
	f.Add([]byte(`{"patern": "S"}`))
	f.Add([]byte(`[1, 2]`))
	f.Add([]byte(`{"pattern": "K", "vocab": 256, "d_model": 64, "heads": 4, "coca": {}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := ParseConfig(b)
		if err != nil {
			return
		}
		j, err := c.MarshalIndent()
		if err != nil {
			t.Fatalf("%s: marshal: %v", b, err)
		}
		c2, err := ParseConfig(j)
		if err != nil {
			t.Fatalf("%s: the marshalled config %s does not parse: %v", b, j, err)
		}
		j2, _ := c2.MarshalIndent()
		if !bytes.Equal(j, j2) {
			t.Fatalf("round trip changed the config:\n%s\n%s", j, j2)
		}
	})
}

// FuzzLoadCheckpoint: any bytes as model.safetensors load or give an
// error naming the file, never a panic. The seeds are a real checkpoint, cut
// and flipped.
func FuzzLoadCheckpoint(f *testing.F) {
	m, err := New(Config{Pattern: "SM", Vocab: 16, DModel: 8, Heads: 2})
	if err != nil {
		f.Fatal(err)
	}
	if err := m.Init(tensor.Float32, 1); err != nil {
		f.Fatal(err)
	}
	dir := f.TempDir()
	if err := Save(dir, m, nil); err != nil {
		f.Fatal(err)
	}
	good, err := os.ReadFile(filepath.Join(dir, WeightsFile))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good)
	f.Add(good[:len(good)/2])
	f.Add(good[:8])
	flipped := append([]byte(nil), good...)
	flipped[len(flipped)-1] ^= 1
	f.Add(flipped)
	f.Fuzz(func(t *testing.T, b []byte) {
		if _, _, err := decodeCheckpoint(b, WeightsFile); err != nil && !bytes.Contains([]byte(err.Error()), []byte(WeightsFile)) {
			t.Fatalf("error %q does not name the file", err)
		}
	})
}

// Nested groups multiply: a pattern past MaxSublayers is refused before
// anything is expanded.
func TestPatternTooLong(t *testing.T) {
	_, err := Parse("((SM)1000)1000")
	if err == nil || !bytes.Contains([]byte(err.Error()), []byte("more than 10000 sublayers")) {
		t.Fatalf("a million sublayers: %v", err)
	}
	if _, err := Parse("(SM)1000"); err != nil {
		t.Fatalf("2000 sublayers: %v", err)
	}
}
