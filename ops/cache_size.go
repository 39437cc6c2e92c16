package ops

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// defaultLastLevelCache is what LastLevelCache assumes where the system
// does not say: 32 MiB, the third-level cache a core of today's x86
// servers shares with its neighbours (one Zen 4 core complex's, this
// project's benchmark machine's).
const defaultLastLevelCache = 32 << 20

// LastLevelCache is the size in bytes of the largest CPU cache Linux lists
// for CPU 0 (/sys/devices/system/cpu/cpu0/cache/index*/size: the L3 on
// x86 servers), and whether the system said; where it does not (another
// OS, a container without sysfs), 32 MiB and false.
func LastLevelCache() (bytes int, known bool) {
	dirs, _ := filepath.Glob("/sys/devices/system/cpu/cpu0/cache/index*")
	for _, d := range dirs {
		raw, err := os.ReadFile(filepath.Join(d, "size"))
		if err != nil {
			continue
		}
		if n, ok := parseCacheSize(strings.TrimSpace(string(raw))); ok && n > bytes {
			bytes = n
		}
	}
	if bytes == 0 {
		return defaultLastLevelCache, false
	}
	return bytes, true
}

// parseCacheSize reads sysfs's cache sizes: "32768K", "1024K", "2M", or
// bytes without a suffix.
func parseCacheSize(s string) (int, bool) {
	mult := 1
	switch {
	case strings.HasSuffix(s, "K"):
		mult, s = 1<<10, strings.TrimSuffix(s, "K")
	case strings.HasSuffix(s, "M"):
		mult, s = 1<<20, strings.TrimSuffix(s, "M")
	case strings.HasSuffix(s, "G"):
		mult, s = 1<<30, strings.TrimSuffix(s, "G")
	}
	n, err := strconv.Atoi(s)
	if err != nil || n <= 0 {
		return 0, false
	}
	return n * mult, true
}

// ColdSpan is the span, in bytes, ReplayGemmShapesCold needs on each of
// goroutines for every operand to come from memory: twice the last-level
// cache, so that by the time a place comes round again the cache has been
// filled over by the places in between, each goroutine's three buffers
// together 6× the cache. Many goroutines (more than a few dozen at 32 MiB)
// get less, so that their buffers stay within about a GiB in all, but
// never less than half the cache each (1.5× it over the three buffers).
func ColdSpan(goroutines int) int {
	llc, _ := LastLevelCache()
	capped := coldPoolsTotal / (3 * max(goroutines, 1))
	return max(min(2*llc, capped), llc/2)
}

// coldPoolsTotal is the memory ColdSpan keeps the cold replay's buffers
// within, where half the last-level cache per goroutine allows.
const coldPoolsTotal = 1 << 30
