// Package atomicfile writes files so that a crash leaves either the old file
// or the new one, never a mix (SPEC §8): write to a temporary name in the
// same folder, sync, rename over the target, sync the folder.
package atomicfile

import (
	"bufio"
	"io"
	"os"
	"path/filepath"

	"github.com/pkg/errors"
)

// Write creates path atomically with the bytes write produces.
func Write(path string, write func(w io.Writer) error) (err error) {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return errors.Wrapf(err, "write %s", path)
	}
	tmp := f.Name()
	// CreateTemp makes the file 0600; results and checkpoints are shared
	// like any file the user writes (the umask still applies).
	if err = f.Chmod(0o644 &^ umask()); err != nil {
		f.Close()
		os.Remove(tmp)
		return errors.Wrapf(err, "write %s", path)
	}
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
