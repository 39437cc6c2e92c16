package graph

import (
	"sort"
	"strings"

	"github.com/pkg/errors"
)

// Archs are the named architectures of SPEC §4, each a pattern repeated
// n_blocks times. doge's pattern is built by DogePattern.
var Archs = map[string]string{
	"cheems":    "(SE)7 IE",
	"transxssm": "(SM)7 AM",
	"llama":     "AH",
	"mamba2":    "BH",
	"jamba":     "(BH)7 AH",
	"doge":      "",
}

// ArchNames lists the architecture names, sorted.
func ArchNames() []string {
	names := make([]string, 0, len(Archs))
	for n := range Archs {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// DogePattern is doge's block: one InnerFuncAttn, then n CDMoE (SPEC §4:
// "I E E E …").
func DogePattern(n int) string { return "I" + strings.Repeat(" E", n) }

// ArchPattern returns the pattern of a named architecture (doge with
// dogeCDMoE CDMoE sublayers).
func ArchPattern(arch string, dogeCDMoE int) (string, error) {
	p, ok := Archs[arch]
	if !ok {
		return "", errors.Errorf("arch: %q is not one of %v", arch, ArchNames())
	}
	if arch == "doge" {
		p = DogePattern(dogeCDMoE)
	}
	return p, nil
}

// seiArchs are the baselines of Tables 4/7 that carry MoE-SEI with 4
// experts for parameter parity (SPEC §4).
var seiArchs = map[string]bool{"llama": true, "mamba2": true, "jamba": true}
