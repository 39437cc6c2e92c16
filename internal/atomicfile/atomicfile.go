// Package atomicfile writes files so that a crash leaves either the old file
// or the new one, never a mix (SPEC §8): write to a temporary name in the
// same folder, sync, rename over the target, sync the folder.
package atomicfile

import (
	"bufio"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"

	"github.com/pkg/errors"
)

// createTemp opens a new file prefix+random in dir with mode 0644 (less
// the umask), like any file the user writes; os.CreateTemp would make it
// 0600.
func createTemp(dir, prefix string) (*os.File, error) {
	for try := 0; ; try++ {
		name := filepath.Join(dir, prefix+strconv.FormatUint(rand.Uint64(), 36))
		f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
		if os.IsExist(err) && try < 100 {
			continue
		}
		return f, err
	}
}

// Write creates path atomically with the bytes write produces.
func Write(path string, write func(w io.Writer) error) (err error) {
	dir := filepath.Dir(path)
	f, err := createTemp(dir, "."+filepath.Base(path)+".tmp-")
	if err != nil {
		return errors.Wrapf(err, "write %s", path)
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(tmp)
		}
	}()
	bw := bufio.NewWriterSize(f, 1<<20)
	if err = write(bw); err != nil {
		return errors.Wrapf(err, "write %s", path)
	}
	if err = bw.Flush(); err != nil {
		return errors.Wrapf(err, "write %s", path)
	}
	if err = f.Sync(); err != nil {
		return errors.Wrapf(err, "sync %s", tmp)
	}
	if err = f.Close(); err != nil {
		return errors.Wrapf(err, "close %s", tmp)
	}
	if err = os.Rename(tmp, path); err != nil {
		return errors.Wrapf(err, "rename %s to %s", tmp, path)
	}
	if d, derr := os.Open(dir); derr == nil {
		_ = d.Sync() // best effort: the rename is durable once the folder is synced
		d.Close()
	}
	return nil
}

// WriteBytes creates path atomically with data.
func WriteBytes(path string, data []byte) error {
	return Write(path, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
}
