//go:build !linux

package ops

import (
	"runtime"

	"github.com/pkg/errors"
)

// SetSchedulingPolicy puts the process under one of Linux's policies,
// "batch" or "normal" (see sched_linux.go for why); on other systems it
// returns an error naming the system and changes nothing.
func SetSchedulingPolicy(name string) error {
	return errors.Errorf("scheduling policy %s: Linux's policies are not available on %s", name, runtime.GOOS)
}

// SchedulingPolicy names the calling thread's scheduling policy on Linux;
// on other systems it returns an error naming the system.
func SchedulingPolicy() (string, error) {
	return "", errors.Errorf("scheduling policy: not available on %s", runtime.GOOS)
}
