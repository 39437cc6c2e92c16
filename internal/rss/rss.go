// Package rss reads the process's peak resident set size, and on Linux
// resets it, so that a sweep can report the peak of each arm it runs.
package rss

import (
	"bufio"
	"bytes"
	"os"
	"strconv"
)

// ResetPeak starts a new peak: on Linux it writes 5 to /proc/self/clear_refs,
// which sets the VmHWM that PeakMB reads back to the current RSS. It reports
// whether the reset took effect (false elsewhere, and where /proc is not
// writable: PeakMB is then the process's peak since it started).
func ResetPeak() bool {
	return os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) == nil
}

// PeakMB is the peak resident set size in MiB since the last ResetPeak (or
// since the process started): VmHWM of /proc/self/status where there is
// one, getrusage's ru_maxrss otherwise, 0 where neither is known.
func PeakMB() float64 {
	if b, err := os.ReadFile("/proc/self/status"); err == nil {
		sc := bufio.NewScanner(bytes.NewReader(b))
		for sc.Scan() {
			if v, ok := bytes.CutPrefix(sc.Bytes(), []byte("VmHWM:")); ok {
				f := bytes.Fields(v)
				if len(f) > 0 {
					if kb, err := strconv.ParseFloat(string(f[0]), 64); err == nil {
						return kb / 1024
					}
				}
			}
		}
	}
	return maxRSSMB()
}
