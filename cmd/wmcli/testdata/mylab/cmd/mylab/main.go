// Command mylab is wm with the lab's experiments registered beside the
// papers'.
package main

import (
	"os"

	"github.com/wonderful-matrices/wonderful-matrices-go/cmd/wmcli"
	_ "github.com/wonderful-matrices/wonderful-matrices-go/cmd/wmcli/testdata/mylab"
)

func main() { os.Exit(wmcli.Main(os.Args[1:])) }
