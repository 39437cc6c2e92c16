//go:build unix

package train

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/pkg/errors"
)

// lockFolder takes the run folder's lock: an exclusive flock on
// dir/run.lock, held until unlock or the process ends (the kernel drops it
// when the process dies, even by SIGKILL, so a stale file never blocks a
// resume). A folder another process holds is an error naming its pid.
func lockFolder(dir string) (unlock func(), err error) {
	path := filepath.Join(dir, LockFile)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, errors.Wrap(err, "run folder lock")
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		holder, _ := io.ReadAll(f)
		f.Close()
		if err == syscall.EWOULDBLOCK {
			who := strings.TrimSpace(string(holder))
			if who == "" {
				who = "another process"
			}
			return nil, errors.Errorf("run folder %s is in use by %s: wait for it to finish or stop it; nothing was changed", dir, who)
		}
		return nil, errors.Wrapf(err, "run folder lock %s", path)
	}
	host, _ := os.Hostname()
	if err := f.Truncate(0); err == nil {
		fmt.Fprintf(f, "pid %d on %s since %s\n", os.Getpid(), host, time.Now().Format(time.RFC3339))
	}
	return func() {
		syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
	}, nil
}
