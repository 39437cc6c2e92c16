// Command wm is the framework's command line (package wmcli): wm info,
// params, train, generate, and the experiment runner list, run, report and
// findings. `wm help` lists the commands.
package main

import (
	"os"

	"github.com/wonderful-matrices/wonderful-matrices-go/cmd/wmcli"
)

func main() { os.Exit(wmcli.Main(os.Args[1:])) }
