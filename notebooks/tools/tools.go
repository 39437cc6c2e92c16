//go:build tools

// Package tools pins the programs `make notebooks` builds to run the
// notebooks headlessly: the GoNB Jupyter kernel and goimports, which GoNB
// runs on every cell. It is a module of its own so that the library's
// go.mod does not carry them; `go install` of GoNB at a version is refused
// by the module proxy here, while building it from this module works.
package tools

import (
	_ "github.com/janpfeifer/gonb"
	_ "golang.org/x/tools/cmd/goimports"
)
