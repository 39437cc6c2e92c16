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
	train, valid, test, err := KJVSplit()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(valid, "James 1\n") || !strings.HasPrefix(test, "2 John 1\n") {
		t.Errorf("validation starts %q, test %q", valid[:20], test[:20])
	}
	if !strings.HasSuffix(strings.TrimSpace(train[len(train)-2000:]), "Amen.") || strings.Contains(train, "James 1\n") || strings.Contains(valid, "Revelation 1\n") {
		t.Errorf("training text ends %q", train[len(train)-60:])
	}
	if train+valid+test != text {
		t.Errorf("split sizes %d + %d + %d != %d", len(train), len(valid), len(test), len(text))
	}
}
