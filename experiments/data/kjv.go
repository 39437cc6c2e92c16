package data

import (
	"bytes"
	"compress/gzip"
	_ "embed"
	"io"
	"regexp"
	"strings"
	"sync"

	"github.com/pkg/errors"
)

//go:embed corpus/kjv.txt.gz
var kjvGz []byte

// KJVName is the name of the embedded corpus in configs and results.
const KJVName = "kjv"

var (
	kjvOnce sync.Once
	kjvText string
	kjvErr  error
)

// KJV returns the embedded King James Bible (corpus/make_kjv.sh made it from
// Debian's bible-kjv), about 4.3 MB of text.
func KJV() (string, error) {
	kjvOnce.Do(func() {
		r, err := gzip.NewReader(bytes.NewReader(kjvGz))
		if err != nil {
			kjvErr = errors.Wrap(err, "embedded KJV corpus")
			return
		}
		b, err := io.ReadAll(r)
		if err != nil {
			kjvErr = errors.Wrap(err, "embedded KJV corpus")
			return
		}
		kjvText = string(b)
	})
	return kjvText, kjvErr
}

// chapterHeader matches the lines that open a chapter, "Genesis 1",
// "1 Samuel 3", "Song of Solomon 2".
var chapterHeader = regexp.MustCompile(`^([1-3] )?[A-Z][A-Za-z ]*[a-z] [0-9]+$`)

// Books splits the KJV text into its books, in order, by the chapter
// headers: each element is one book's text.
func Books(text string) []string {
	var books []string
	var cur strings.Builder
	name := ""
	for _, line := range strings.SplitAfter(text, "\n") {
		if m := chapterHeader.FindStringSubmatch(strings.TrimSpace(line)); m != nil {
			trim := strings.TrimSpace(line)
			book := trim[:strings.LastIndexByte(trim, ' ')]
			if book != name && name != "" {
				books = append(books, cur.String())
				cur.Reset()
			}
			name = book
		}
		cur.WriteString(line)
	}
	if cur.Len() > 0 {
		books = append(books, cur.String())
	}
	return books
}

// ValidationBooks is how many of the KJV's last books are held out: 4 of
// 66, the last 5% rounded up (SPEC §6), 2 John to Revelation.
const ValidationBooks = 4

// KJVSplit returns the embedded corpus split deterministically into
// training text (Genesis to 1 John) and validation text (the last
// ValidationBooks books).
func KJVSplit() (train, valid string, err error) {
	text, err := KJV()
	if err != nil {
		return "", "", err
	}
	books := Books(text)
	if len(books) <= ValidationBooks {
		return "", "", errors.Errorf("embedded KJV corpus: found %d books, want 66", len(books))
	}
	cut := len(books) - ValidationBooks
	return strings.Join(books[:cut], ""), strings.Join(books[cut:], ""), nil
}
