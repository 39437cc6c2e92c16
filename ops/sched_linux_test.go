//go:build linux

package ops

import (
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"testing"
)

// TestBatchSchedulingCoversThreadsAndChildren checks that
// SetSchedulingPolicy("batch") puts every thread of the process under
// SCHED_BATCH, that threads started afterwards and child processes inherit
// it, that SchedulingPolicy reports it, and that "normal" undoes it.
func TestBatchSchedulingCoversThreadsAndChildren(t *testing.T) {
	if err := SetSchedulingPolicy("fast"); err == nil || !strings.Contains(err.Error(), `scheduling policy "fast": want batch or normal`) {
		t.Errorf("an unknown policy: %v", err)
	}
	if err := SetSchedulingPolicy("batch"); err != nil {
		t.Skipf("the kernel refused SCHED_BATCH here: %v", err)
	}
	defer func() {
		if err := SetSchedulingPolicy("normal"); err != nil {
			t.Error(err)
		}
		if p, err := SchedulingPolicy(); err != nil || p != "normal" {
			t.Errorf("after SetSchedulingPolicy(normal): %q, %v", p, err)
		}
	}()
	tids, err := threadIDs()
	if err != nil {
		t.Fatal(err)
	}
	for _, tid := range tids {
		if p, err := threadPolicy(tid); err != nil {
			t.Errorf("thread %d: %v", tid, err)
		} else if p != "batch" {
			t.Errorf("thread %d is under %q after SetSchedulingPolicy(batch), want batch", tid, p)
		}
	}
	if p, err := SchedulingPolicy(); err != nil || p != "batch" {
		t.Errorf("SchedulingPolicy() = %q, %v; want batch", p, err)
	}

	// Goroutines wired to threads of their own, all blocked at once, make
	// the runtime start threads it did not have.
	const n = 8
	var ready, wg sync.WaitGroup
	release := make(chan struct{})
	policies := make([]string, n)
	ready.Add(n)
	wg.Add(n)
	for i := range n {
		go func() {
			defer wg.Done()
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			policies[i], _ = SchedulingPolicy()
			ready.Done()
			<-release
		}()
	}
	ready.Wait()
	after, err := threadIDs()
	if err != nil {
		t.Fatal(err)
	}
	close(release)
	wg.Wait()
	if len(after) < n {
		t.Fatalf("only %d threads with %d goroutines locked to threads", len(after), n)
	}
	for i, p := range policies {
		if p != "batch" {
			t.Errorf("a thread started after SetSchedulingPolicy (goroutine %d) is under %q, want batch", i, p)
		}
	}

	out, err := exec.Command("/bin/sh", "-c", "exec cat /proc/self/stat").Output()
	if err != nil {
		t.Skipf("cannot run a child process: %v", err)
	}
	// Fields after the command name's closing parenthesis start at field 3;
	// field 41 is the policy (proc(5)).
	fields := strings.Fields(string(out[strings.LastIndexByte(string(out), ')')+1:]))
	if len(fields) < 39 {
		t.Fatalf("/proc/self/stat of a child has %d fields after its name: %q", len(fields), out)
	}
	if fields[41-3] != "3" {
		t.Errorf("a child process runs under policy %s, want 3 (SCHED_BATCH)", fields[41-3])
	}
}
