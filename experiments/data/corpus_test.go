package data

import (
	"compress/gzip"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func write(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestLoadCorpus(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "a.txt", "first line\nsecond line\n")
	write(t, dir, "b.jsonl", `{"text": "doc one"}`+"\n\n"+`{"text": "doc two", "id": 3}`+"\n")
	write(t, dir, "notes.md", "skipped")
	f, _ := os.Create(filepath.Join(dir, "c.txt.gz"))
	gz := gzip.NewWriter(f)
	gz.Write([]byte("zipped\n"))
	gz.Close()
	f.Close()
	docs, err := LoadCorpus(dir)
	if err != nil {
		t.Fatalf("%+v", err)
	}
	var texts []string
	for _, d := range docs {
		texts = append(texts, d.Text)
	}
	want := []string{"first line\nsecond line\n", "doc one", "doc two", "zipped\n"}
	if strings.Join(texts, "|") != strings.Join(want, "|") {
		t.Errorf("texts %q, want %q", texts, want)
	}
	if docs[2].Source != filepath.Join(dir, "b.jsonl")+":3" {
		t.Errorf("source %q", docs[2].Source)
	}
}

// TestCorpusErrors: each bad input is an error naming the file and line.
func TestCorpusErrors(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		name, content, want string
	}{
		{"bad.txt", "ok\nbad \xff byte\n", "bad.txt:2: invalid UTF-8"},
		{"bad.jsonl", `{"text": "ok"}` + "\n{broken\n", "bad.jsonl:2: not a JSON object"},
		{"notext.jsonl", `{"body": "x"}` + "\n", `notext.jsonl:1: no "text" field`},
		{"empty.txt", "", "empty"},
		{"bad.txt.gz", "not gzip", "not a gzip file"},
		{"long.txt", "x\n" + strings.Repeat("y", MaxLineBytes+10) + "\n", "long.txt:2: a line longer"},
		{"data.csv", "a,b", "unknown file type"},
	} {
		p := write(t, dir, c.name, c.content)
		_, err := LoadCorpus(p)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want %q", c.name, err, c.want)
		}
	}
	if _, err := LoadCorpus(filepath.Join(dir, "missing.txt")); err == nil || !strings.Contains(err.Error(), "missing.txt") {
		t.Errorf("missing file: %v", err)
	}
	empty := t.TempDir()
	if _, err := LoadCorpus(empty); err == nil || !strings.Contains(err.Error(), "no .txt") {
		t.Errorf("empty folder: %v", err)
	}
}

func TestSplitAndBatches(t *testing.T) {
	train, valid := SplitDocuments([]Document{{Text: strings.Repeat("line of text\n", 100)}})
	if len(valid[0]) == 0 || len(train[0])+len(valid[0]) != 1300 || !strings.HasSuffix(train[0], "\n") {
		t.Errorf("split %d + %d", len(train[0]), len(valid[0]))
	}
	stream := Encode(ByteTokenizer{}, []string{strings.Repeat("abcdefgh", 20)})
	seqs, err := Pack(stream, 16)
	if err != nil {
		t.Fatal(err)
	}
	x, y := seqs.At(2)
	if x[1] != y[0] || len(x) != 16 {
		t.Errorf("targets are not the next tokens")
	}
	b1, _ := NewBatcher(seqs, 3, 7)
	b2, _ := NewBatcher(seqs, 3, 7)
	// A fresh batcher asked for step 25 directly (a resumed run) gives what
	// one that went through steps 0..25 gives.
	for s := 0; s < 25; s++ {
		b1.Batch(s)
	}
	i1, _ := b1.Batch(25)
	i2, _ := b2.Batch(25)
	for j := range i1 {
		for k := range i1[j] {
			if i1[j][k] != i2[j][k] {
				t.Fatal("a resumed batcher differs from a continuous one")
			}
		}
	}
	if _, err := Pack(stream[:5], 16); err == nil {
		t.Error("packing 5 tokens into 16 succeeded")
	}
}
