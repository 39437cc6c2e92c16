package data

import (
	"bytes"
	"compress/gzip"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzLoadBPE: any bytes as tokenizer.json load or give an error naming
// the file, never a panic; a tokenizer that loads encodes and decodes text
// back to itself.
func FuzzLoadBPE(f *testing.F) {
	b, err := TrainBPE([]string{"in the beginning god created the heaven and the earth"}, ByteVocab+20)
	if err != nil {
		f.Fatal(err)
	}
	good, err := b.JSON()
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good)
	f.Add(good[:len(good)/2])
	f.Add([]byte(`{"type": "bpe", "vocab_size": 257, "merges": [[0, 0]]}`))
	f.Add([]byte(`{"type": "bpe", "vocab_size": 257, "merges": [[300, 1]]}`))
	f.Add([]byte(`{"type": "bpe", "vocab_size": 256, "merges": []}`))
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, raw []byte) {
		path := filepath.Join(dir, "tokenizer.json")
		if err := os.WriteFile(path, raw, 0o644); err != nil {
			t.Fatal(err)
		}
		tok, err := LoadBPE(path)
		if err != nil {
			if !strings.Contains(err.Error(), path) && !strings.Contains(err.Error(), "bpe") {
				t.Fatalf("error %q names neither the file nor the tokenizer", err)
			}
			return
		}
		const text = "And God said, Let there be light: and there was light. ünïcödé"
		got, err := tok.Decode(tok.Encode(text))
		if err != nil || got != text {
			t.Fatalf("round trip: %q, %v", got, err)
		}
	})
}

// FuzzLoadCorpus: any bytes as a .txt, .jsonl or .txt.gz corpus load or
// give an error naming the file, never a panic.
func FuzzLoadCorpus(f *testing.F) {
	var gz bytes.Buffer
	w := gzip.NewWriter(&gz)
	w.Write([]byte("In the beginning.\nAnd the earth.\n"))
	w.Close()
	f.Add(uint8(0), []byte("In the beginning God created the heaven and the earth.\n"))
	f.Add(uint8(1), []byte(`{"text": "first document"}`+"\n"+`{"text": "second"}`+"\n"))
	f.Add(uint8(1), []byte(`{"txt": "no text field"}`+"\n"))
	f.Add(uint8(1), []byte("{broken\n"))
	f.Add(uint8(2), gz.Bytes())
	f.Add(uint8(2), gz.Bytes()[:10])
	f.Add(uint8(0), []byte{0xff, 0xfe, '\n'})
	dir := f.TempDir()
	kinds := []string{"corpus.txt", "corpus.jsonl", "corpus.txt.gz"}
	f.Fuzz(func(t *testing.T, kind uint8, raw []byte) {
		path := filepath.Join(dir, kinds[int(kind)%len(kinds)])
		if err := os.WriteFile(path, raw, 0o644); err != nil {
			t.Fatal(err)
		}
		defer os.Remove(path)
		docs, err := LoadCorpus(path)
		if err != nil {
			if !strings.Contains(err.Error(), path) {
				t.Fatalf("error %q does not name the file", err)
			}
			return
		}
		if len(docs) == 0 {
			t.Fatal("no documents and no error")
		}
	})
}
