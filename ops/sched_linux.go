//go:build linux

package ops

import (
	"os"
	"strconv"
	"syscall"
	"unsafe"

	"github.com/pkg/errors"
)

// Linux's scheduling policies (sched(7)), as sched_getscheduler returns them.
const (
	schedOther = 0
	schedFIFO  = 1
	schedRR    = 2
	schedBatch = 3
	schedIdle  = 5
)

// SetSchedulingPolicy puts every thread of this process under one of
// Linux's policies for ordinary work (sched(7)), at the same nice value:
// "batch" (SCHED_BATCH, what wm's step commands use) or "normal"
// (SCHED_OTHER, Linux's default). Threads and child processes started
// afterwards inherit the policy from the thread that starts them, so after
// this call the whole process, and any program it runs, is under it. No
// privilege is needed.
//
// Why: a product runs in OpenBLAS through cgo, and Go's runtime counts a
// goroutine in a cgo call as in a system call. When every P is in such a
// call for more than one tick of its monitor (20 µs when it is busy), the
// runtime takes one P back and wakes a thread to look for other work; there
// is none, and the thread sleeps again. Under the default policy the woken
// thread preempts a core that is running a product: a two-thread d_model 256
// training step measured about 1300 involuntary context switches instead of
// 30, and ran about 20% slower, in episodes that lasted for dozens of steps
// (the monitor only slows its polling after a millisecond in which it takes
// nothing back). Under SCHED_BATCH a thread that wakes, the runtime's
// monitor included, does not preempt one that is running; it waits for a
// time slice to end, so the runtime's checks stop interrupting the
// products (the same step: about 25 context switches, none of the slow
// episodes). The cost is in steps made of short calls, where a thread woken
// to run a goroutine now waits for a busy core's time slice too: two-thread
// evaluation at d_model 64 measured about 3% slower (docs/performance.md).
//
// Threads that appear while the call walks /proc/self/task are caught by
// walking again until a walk finds no new thread. It returns an error naming
// the thread and the cause when the kernel refuses (a seccomp profile can).
func SetSchedulingPolicy(name string) error {
	var policy int
	switch name {
	case "batch":
		policy = schedBatch
	case "normal":
		policy = schedOther
	default:
		return errors.Errorf("scheduling policy %q: want batch or normal", name)
	}
	done := map[int]bool{}
	for walk := 0; walk < 100; walk++ {
		tids, err := threadIDs()
		if err != nil {
			return errors.Wrapf(err, "scheduling policy %s: listing this process's threads", name)
		}
		fresh := false
		for _, tid := range tids {
			if done[tid] {
				continue
			}
			fresh = true
			if err := setScheduler(tid, policy); err != nil {
				if err == syscall.ESRCH {
					continue // the thread has exited
				}
				return errors.Wrapf(err, "scheduling policy %s: sched_setscheduler on thread %d", name, tid)
			}
			done[tid] = true
		}
		if !fresh {
			return nil
		}
	}
	return errors.Errorf("scheduling policy %s: new threads kept appearing during 100 walks of /proc/self/task", name)
}

// SchedulingPolicy names the scheduling policy of the calling thread:
// "normal" (SCHED_OTHER, Linux's default), "batch", "idle", "fifo" or "rr".
// After SetSchedulingPolicy every thread of the process is under the policy
// it set.
func SchedulingPolicy() (string, error) {
	return threadPolicy(0)
}

// threadPolicy names the scheduling policy of thread tid (0: the caller).
func threadPolicy(tid int) (string, error) {
	p, _, e := syscall.RawSyscall(syscall.SYS_SCHED_GETSCHEDULER, uintptr(tid), 0, 0)
	if e != 0 {
		return "", errors.Wrapf(e, "sched_getscheduler on thread %d", tid)
	}
	switch p &^ 0x40000000 { // SCHED_RESET_ON_FORK
	case schedOther:
		return "normal", nil
	case schedBatch:
		return "batch", nil
	case schedIdle:
		return "idle", nil
	case schedFIFO:
		return "fifo", nil
	case schedRR:
		return "rr", nil
	}
	return "policy " + strconv.Itoa(int(p)), nil
}

// setScheduler sets thread tid's policy at static priority 0, which is
// what SCHED_OTHER, SCHED_BATCH and SCHED_IDLE require.
func setScheduler(tid, policy int) error {
	param := struct{ priority int32 }{0}
	_, _, e := syscall.RawSyscall(syscall.SYS_SCHED_SETSCHEDULER, uintptr(tid), uintptr(policy), uintptr(unsafe.Pointer(&param)))
	if e != 0 {
		return e
	}
	return nil
}

// threadIDs lists the threads of this process.
func threadIDs() ([]int, error) {
	entries, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return nil, err
	}
	tids := make([]int, 0, len(entries))
	for _, e := range entries {
		tid, err := strconv.Atoi(e.Name())
		if err != nil {
			return nil, errors.Errorf("/proc/self/task has an entry %q that is not a thread id", e.Name())
		}
		tids = append(tids, tid)
	}
	return tids, nil
}
