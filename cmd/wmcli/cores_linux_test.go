//go:build linux

package wmcli

import (
	"bytes"
	"fmt"
	"os/exec"
	"reflect"
	"runtime"
	"strings"
	"testing"
)

// startOnCPUs confines the child, from its start, to the CPUs it names
// (the child reads its own mask from /proc), and leaves the starting
// thread's mask as it was.
func TestStartOnCPUs(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	before, err := allowedCPUs()
	if err != nil || len(before) == 0 {
		t.Fatalf("allowedCPUs: %v %v", before, err)
	}
	last := before[len(before)-1]
	for _, cpus := range [][]int{{last}, nil} {
		cmd := exec.Command("grep", "Cpus_allowed_list", "/proc/self/status")
		var out bytes.Buffer
		cmd.Stdout = &out
		if err := startOnCPUs(cmd, cpus); err != nil {
			t.Fatal(err)
		}
		if err := cmd.Wait(); err != nil {
			t.Fatal(err)
		}
		got := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(out.String()), "Cpus_allowed_list:"))
		if cpus != nil && got != fmt.Sprint(last) {
			t.Errorf("confined to CPU %d, the child could run on %q", last, got)
		}
		if cpus == nil && len(before) > 1 && got == fmt.Sprint(last) {
			t.Errorf("not confined, the child could run only on %q", got)
		}
		after, err := allowedCPUs()
		if err != nil || !reflect.DeepEqual(after, before) {
			t.Errorf("the starting thread's CPUs were %v, are %v after the start (%v)", before, after, err)
		}
	}
	if err := startOnCPUs(exec.Command("true"), []int{-1}); err == nil || !strings.Contains(err.Error(), "CPU -1") {
		t.Errorf("a negative CPU: %v", err)
	}
}
