package wmcli

import (
	"flag"
	"fmt"
	"io"
	"path/filepath"

	"github.com/wonderful-matrices/wonderful-matrices-go/experiments"
)

// runFindings is `wm findings DIR [--out FILE]`: every claim of the papers
// that the results under DIR test, with the measured differences, their
// 95% intervals and a verdict, written to DIR/findings.md (or FILE).
func runFindings(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("wm findings", flag.ContinueOnError)
	fs.SetOutput(stderr)
	out := fs.String("out", "", "the Markdown file to write (default DIR/findings.md)")
	readme := fs.String("readme", "", "also write the summary tables into this Markdown file (the README), between its findings-summary markers")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: wm findings DIR [--out FILE] (DIR: a results folder of wm run)")
		fs.PrintDefaults()
	}
	dir := ""
	if len(args) > 0 && len(args[0]) > 0 && args[0][0] != '-' {
		dir, args = args[0], args[1:]
	}
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if dir == "" && fs.NArg() == 1 {
		dir = fs.Arg(0)
	} else if fs.NArg() > 0 || dir == "" {
		fs.Usage()
		return 2
	}
	if _, err := findResults(dir); err != nil {
		fmt.Fprintf(stderr, "wm findings: %v\n", err)
		return 2
	}
	path, claims, err := experiments.WriteFindings(dir, *out)
	if err != nil {
		fmt.Fprintf(stderr, "wm findings: %v\n", err)
		return 1
	}
	for i, c := range claims {
		fmt.Fprintf(stdout, "%d. %-75s %s\n", i+1, c.Title, c.Verdict)
	}
	fmt.Fprintf(stdout, "\nwrote %s\n", path)
	if *readme != "" {
		link, err := filepath.Rel(filepath.Dir(*readme), path)
		if err != nil {
			link = path
		}
		if err := experiments.ReplaceSummary(*readme, filepath.ToSlash(link), claims); err != nil {
			fmt.Fprintf(stderr, "wm findings: %v\n", err)
			return 1
		}
		fmt.Fprintf(stdout, "wrote the summary into %s\n", *readme)
	}
	return 0
}
