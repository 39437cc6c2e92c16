package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A panicking cell, a non-zero exit and a cell error are failures; plain
// stderr (go's download lines) and a clean notebook are not.
func TestCheck(t *testing.T) {
	dir := t.TempDir()
	write := func(name, outputs string) string {
		p := filepath.Join(dir, name)
		nb := `{"cells": [{"cell_type": "markdown", "source": "# t"}, {"cell_type": "code", "source": ["%%\n", "run()"], "outputs": [` + outputs + `]}]}`
		if err := os.WriteFile(p, []byte(nb), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	cases := []struct {
		name, outputs string
		fails         bool
	}{
		{"clean", `{"output_type": "stream", "name": "stdout", "text": "ok\n"}`, false},
		{"go noise", `{"output_type": "stream", "name": "stderr", "text": ["go: upgraded x v1 => v2\n"]}`, false},
		{"panic", `{"output_type": "stream", "name": "stderr", "text": ["panic: boom\n", "\n", "exit status 2\n"]}`, true},
		{"exit", `{"output_type": "stream", "name": "stderr", "text": "exit status 1\n"}`, true},
		{"error", `{"output_type": "error", "ename": "ERROR", "evalue": "compile failed", "traceback": []}`, true},
	}
	for _, c := range cases {
		problems, err := check(write(c.name+".ipynb", c.outputs))
		if err != nil {
			t.Fatal(err)
		}
		if got := len(problems) > 0; got != c.fails {
			t.Errorf("%s: failed = %v, want %v (%v)", c.name, got, c.fails, problems)
		}
		if c.fails && !strings.Contains(problems[0], "cell 2 (%% …)") {
			t.Errorf("%s: %q does not name the cell", c.name, problems[0])
		}
	}
	if _, err := check(write("broken.ipynb", `}`)); err == nil {
		t.Error("a broken file is not an error")
	}
}
