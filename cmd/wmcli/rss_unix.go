//go:build unix

package wmcli

import "syscall"

// peakRSSMB is the process's peak resident set size in MiB (getrusage).
func peakRSSMB() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return float64(ru.Maxrss) / 1024 // kilobytes on Linux
}
