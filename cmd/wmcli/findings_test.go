package wmcli

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// wm findings: a folder without results or bad arguments exit 2 and write
// nothing; a results folder gets findings.md with every claim listed.
func TestFindingsCommand(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"findings"}, "usage: wm findings DIR"},
		{[]string{"findings", filepath.Join(dir, "missing")}, "no such file"},
		{[]string{"findings", dir}, "holds no results of wm run"},
		{[]string{"findings", dir, "extra"}, "usage: wm findings DIR"},
	} {
		var out, errb bytes.Buffer
		if code := Run(c.args, &out, &errb); code != 2 || !strings.Contains(errb.String(), c.want) {
			t.Errorf("%v: exit %d, stderr %q; want 2 and %q", c.args, code, errb.String(), c.want)
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Fatalf("a refused call wrote %v", entries)
	}
	var out, errb bytes.Buffer
	if code := Run([]string{"run", "params", "--out", dir}, &out, &errb); code != 0 {
		t.Fatalf("run params: %d %s", code, errb.String())
	}
	target := filepath.Join(dir, "sub", "f.md")
	out.Reset()
	if code := Run([]string{"findings", dir, "--out", target}, &out, &errb); code != 0 {
		t.Fatalf("findings: %d %s", code, errb.String())
	}
	md, err := os.ReadFile(target)
	if err != nil || !strings.Contains(string(md), "| 4 | RoPE gives SSD") || !strings.Contains(string(md), "| 1 | control: attention solves MQAR") || !strings.Contains(out.String(), "not run") {
		t.Errorf("findings.md (err %v):\n%s\nstdout:\n%s", err, md, out.String())
	}
}
