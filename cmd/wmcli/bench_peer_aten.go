package wmcli

import (
	"slices"
	"strings"

	"github.com/pkg/errors"
)

// The peer's ATen kernels. PyTorch's elementwise, reduction and softmax
// kernels (ATen's) are built for several instruction sets, and torch picks
// one set when it loads: the best the CPU has, unless ATEN_CPU_CAPABILITY
// names one. Debian's torch 1.13 carries AVX-512 kernels but picks its
// AVX2 ones even on a CPU with AVX-512 (torch.__config__.show(): "CPU
// capability usage: AVX2"). On a Zen 4 the AVX-512 ones made no difference
// that three alternations could see; on an Intel Xeon with AVX-512 (one
// core, alternated) they ran (AM)4 at d_model 256 6% faster in training
// and 9% faster in evaluation and (SM)4 there 4% faster in both, but the
// d_model 64 patterns 0–2% slower in training (and 1–4% faster in
// evaluation), and neither is best everywhere (docs/performance.md, "The
// peer's ATen kernels"). A peer must be as fast as its framework allows, so
// on a CPU with AVX-512 wm bench runs each of the peer's thread layouts
// with both and keeps the best, as it keeps the best thread layout.

// atenAVX512Flags are the CPU flags ATen 1.13 requires of its AVX-512
// kernels (aten/src/ATen/native/DispatchStub.cpp: AVX-512 VL, BW and DQ,
// and FMA), and atenAVX2Flags those of its AVX2 kernels.
var (
	atenAVX512Flags = []string{"avx512f", "avx512vl", "avx512bw", "avx512dq", "fma"}
	atenAVX2Flags   = []string{"avx2", "fma"}
)

// peerATenKernels are the ATEN_CPU_CAPABILITY values the peer runs with,
// for --peer-aten choice on a CPU with flags (/proc/cpuinfo's): "auto" is
// avx2 and avx512 where the CPU has ATen's AVX-512 flags, and torch's own
// choice alone ("", ATEN_CPU_CAPABILITY unset) otherwise; "torch" is
// torch's own choice anywhere; otherwise a comma-separated list of ATen's
// names (default, avx2, avx512), each of which the CPU must support.
func peerATenKernels(choice string, flags map[string]bool) ([]string, error) {
	has := func(need []string) bool {
		for _, f := range need {
			if !flags[f] {
				return false
			}
		}
		return true
	}
	switch choice {
	case "auto":
		if has(atenAVX512Flags) {
			return []string{"avx2", "avx512"}, nil
		}
		return []string{""}, nil
	case "torch":
		return []string{""}, nil
	}
	var out []string
	for _, k := range strings.Split(choice, ",") {
		k = strings.TrimSpace(k)
		switch {
		case k == "default":
		case k == "avx2" && !has(atenAVX2Flags):
			return nil, errors.Errorf("--peer-aten: this CPU lacks %s, which ATen's avx2 kernels need", strings.Join(atenAVX2Flags, ", "))
		case k == "avx512" && !has(atenAVX512Flags):
			return nil, errors.Errorf("--peer-aten: this CPU lacks one of %s, which ATen's avx512 kernels need", strings.Join(atenAVX512Flags, ", "))
		case k != "avx2" && k != "avx512":
			return nil, errors.Errorf("--peer-aten: %q is not one of ATen's kernel sets (default, avx2, avx512), nor auto or torch", k)
		}
		if slices.Contains(out, k) {
			return nil, errors.Errorf("--peer-aten: %s named twice", k)
		}
		out = append(out, k)
	}
	return out, nil
}

// cpuFlags are the first processor's flags in /proc/cpuinfo (none where
// there is no such file).
func cpuFlags() map[string]bool { return cpuFlagsOf(readCPUInfo()) }

// cpuFlagsOf is cpuFlags of a /proc/cpuinfo text.
func cpuFlagsOf(cpuinfo string) map[string]bool {
	flags := map[string]bool{}
	for _, f := range strings.Fields(firstCPUFields(cpuinfo)["flags"]) {
		flags[f] = true
	}
	return flags
}

// atenEnv is the peer's environment for the ATen kernels k ("" leaves
// torch's own choice).
func atenEnv(k string) []string {
	if k == "" {
		return nil
	}
	return []string{"ATEN_CPU_CAPABILITY=" + k}
}

// checkATenRan is an error when the peer, asked for the ATen kernels k
// ("" for torch's choice), reports that it ran others (ran: its "CPU
// capability usage", "AVX2", "AVX512" or "NO AVX" for ATen's default
// kernels): ATEN_CPU_CAPABILITY would then have been
// ignored, and the measurement would not be of what it says.
func checkATenRan(k, ran string) error {
	shown := map[string]string{"default": "NO AVX", "avx2": "AVX2", "avx512": "AVX512"}
	if k == "" || shown[k] == ran {
		return nil
	}
	return errors.Errorf("the peer was asked for ATen's %s kernels (ATEN_CPU_CAPABILITY) and reports that it ran %q", k, ran)
}

// atenNote says which ATen kernels the peer ran in its best training
// figures, and how wm bench chose them.
func atenNote(rows []benchRow, kernels []string) string {
	var ran []string
	for _, r := range rows {
		if r.Peer.Train == 0 && r.Peer.Eval == 0 {
			continue
		}
		ran = appendNew(ran, orNotReported(r.Peer.ATen))
	}
	if len(ran) == 0 {
		return ""
	}
	how := "torch's own choice"
	if strings.Join(kernels, "") != "" { // a set named, not torch's choice alone
		how = "each thread layout run with ATEN_CPU_CAPABILITY=" + strings.Join(kernels, " and =") + ", the best kept"
	}
	return "ATen kernels (peer's best training figures): " + strings.Join(ran, ", ") + " (" + how + ")."
}

func orNotReported(s string) string {
	if s == "" {
		return "not reported"
	}
	return s
}
