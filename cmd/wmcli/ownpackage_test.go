package wmcli

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// A researcher's own main (testdata/mylab/cmd/mylab: a blank import of the
// package that registers a mixer, a task and two experiments, then
// wmcli.Main) gets list, run and report for them beside the papers' ones;
// the lab's own tests (its mixer's gradient by finite differences) pass.
func TestOwnExperimentPackage(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a binary")
	}
	if out, err := exec.Command("go", "test", "-count=1", "./testdata/mylab/").CombinedOutput(); err != nil {
		t.Fatalf("the lab's tests: %v\n%s", err, out)
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
	for _, want := range []string{"mylab-depth", "pairs-3", "table1", "mylab-mixers", "gconv"} {
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
	// The lab's mixer (letter G) on the lab's task (its answer accuracy).
	out = run("run", "mylab-mixers", "--preset", "tiny", "--out", res)
	if !regexp.MustCompile(`\| gconv \| gconv \| [0-9.e-]+ \| \d+ \| \d+\.\d{3} \| \d\.\d{3} \| 1 \|`).MatchString(out) {
		t.Errorf("run's table has no gconv row with a test ppl and an answer accuracy:\n%s", out)
	}
	cfg, err := os.ReadFile(filepath.Join(res, "mylab-mixers", "tiny", "gconv", "seed-0", "config.json"))
	if err != nil || !strings.Contains(string(cfg), `"pattern": "(GM)2"`) || !strings.Contains(string(cfg), `"gconv": {`) || !strings.Contains(string(cfg), `"data": "mylab sums.txt/byte"`) {
		t.Errorf("the gconv arm's config.json (err %v):\n%s", err, cfg)
	}
}
