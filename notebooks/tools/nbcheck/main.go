// Command nbcheck fails when an executed Jupyter notebook holds a failed
// cell. GoNB v0.11.1 reports a compile error as a cell error (nbconvert
// then stops), but a cell whose program panics or exits non-zero only
// writes "exit status N" to its stderr stream, which nbconvert takes for
// success; `make notebooks` runs nbcheck on every notebook it executed so
// that such a cell fails CI too.
//
//	nbcheck NOTEBOOK.ipynb...
//
// Exit status 0 when every cell succeeded, 1 naming each failed cell with
// the start of its source and its error output, 2 for a file it cannot
// read as a notebook.
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"strings"
)

// notebook is the part of the nbformat 4 JSON that nbcheck reads.
type notebook struct {
	Cells []struct {
		CellType string          `json:"cell_type"`
		Source   json.RawMessage `json:"source"`
		Outputs  []struct {
			OutputType string          `json:"output_type"`
			Name       string          `json:"name"`
			Text       json.RawMessage `json:"text"`
			EName      string          `json:"ename"`
			EValue     string          `json:"evalue"`
		} `json:"outputs"`
	} `json:"cells"`
}

// text reads a notebook string field: a string or a list of lines.
func text(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var lines []string
	if json.Unmarshal(raw, &lines) == nil {
		return strings.Join(lines, "")
	}
	return ""
}

// failed matches what GoNB writes to stderr when a cell's program fails.
var failed = regexp.MustCompile(`(?m)^(exit status \d+|panic: .*|signal: .*)$`)

func check(path string) (problems []string, err error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var nb notebook
	if err := json.Unmarshal(raw, &nb); err != nil {
		return nil, fmt.Errorf("%s: not a notebook: %v", path, err)
	}
	for i, c := range nb.Cells {
		if c.CellType != "code" {
			continue
		}
		src := strings.TrimSpace(text(c.Source))
		if j := strings.IndexByte(src, '\n'); j > 0 {
			src = src[:j] + " …"
		}
		for _, o := range c.Outputs {
			msg := ""
			switch {
			case o.OutputType == "error":
				msg = o.EName + ": " + o.EValue
			case o.OutputType == "stream" && o.Name == "stderr" && failed.MatchString(text(o.Text)):
				msg = strings.TrimSpace(text(o.Text))
			}
			if msg != "" {
				problems = append(problems, fmt.Sprintf("%s: cell %d (%s) failed:\n%s", path, i+1, src, msg))
			}
		}
	}
	return problems, nil
}

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: nbcheck NOTEBOOK.ipynb...")
		os.Exit(2)
	}
	bad := false
	for _, path := range os.Args[1:] {
		problems, err := check(path)
		if err != nil {
			fmt.Fprintln(os.Stderr, "nbcheck:", err)
			os.Exit(2)
		}
		for _, p := range problems {
			fmt.Fprintln(os.Stderr, p)
			bad = true
		}
	}
	if bad {
		os.Exit(1)
	}
}
