package wmcli

import (
	"bytes"
	"strings"
	"testing"

	"github.com/wonderful-matrices/wonderful-matrices-go/ops"
)

// The step commands run under SCHED_BATCH unless WM_SCHED=normal; another
// value of WM_SCHED is refused with exit 2 and a message naming it, before
// the command runs; commands without steps leave the policy alone.
func TestStepCommandsScheduling(t *testing.T) {
	if err := ops.SetSchedulingPolicy("normal"); err != nil {
		t.Skipf("no scheduling policies here: %v", err)
	}
	defer ops.SetSchedulingPolicy("normal")
	policy := func() string {
		p, err := ops.SchedulingPolicy()
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	var out, errb bytes.Buffer
	t.Setenv("WM_SCHED", "fast")
	if code := Run([]string{"train", "--steps", "0"}, &out, &errb); code != 2 || !strings.Contains(errb.String(), `WM_SCHED="fast": want batch (the default) or normal`) {
		t.Errorf("WM_SCHED=fast: exit %d, %q", code, errb.String())
	}
	t.Setenv("WM_SCHED", "")
	Run([]string{"list"}, &out, &errb)
	if p := policy(); p != "normal" {
		t.Errorf("wm list set the policy to %q", p)
	}
	errb.Reset()
	Run([]string{"train", "--no-such-flag"}, &out, &errb)
	if p := policy(); p != "batch" {
		if !strings.Contains(errb.String(), "wm: note: scheduling policy batch") {
			t.Errorf("wm train left the process under %q without a note: %q", p, errb.String())
		}
		return
	}
	t.Setenv("WM_SCHED", "normal")
	Run([]string{"train", "--no-such-flag"}, &out, &errb)
	if p := policy(); p != "normal" {
		t.Errorf("wm train with WM_SCHED=normal: the process runs under %q", p)
	}
}
