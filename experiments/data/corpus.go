package data

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/pkg/errors"
)

// Document is one text of a corpus and where it came from ("file" or
// "file:line").
type Document struct {
	Source string
	Text   string
}

// MaxLineBytes bounds one line of a corpus file (SPEC §6: "a line too long"
// is an error, not an out-of-memory).
const MaxLineBytes = 4 << 20

// LoadCorpus reads a user's corpus: a .txt or .txt.gz file (one document),
// a .jsonl file (one document per line, in its "text" field), or a folder
// of such files (read in name order; other files are skipped). Every error
// names the file and, where there is one, the line: a missing path, a folder
// with no corpus files, invalid UTF-8, a line longer than MaxLineBytes, a
// broken gzip stream, a JSON line without "text", an empty corpus.
func LoadCorpus(path string) ([]Document, error) {
	info, err := os.Stat(path)
	if err != nil {
		return nil, errors.Errorf("corpus %s: %v", path, errors.Cause(err))
	}
	var files []string
	if info.IsDir() {
		err := filepath.WalkDir(path, func(p string, d os.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if !d.IsDir() && corpusKind(p) != "" {
				files = append(files, p)
			}
			return nil
		})
		if err != nil {
			return nil, errors.Wrapf(err, "corpus %s", path)
		}
		if len(files) == 0 {
			return nil, errors.Errorf("corpus %s: the folder holds no .txt, .txt.gz or .jsonl file", path)
		}
		sort.Strings(files)
	} else {
		if corpusKind(path) == "" {
			return nil, errors.Errorf("corpus %s: unknown file type (want .txt, .txt.gz or .jsonl)", path)
		}
		files = []string{path}
	}
	var docs []Document
	total := 0
	for _, f := range files {
		d, err := loadFile(f)
		if err != nil {
			return nil, err
		}
		for _, doc := range d {
			total += len(doc.Text)
		}
		docs = append(docs, d...)
	}
	if total == 0 {
		return nil, errors.Errorf("corpus %s: empty (no text in %d file(s))", path, len(files))
	}
	return docs, nil
}

func corpusKind(p string) string {
	switch {
	case strings.HasSuffix(p, ".txt.gz"):
		return "txt.gz"
	case strings.HasSuffix(p, ".txt"):
		return "txt"
	case strings.HasSuffix(p, ".jsonl"):
		return "jsonl"
	}
	return ""
}

func loadFile(path string) ([]Document, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, errors.Errorf("corpus %s: %v", path, errors.Cause(err))
	}
	defer f.Close()
	var r io.Reader = f
	kind := corpusKind(path)
	if kind == "txt.gz" {
		gz, err := gzip.NewReader(f)
		if err != nil {
			return nil, errors.Errorf("corpus %s: not a gzip file (%v)", path, err)
		}
		defer gz.Close()
		r = gz
	}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), MaxLineBytes)
	var docs []Document
	var text bytes.Buffer
	line := 0
	for sc.Scan() {
		line++
		b := sc.Bytes()
		if !utf8.Valid(b) {
			return nil, errors.Errorf("corpus %s:%d: invalid UTF-8", path, line)
		}
		if kind != "jsonl" {
			text.Write(b)
			text.WriteByte('\n')
			continue
		}
		if len(bytes.TrimSpace(b)) == 0 {
			continue
		}
		var rec struct {
			Text *string `json:"text"`
		}
		if err := json.Unmarshal(b, &rec); err != nil {
			return nil, errors.Errorf("corpus %s:%d: not a JSON object (%v)", path, line, err)
		}
		if rec.Text == nil {
			return nil, errors.Errorf(`corpus %s:%d: no "text" field`, path, line)
		}
		docs = append(docs, Document{Source: path + ":" + strconv.Itoa(line), Text: *rec.Text})
	}
	if err := sc.Err(); err != nil {
		if err == bufio.ErrTooLong {
			return nil, errors.Errorf("corpus %s:%d: a line longer than %d bytes", path, line+1, MaxLineBytes)
		}
		return nil, errors.Errorf("corpus %s:%d: %v", path, line+1, err)
	}
	if kind != "jsonl" {
		docs = append(docs, Document{Source: path, Text: text.String()})
	}
	return docs, nil
}

// ValidationFraction is the share of a user's corpus held out (SPEC §6: 5%).
const ValidationFraction = 0.05

// SplitDocuments splits docs deterministically into training and validation
// text: the last 5% of documents when there are at least 20, otherwise the
// last 5% of the text, cut at a line break.
func SplitDocuments(docs []Document) (train, valid []string) {
	return splitTail(docs, ValidationFraction)
}

// SplitHeldOut splits a corpus three ways, deterministically: the last
// ValidationFraction of it (by documents when there are at least 20, by
// bytes at a line boundary otherwise) is held out, its first half the
// validation split (choices) and its second the test split (reported
// numbers); the rest is for training.
func SplitHeldOut(docs []Document) (train, valid, test []string) {
	train, held := splitTail(docs, ValidationFraction)
	var heldDocs []Document
	for _, h := range held {
		heldDocs = append(heldDocs, Document{Text: h})
	}
	if len(heldDocs) >= 2 {
		cut := len(heldDocs) / 2
		for i, d := range heldDocs {
			if i < cut {
				valid = append(valid, d.Text)
			} else {
				test = append(test, d.Text)
			}
		}
		return train, valid, test
	}
	valid, test = splitTail(heldDocs, 0.5)
	return train, valid, test
}

// splitTail keeps the last frac of docs apart: whole documents when there
// are at least 20, else the last frac of the bytes from a line boundary.
func splitTail(docs []Document, frac float64) (head, tail []string) {
	if len(docs) >= 20 {
		cut := len(docs) - int(float64(len(docs))*frac+0.999)
		for i, d := range docs {
			if i < cut {
				head = append(head, d.Text)
			} else {
				tail = append(tail, d.Text)
			}
		}
		return head, tail
	}
	var all strings.Builder
	for _, d := range docs {
		all.WriteString(d.Text)
	}
	s := all.String()
	cut := len(s) - int(float64(len(s))*frac)
	if i := strings.IndexByte(s[cut:], '\n'); i >= 0 && cut+i+1 < len(s) {
		cut += i + 1
	}
	return []string{s[:cut]}, []string{s[cut:]}
}
