package atomicfile

import (
	"os"
	"path/filepath"
	"sync"
)

var (
	umaskOnce sync.Once
	umaskBits os.FileMode
)

// umask is the process's file-creation mask, found once by creating a
// probe file with mode 0666 and reading back its mode (reading the mask
// directly would need a syscall that changes it, which is not safe while
// other goroutines create files).
func umask() os.FileMode {
	umaskOnce.Do(func() {
		dir, err := os.MkdirTemp("", "umask-probe-")
		if err != nil {
			umaskBits = 0o022
			return
		}
		defer os.RemoveAll(dir)
		p := filepath.Join(dir, "f")
		f, err := os.OpenFile(p, os.O_CREATE|os.O_WRONLY, 0o666)
		if err != nil {
			umaskBits = 0o022
			return
		}
		f.Close()
		st, err := os.Stat(p)
		if err != nil {
			umaskBits = 0o022
			return
		}
		umaskBits = 0o666 &^ st.Mode().Perm()
	})
	return umaskBits
}
