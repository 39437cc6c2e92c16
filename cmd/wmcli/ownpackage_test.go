package wmcli

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// A researcher's own main (testdata/mylab/cmd/mylab: a blank import of the
// package that registers the experiment, then wmcli.Main) gets list, run
// and report for that experiment beside the papers' ones.
func TestOwnExperimentPackage(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a binary")
	}
	tmp := t.TempDir()
	bin := filepath.Join(tmp, "mylab")
	if out, err := exec.Command("go", "build", "-o", bin, "./testdata/mylab/cmd/mylab").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	run := func(args ...string) string {
		t.Helper()
		out, err := exec.Command(bin, args...).CombinedOutput()
		if err != nil {
			t.Fatalf("mylab %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	list := run("list", "--arms", "tiny")
	for _, want := range []string{"mylab-depth", "pairs-3", "table1"} {
		if !strings.Contains(list, want) {
			t.Errorf("mylab list lacks %q:\n%s", want, list)
		}
	}
	res := filepath.Join(tmp, "results")
	out := run("run", "mylab-depth", "--preset", "tiny", "--out", res)
	if !strings.Contains(out, "| pairs-3 | 3 |") {
		t.Errorf("run's table lacks the arm pairs-3:\n%s", out)
	}
	table := filepath.Join(res, "mylab-depth", "tiny", "table.md")
	if err := os.Remove(table); err != nil {
		t.Fatal(err)
	}
	run("report", res)
	md, err := os.ReadFile(table)
	if err != nil || !strings.Contains(string(md), "# mylab-depth (v1) at tiny") {
		t.Fatalf("report did not rebuild %s (err %v):\n%s", table, err, md)
	}
}
