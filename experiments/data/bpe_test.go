package data

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestBPETrainEncodeDecode(t *testing.T) {
	text, _, _, err := KJVSplit()
	if err != nil {
		t.Fatal(err)
	}
	text = text[:200_000]
	b, err := TrainBPE([]string{text}, 600)
	if err != nil {
		t.Fatal(err)
	}
	if b.VocabSize() != 600 || b.Name() != "bpe-600" {
		t.Fatalf("vocab %d, name %s; want 600, bpe-600", b.VocabSize(), b.Name())
	}
	sample := text[100_000:110_000] + " ünïcödé, 1611 — \"quotes\"\n\n"
	ids := b.Encode(sample)
	back, err := b.Decode(ids)
	if err != nil || back != sample {
		t.Fatalf("decode(encode(x)) != x (err %v)", err)
	}
	if ratio := float64(len(sample)) / float64(len(ids)); ratio < 2 {
		t.Errorf("%.2f bytes per token on KJV text with 340 merges, want >= 2", ratio)
	}
	for _, id := range ids {
		if id >= 256 && id < ByteVocab {
			t.Fatalf("encode produced special %d", id)
		}
	}
	again, _ := TrainBPE([]string{text}, 600)
	if !reflect.DeepEqual(again.merges, b.merges) {
		t.Error("training twice gave different merges")
	}
	path := filepath.Join(t.TempDir(), "tokenizer.json")
	if err := b.Save(path); err != nil {
		t.Fatal(err)
	}
	l, err := LoadBPE(path)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(l.Encode(sample), ids) {
		t.Error("a loaded tokenizer encodes differently")
	}
}

func TestBPEBadInput(t *testing.T) {
	if _, err := TrainBPE([]string{"abc"}, 100); err == nil || !strings.Contains(err.Error(), "smaller than") {
		t.Errorf("vocab 100: %v", err)
	}
	b, _ := TrainBPE([]string{"aaaa"}, 1000)
	if b.VocabSize() >= 1000 {
		t.Errorf("training stops when no pair repeats; got vocab %d", b.VocabSize())
	}
	if _, err := b.Decode([]int{5000}); err == nil {
		t.Error("decode of an unknown id gave no error")
	}
	dir := t.TempDir()
	for name, body := range map[string]string{
		"notjson": "{",
		"type":    `{"type":"wordpiece","vocab_size":260,"merges":[]}`,
		"size":    `{"type":"bpe","vocab_size":300,"merges":[[97,98]]}`,
		"forward": `{"type":"bpe","vocab_size":261,"merges":[[97,260]]}`,
		"special": `{"type":"bpe","vocab_size":261,"merges":[[97,256]]}`,
		"twice":   `{"type":"bpe","vocab_size":262,"merges":[[97,98],[97,98]]}`,
	} {
		p := filepath.Join(dir, name)
		os.WriteFile(p, []byte(body), 0o644)
		if _, err := LoadBPE(p); err == nil || !strings.Contains(err.Error(), p) {
			t.Errorf("%s: error %v should name the file", name, err)
		}
	}
}

func TestUnigramPPL(t *testing.T) {
	// add-one counts 3 and 3 of 6: p = 1/2 each, ppl 2
	if got := UnigramPPL([]int{0, 1, 0, 1}, []int{0, 1}, 2); got < 2-1e-12 || got > 2+1e-12 {
		t.Errorf("UnigramPPL = %v, want 2", got)
	}
}
