package wmcli

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"

	"github.com/wonderful-matrices/wonderful-matrices-go/graph"
)

// runParams is `wm params`: the parameter breakdown of one model by layer
// kind, total and active per token (the data of Wonderful Matrices Figure 8).
func runParams(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("wm params", flag.ContinueOnError)
	fs.SetOutput(stderr)
	config := modelFlags(fs)
	asJSON := fs.Bool("json", false, "print the breakdown as JSON")
	fs.Usage = func() {
		fmt.Fprintln(stderr, `usage: wm params (--arch NAME | --pattern "P") [flags]`)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "wm params: unexpected argument %q\n", fs.Arg(0))
		return 2
	}
	cfg, err := config()
	if err != nil {
		fmt.Fprintf(stderr, "wm params: %v\n", err)
		return 2
	}
	m, err := graph.New(cfg)
	if err != nil {
		fmt.Fprintf(stderr, "wm params: %v\n", err)
		return 2
	}
	rows := m.Breakdown()
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(rows); err != nil {
			fmt.Fprintf(stderr, "wm params: %v\n", err)
			return 1
		}
		return 0
	}
	letters, _ := cfg.Letters()
	fmt.Fprintf(stdout, "stack: %s (%d sublayers, CDMoE ratio %.2f), d_model %d, vocab %d\n\n",
		string(letters), len(letters), graph.CDMoERatio(letters), cfg.DModel, cfg.Vocab)
	fmt.Fprint(stdout, graph.FormatBreakdown(rows))
	return 0
}
