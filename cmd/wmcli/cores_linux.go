//go:build linux

package wmcli

import (
	"os/exec"
	"runtime"
	"syscall"
	"unsafe"

	"github.com/pkg/errors"
)

// cpuMaskWords is the size of the CPU masks passed to the kernel: 1,024
// CPUs, as glibc's cpu_set_t.
const cpuMaskWords = 1024 / 64

// allowedCPUs lists the CPUs the calling thread may run on
// (sched_getaffinity), in increasing order.
func allowedCPUs() ([]int, error) {
	var mask [cpuMaskWords]uint64
	if err := getAffinity(&mask); err != nil {
		return nil, errors.Wrap(err, "sched_getaffinity")
	}
	var cpus []int
	for w, bits := range mask {
		for b := 0; b < 64; b++ {
			if bits&(1<<b) != 0 {
				cpus = append(cpus, w*64+b)
			}
		}
	}
	return cpus, nil
}

// startOnCPUs starts cmd confined to cpus (nil: wherever this process may
// run). A process inherits the CPU mask of the thread that starts it, so
// the calling goroutine is locked to its thread, that thread's mask is set
// to cpus for the start and then put back: every thread of the child,
// from its first, runs on cpus, and this process is left as it was.
func startOnCPUs(cmd *exec.Cmd, cpus []int) error {
	if len(cpus) == 0 {
		return cmd.Start()
	}
	var want [cpuMaskWords]uint64
	for _, c := range cpus {
		if c < 0 || c >= 64*cpuMaskWords {
			return errors.Errorf("CPU %d: outside the %d a mask can name", c, 64*cpuMaskWords)
		}
		want[c/64] |= 1 << (c % 64)
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var old [cpuMaskWords]uint64
	if err := getAffinity(&old); err != nil {
		return errors.Wrap(err, "sched_getaffinity")
	}
	if err := setAffinity(&want); err != nil {
		return errors.Wrapf(err, "sched_setaffinity to CPUs %v", cpus)
	}
	startErr := cmd.Start()
	if err := setAffinity(&old); err != nil {
		if startErr == nil {
			cmd.Process.Kill()
			cmd.Wait()
		}
		return errors.Wrap(err, "sched_setaffinity back to this process's CPUs")
	}
	return startErr
}

// cpuCount is how many CPUs the calling thread may run on: what a
// measurement reports as the cores it had.
func cpuCount() int {
	cpus, err := allowedCPUs()
	if err != nil {
		return 0
	}
	return len(cpus)
}

func getAffinity(mask *[cpuMaskWords]uint64) error {
	_, _, e := syscall.RawSyscall(syscall.SYS_SCHED_GETAFFINITY, 0, unsafe.Sizeof(*mask), uintptr(unsafe.Pointer(mask)))
	if e != 0 {
		return e
	}
	return nil
}

func setAffinity(mask *[cpuMaskWords]uint64) error {
	_, _, e := syscall.RawSyscall(syscall.SYS_SCHED_SETAFFINITY, 0, unsafe.Sizeof(*mask), uintptr(unsafe.Pointer(mask)))
	if e != 0 {
		return e
	}
	return nil
}
