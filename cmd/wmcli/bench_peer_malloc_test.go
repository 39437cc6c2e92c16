package wmcli

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// jemalloc is preloaded from the first directory that has it, with the
// configuration that keeps memory for reuse; without it the error says
// what to install and how to do without; glibc needs nothing; anything
// else is refused, by the flag too.
func TestPeerAllocator(t *testing.T) {
	empty, has := t.TempDir(), t.TempDir()
	lib := filepath.Join(has, "libjemalloc.so.2")
	if err := os.WriteFile(lib, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	env, desc, err := peerAllocator("jemalloc", []string{empty, has})
	if err != nil || len(env) != 2 || env[0] != "LD_PRELOAD="+lib || env[1] != "MALLOC_CONF="+peerMallocConf || !strings.Contains(desc, lib) {
		t.Errorf("jemalloc in the second directory: %v, %q, %v", env, desc, err)
	}
	if !strings.Contains(peerMallocConf, "dirty_decay_ms:-1") {
		t.Errorf("the peer's jemalloc returns freed pages to the system: %s", peerMallocConf)
	}
	if _, _, err := peerAllocator("jemalloc", []string{empty}); err == nil || !strings.Contains(err.Error(), "apt-get install libjemalloc2") || !strings.Contains(err.Error(), "--peer-malloc glibc") {
		t.Errorf("no jemalloc: %v", err)
	}
	if env, desc, err := peerAllocator("glibc", nil); err != nil || env != nil || desc != "glibc's malloc" {
		t.Errorf("glibc: %v, %q, %v", env, desc, err)
	}
	if _, _, err := peerAllocator("tcmalloc", nil); err == nil || !strings.Contains(err.Error(), `"tcmalloc" is not an allocator`) {
		t.Errorf("tcmalloc: %v", err)
	}
	var out, errb bytes.Buffer
	if code := Run([]string{"bench", "--peer-malloc", "tcmalloc"}, &out, &errb); code != 2 || !strings.Contains(errb.String(), `--peer-malloc: "tcmalloc" is not an allocator`) {
		t.Errorf("wm bench --peer-malloc tcmalloc: exit %d, %q", code, errb.String())
	}
}
