package wmcli

import (
	"flag"
	"fmt"
	"io"

	"github.com/wonderful-matrices/wonderful-matrices-go/experiments"
)

// runExport is `wm export RESULTS DEST`: the results without checkpoints.
func runExport(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("wm export", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: wm export RESULTS DEST (copies configs, metrics, results, learning-rate searches, tables and plots; no checkpoints)")
	}
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() != 2 {
		fs.Usage()
		return 2
	}
	n, err := experiments.Export(fs.Arg(0), fs.Arg(1))
	if err != nil {
		fmt.Fprintf(stderr, "wm export: %v\n", err)
		return 1
	}
	fmt.Fprintf(stdout, "copied %d files from %s to %s (no checkpoints); wm report, wm findings and wm run --resume read it\n", n, fs.Arg(0), fs.Arg(1))
	return 0
}
