//go:build openblas

package train

import "fmt"

// adamwLevels runs check once for each of the C kernel's loops this CPU
// has (AVX-512, AVX2, one value at a time), with adamw32 set to run it,
// naming the loop.
func adamwLevels(check func(loop string)) {
	has := adamwLevel
	defer func() { adamwLevel = has }()
	for level := has; level >= 0; level-- {
		adamwLevel = level
		check(fmt.Sprintf("loop %s", []string{"one at a time", "AVX2", "AVX-512"}[level]))
	}
}
