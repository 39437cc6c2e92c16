package wmcli

import (
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
)

// ExitStopped is the exit status of a run stopped by SIGINT or SIGTERM
// after writing its checkpoint (128 + SIGINT, as a shell reports ^C).
const ExitStopped = 130

// stopOnSignal returns a channel that is closed at the first SIGINT or
// SIGTERM, so that training finishes its step and checkpoints; a second
// signal ends the process at once (the default action is restored). release
// stops listening.
func stopOnSignal(stderr io.Writer) (stop <-chan struct{}, release func()) {
	sig := make(chan os.Signal, 1)
	done := make(chan struct{})
	ch := make(chan struct{})
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	go func() {
		select {
		case s := <-sig:
			signal.Reset(os.Interrupt, syscall.SIGTERM)
			fmt.Fprintf(stderr, "\n%v: finishing the current step and writing a checkpoint (send it again to quit at once)\n", s)
			close(ch)
		case <-done:
		}
	}()
	return ch, func() {
		signal.Stop(sig)
		close(done)
	}
}

// resumeLine is the command that continues a stopped run: the same
// arguments with --resume.
func resumeLine(args []string) string {
	parts := []string{"wm"}
	resume := false
	for _, a := range args {
		if a == "--resume" || a == "-resume" || strings.HasPrefix(a, "--resume=") {
			resume = true
		}
		if a == "" || strings.ContainsAny(a, " \t\"'$`\\;&|<>()*?") {
			a = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
		parts = append(parts, a)
	}
	if !resume {
		parts = append(parts, "--resume")
	}
	return strings.Join(parts, " ")
}
