//go:build !linux

package wmcli

import (
	"os/exec"
	"runtime"

	"github.com/pkg/errors"
)

// allowedCPUs is Linux's sched_getaffinity; elsewhere it says so.
func allowedCPUs() ([]int, error) {
	return nil, errors.Errorf("CPU affinity: not available on %s", runtime.GOOS)
}

// startOnCPUs starts cmd; confining it to cpus needs Linux, so a non-empty
// cpus is an error that names the system.
func startOnCPUs(cmd *exec.Cmd, cpus []int) error {
	if len(cpus) > 0 {
		return errors.Errorf("running on CPUs %v: CPU affinity is not available on %s (wm bench --pin=false)", cpus, runtime.GOOS)
	}
	return cmd.Start()
}

// cpuCount is 0 (not known) where the system has no CPU masks to read.
func cpuCount() int { return 0 }
