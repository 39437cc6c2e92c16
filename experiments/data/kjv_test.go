package data

import (
	"strings"
	"testing"
)

func TestKJVBooksAndSplit(t *testing.T) {
	text, err := KJV()
	if err != nil {
		t.Fatal(err)
	}
	books := Books(text)
	if len(books) != 66 {
		t.Fatalf("%d books, want 66", len(books))
	}
	if strings.Join(books, "") != text {
		t.Fatal("the books do not add up to the text")
	}
	if !strings.Contains(books[0][:200], "Genesis 1") || !strings.Contains(books[65][:200], "Revelation 1") {
		t.Errorf("first book starts %q, last %q", books[0][:40], books[65][:40])
	}
	train, valid, err := KJVSplit()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(valid[:100], "2 John") || strings.Contains(train, "Revelation 1\n") {
		t.Errorf("validation starts %q", valid[:60])
	}
	if len(train)+len(valid) != len(text) {
		t.Errorf("split sizes %d + %d != %d", len(train), len(valid), len(text))
	}
}
