package atomicfile

import (
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/pkg/errors"
)

// A write that fails half-way leaves the old file whole and no temp file.
func TestWriteFailureKeepsOldFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "f")
	if err := WriteBytes(path, []byte("old contents")); err != nil {
		t.Fatal(err)
	}
	err := Write(path, func(w io.Writer) error {
		w.Write([]byte("new, partial"))
		return errors.New("disk full")
	})
	if err == nil {
		t.Fatal("the failing write reported success")
	}
	got, _ := os.ReadFile(path)
	if string(got) != "old contents" {
		t.Errorf("file now holds %q", got)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("%d entries in the folder, want only the file", len(entries))
	}
}

// A written file has the mode of any file the user creates with 0644 (the
// umask applied), not CreateTemp's 0600.
func TestWriteMode(t *testing.T) {
	dir := t.TempDir()
	p, plain := filepath.Join(dir, "f"), filepath.Join(dir, "plain")
	if err := WriteBytes(p, []byte("x")); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(plain, os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	st, _ := os.Stat(p)
	want, _ := os.Stat(plain)
	if st.Mode().Perm() != want.Mode().Perm() || st.Mode().Perm()&0o600 != 0o600 {
		t.Errorf("mode %v, want %v (what os.OpenFile gives 0644)", st.Mode().Perm(), want.Mode().Perm())
	}
}
