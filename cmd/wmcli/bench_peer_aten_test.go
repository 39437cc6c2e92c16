package wmcli

import (
	"slices"
	"strings"
	"testing"
)

// flagsOf is a CPU's flags as cpuFlags reads them.
func flagsOf(line string) map[string]bool {
	return cpuFlagsOf("processor\t: 0\nflags\t\t: " + line + "\n\nprocessor\t: 1\nflags\t\t: other\n")
}

// auto runs ATen's AVX2 and AVX-512 kernels where the CPU has every flag
// ATen's AVX-512 kernels need, and torch's own choice elsewhere; a list is
// checked against the CPU and against ATen's names.
func TestPeerATenKernels(t *testing.T) {
	avx512 := flagsOf("fpu sse2 avx avx2 fma avx512f avx512dq avx512bw avx512vl")
	noVL := flagsOf("fpu sse2 avx avx2 fma avx512f avx512dq avx512bw")
	sse := flagsOf("fpu sse2")
	for _, c := range []struct {
		choice string
		flags  map[string]bool
		want   []string
	}{
		{"auto", avx512, []string{"avx2", "avx512"}},
		{"auto", noVL, []string{""}},
		{"auto", sse, []string{""}},
		{"auto", nil, []string{""}},
		{"torch", avx512, []string{""}},
		{"avx512", avx512, []string{"avx512"}},
		{"default, avx2", noVL, []string{"default", "avx2"}},
	} {
		got, err := peerATenKernels(c.choice, c.flags)
		if err != nil || !slices.Equal(got, c.want) {
			t.Errorf("peerATenKernels(%q) = %q, %v; want %q", c.choice, got, err, c.want)
		}
	}
	for _, c := range []struct {
		choice string
		flags  map[string]bool
		want   string
	}{
		{"avx512", noVL, "avx512vl"},
		{"avx2", sse, "avx2, fma"},
		{"sse4", avx512, `"sse4" is not one of ATen's kernel sets`},
		{"", avx512, `"" is not one of`},
		{"avx2,avx2", avx512, "avx2 named twice"},
	} {
		if _, err := peerATenKernels(c.choice, c.flags); err == nil || !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), "--peer-aten: ") {
			t.Errorf("peerATenKernels(%q): err %v; want one naming the flag and %q", c.choice, err, c.want)
		}
	}
}

// Only the first processor's flags are read.
func TestCPUFlagsOf(t *testing.T) {
	f := flagsOf("avx2 fma")
	if !f["avx2"] || !f["fma"] || f["other"] || len(f) != 2 {
		t.Errorf("cpuFlagsOf = %v", f)
	}
}

// A peer that ran other ATen kernels than it was asked for is an error;
// torch's own choice accepts whatever it ran.
func TestCheckATenRan(t *testing.T) {
	for _, c := range []struct{ asked, ran string }{{"avx512", "AVX512"}, {"avx2", "AVX2"}, {"default", "NO AVX"}, {"", "AVX2"}, {"", ""}} {
		if err := checkATenRan(c.asked, c.ran); err != nil {
			t.Errorf("asked %q, ran %q: %v", c.asked, c.ran, err)
		}
	}
	for _, c := range []struct{ asked, ran string }{{"avx512", "AVX2"}, {"avx2", ""}, {"default", "AVX2"}} {
		if err := checkATenRan(c.asked, c.ran); err == nil || !strings.Contains(err.Error(), c.asked) {
			t.Errorf("asked %q, ran %q: err %v; want one naming %s", c.asked, c.ran, err, c.asked)
		}
	}
}

// The note names the kernels of the peer's best training figures once each,
// and how they were chosen; rows without a peer count for nothing.
func TestATenNote(t *testing.T) {
	rows := []benchRow{
		{Peer: benchResult{Train: 1, ATen: "AVX512"}},
		{Peer: benchResult{Train: 1, ATen: "AVX2"}},
		{Peer: benchResult{Train: 1, ATen: "AVX512"}},
		{},
	}
	want := "ATen kernels (peer's best training figures): AVX512, AVX2 (each thread layout run with ATEN_CPU_CAPABILITY=avx2 and =avx512, the best kept)."
	if got := atenNote(rows, []string{"avx2", "avx512"}); got != want {
		t.Errorf("atenNote = %q\nwant %q", got, want)
	}
	if got := atenNote(rows[:1], []string{""}); !strings.HasSuffix(got, "(torch's own choice).") {
		t.Errorf("torch's choice: %q", got)
	}
	if got := atenNote(rows[3:], []string{""}); got != "" {
		t.Errorf("no peer: %q, want none", got)
	}
}
