package wmcli

import (
	"os"
	"path/filepath"
	"strings"

	"github.com/pkg/errors"
)

// The peer's memory allocator. PyTorch on CPU allocates a step's tensors
// afresh every step through the C library's malloc. glibc's malloc serves
// large blocks with mmap and gives them back with munmap when they are
// freed (and trims its heap), so every step faults in and zeroes the same
// memory again: at (AM)4 d_model 256, t 1024, b 4 on two threads the peer
// trained at 2,634–2,727 tokens/s and evaluated at 5,897–7,924 with it,
// and at 3,223–3,576 and 9,738–10,390 with jemalloc set up as PyTorch's
// CPU performance guides recommend (memory kept for reuse, never returned
// to the system), using 1,031 MB at its peak against 1,787–1,822 (six
// runs with glibc's malloc, three with jemalloc, on one host within
// minutes). A peer must be as fast as its framework
// allows, so wm bench runs it with jemalloc unless told otherwise.

// peerMallocConf is jemalloc's configuration for the peer: freed pages are
// kept (dirty_decay_ms and muzzy_decay_ms -1, so none is returned to the
// system and faulted in again), large blocks come from their own arenas
// (oversize_threshold 1), jemalloc's upkeep runs on a background thread,
// and its metadata may sit in huge pages.
const peerMallocConf = "oversize_threshold:1,background_thread:true,metadata_thp:auto,dirty_decay_ms:-1,muzzy_decay_ms:-1"

// jemallocDirs are where Linux distributions install libjemalloc.so.2
// (Debian and Ubuntu's package libjemalloc2 in the first).
var jemallocDirs = []string{"/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/usr/lib64", "/usr/lib", "/usr/local/lib"}

// peerAllocator is the environment that gives the peer the allocator
// choice names, and how the report describes it: "jemalloc" preloads
// libjemalloc.so.2 from the first of dirs that has it, with
// peerMallocConf; "glibc" leaves the C library's malloc as it is.
func peerAllocator(choice string, dirs []string) (env []string, desc string, err error) {
	switch choice {
	case "glibc":
		return nil, "glibc's malloc", nil
	case "jemalloc":
		for _, d := range dirs {
			lib := filepath.Join(d, "libjemalloc.so.2")
			if _, err := os.Stat(lib); err == nil {
				return []string{"LD_PRELOAD=" + lib, "MALLOC_CONF=" + peerMallocConf},
					"jemalloc (" + lib + ", MALLOC_CONF=" + peerMallocConf + ")", nil
			}
		}
		return nil, "", errors.Errorf("--peer-malloc jemalloc: no libjemalloc.so.2 in %s (apt-get install libjemalloc2; or --peer-malloc glibc to run the peer with the C library's malloc, slower)",
			strings.Join(dirs, ", "))
	}
	return nil, "", checkPeerMalloc(choice)
}

// checkPeerMalloc refuses a --peer-malloc that names no allocator
// peerAllocator knows.
func checkPeerMalloc(choice string) error {
	if choice != "jemalloc" && choice != "glibc" {
		return errors.Errorf("--peer-malloc: %q is not an allocator (jemalloc or glibc)", choice)
	}
	return nil
}
