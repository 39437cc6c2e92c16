package ops

import (
	"reflect"
	"runtime"
	"strings"
)

// opsPrefix is this package's prefix in function names, as
// runtime.Frame.Function spells them ("github.com/…/ops.").
var opsPrefix = func() string {
	name := runtime.FuncForPC(reflect.ValueOf(shortFuncName).Pointer()).Name()
	return name[:strings.LastIndex(name, ".")+1]
}()

// siteCallerNames is how many of a stack's functions a GemmSite names.
const siteCallerNames = 4

// siteCaller names the functions of this package among the frames at pcs,
// innermost first, up to the first frame outside the package: the
// GemmSite.Caller of a product asked for from there.
func siteCaller(pcs []uintptr) string {
	n := 0
	for n < len(pcs) && pcs[n] != 0 {
		n++
	}
	if n == 0 {
		return "?"
	}
	frames := runtime.CallersFrames(pcs[:n])
	var names []string
	for {
		f, more := frames.Next()
		name, ok := strings.CutPrefix(f.Function, opsPrefix)
		if !ok {
			break
		}
		name = shortFuncName(name)
		if len(names) == 0 || names[len(names)-1] != name {
			names = append(names, name)
		}
		if !more || len(names) == siteCallerNames {
			break
		}
	}
	if len(names) == 0 {
		return "(outside ops)"
	}
	return strings.Join(names, " < ")
}

// shortFuncName drops a function name's type parameters ("[...]") and the
// suffixes Go gives closures (".func2", ".func2.1", ".gowrap1"), so that
// "gemmTall[...].func2" reads "gemmTall" and a method "(*attnKernel).forward"
// stays as it is.
func shortFuncName(name string) string {
	name = strings.ReplaceAll(name, "[...]", "")
	for {
		i := strings.LastIndex(name, ".")
		if i < 0 {
			return name
		}
		if !closureSuffix(name[i+1:]) {
			return name
		}
		name = name[:i]
	}
}

// closureSuffix says whether s is one of the names Go gives a closure
// inside a function: "func" or "gowrap" and a number, or a number alone.
func closureSuffix(s string) bool {
	for _, p := range []string{"func", "gowrap", ""} {
		if n, ok := strings.CutPrefix(s, p); ok && n != "" && strings.Trim(n, "0123456789") == "" {
			return true
		}
	}
	return false
}
