package wmcli

import (
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/wonderful-matrices/wonderful-matrices-go/ops"
)

// Where wm chose OpenBLAS's kernels in place of its SSE3 fallback, the
// peer is given them by name and the report says so; where OpenBLAS chose,
// or the environment names the kernels (both sides inherit it), the peer
// is given nothing.
func TestPeerBLASEnv(t *testing.T) {
	t.Setenv("OPENBLAS_CORETYPE", "")
	os.Unsetenv("OPENBLAS_CORETYPE")
	env := peerBLASEnv()
	if was := ops.BLASCoreReplaced(); was != "" {
		want := "OPENBLAS_CORETYPE=" + ops.BLASCore()
		if !slices.Equal(env, []string{want}) {
			t.Errorf("wm replaced OpenBLAS's %s by %s: peerBLASEnv = %q, want [%s]", was, ops.BLASCore(), env, want)
		}
		if got := peerBLASChooser(); !strings.Contains(got, "in place of OpenBLAS's "+was+" fallback") || !strings.HasSuffix(got, want) {
			t.Errorf("peerBLASChooser = %q: it should say wm chose in place of %s and name %s to the peer", got, was, want)
		}
	} else if env != nil {
		t.Errorf("OpenBLAS's own choice (%s) stands, yet peerBLASEnv = %q", ops.BLASCore(), env)
	}
	t.Setenv("OPENBLAS_CORETYPE", "Haswell")
	if env := peerBLASEnv(); env != nil {
		t.Errorf("with OPENBLAS_CORETYPE set, which the peer inherits, peerBLASEnv = %q", env)
	}
}
