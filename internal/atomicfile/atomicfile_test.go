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

// A written file is readable by others like any file the user creates (not
// CreateTemp's 0600).
func TestWriteMode(t *testing.T) {
	p := filepath.Join(t.TempDir(), "f")
	if err := WriteBytes(p, []byte("x")); err != nil {
		t.Fatal(err)
	}
	st, _ := os.Stat(p)
	if want := 0o644 &^ umask(); st.Mode().Perm() != want {
		t.Errorf("mode %v, want %v", st.Mode().Perm(), want)
	}
}
