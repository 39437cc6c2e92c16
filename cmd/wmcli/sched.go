package wmcli

import (
	"fmt"
	"io"
	"os"

	"github.com/pkg/errors"

	"github.com/wonderful-matrices/wonderful-matrices-go/ops"
)

// stepCommands are the commands that run training or evaluation steps; wm
// runs Go's collector at stepGCPercent for them and puts their process
// under Linux's SCHED_BATCH policy first.
var stepCommands = map[string]bool{"train": true, "generate": true, "run": true, "sweep": true, "bench": true, "bench-one": true, "products": true}

// schedEnv names the environment variable that chooses the scheduling
// policy of the step commands: "batch" (the default) or "normal" (Linux's
// default, SCHED_OTHER).
const schedEnv = "WM_SCHED"

// setStepScheduling applies WM_SCHED before a step command with
// ops.SetSchedulingPolicy: "batch" (or unset) so that the runtime's checks on
// threads inside a BLAS call stop preempting the products (ops/sched_linux.go
// says why), and the processes wm starts (bench's measurements and its
// PyTorch peer) inherit the policy; "normal" for Linux's default, to
// measure the difference. A system that refuses the policy gets a note on
// stderr and the run goes on; an unknown value of WM_SCHED is an error.
func setStepScheduling(stderr io.Writer) error {
	v := os.Getenv(schedEnv)
	switch v {
	case "":
		v = "batch"
	case "batch", "normal":
	default:
		return errors.Errorf("%s=%q: want batch (the default) or normal", schedEnv, v)
	}
	if err := ops.SetSchedulingPolicy(v); err != nil {
		fmt.Fprintf(stderr, "wm: note: %v; steps on two or more threads may run slower\n", err)
	}
	return nil
}
