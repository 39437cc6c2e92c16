package wmcli

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// Without --slurm, wm sweep prints the job array's script: one task per
// arm and seed, absolute paths; bad input exits 2.
func TestSweepScript(t *testing.T) {
	dir := t.TempDir()
	var out, errb bytes.Buffer
	if code := Run([]string{"sweep", "table3", "--preset", "tiny", "--seeds", "2", "--out", dir, "--wm", "/opt/wm", "--sbatch", "--partition=cpu; --mem=4G"}, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	for _, want := range []string{"#SBATCH --array=0-7", "#SBATCH --partition=cpu", "#SBATCH --mem=4G", "'cdmoe 1'",
		"exec /opt/wm run table3 --preset tiny --out " + dir + ` --arms "$arm" --seed "$seed" --lr-grid none --resume`} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("script lacks %q:\n%s", want, out.String())
		}
	}
	// --shards reaches every task's command.
	out.Reset()
	if code := Run([]string{"sweep", "table3", "--preset", "tiny", "--out", dir, "--wm", "/opt/wm", "--shards", "2"}, &out, &errb); code != 0 ||
		!strings.Contains(out.String(), `--lr-grid none --shards 2 --resume`) {
		t.Errorf("--shards 2: exit %d, script:\n%s", code, out.String())
	}
	out.Reset()
	if code := Run([]string{"sweep", "table3", "--preset", "tiny", "--out", dir, "--wm", "/opt/wm", "--shards", "2", "--shard-threads", "1"}, &out, &errb); code != 0 ||
		!strings.Contains(out.String(), `--lr-grid none --shards 2 --shard-threads 1 --resume`) {
		t.Errorf("--shards 2 --shard-threads 1: exit %d, script:\n%s", code, out.String())
	}
	errb.Reset()
	if code := Run([]string{"sweep", "table3", "--preset", "tiny", "--out", dir, "--wm", "/opt/wm", "--shard-threads", "1"}, &out, &errb); code == 0 ||
		!strings.Contains(errb.String(), "--shard-threads") {
		t.Errorf("--shard-threads without --shards: exit %d, stderr %q; want an error naming --shard-threads", code, errb.String())
	}
	// With a grid: an array of one search per arm, then the other seeds.
	out.Reset()
	if code := Run([]string{"sweep", "table3", "--preset", "tiny", "--seeds", "3", "--out", dir, "--wm", "/opt/wm", "--lr-grid", "1e-2,1e-3"}, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	search, seeds, ok := strings.Cut(out.String(), "submitted after the array above")
	if !ok {
		t.Fatalf("one script where two arrays were expected:\n%s", out.String())
	}
	for _, c := range []struct{ script, want string }{
		{search, "#SBATCH --array=0-3"}, {search, "'moe-sei 0'"}, {search, `--seed "$seed" --lr-grid 0.001,0.01 --resume`},
		{seeds, "#SBATCH --array=0-7"}, {seeds, "'cdmoe-normal-keys 2'"}, {seeds, `--lr-grid 0.001,0.01 --resume`},
	} {
		if !strings.Contains(c.script, c.want) {
			t.Errorf("script lacks %q:\n%s", c.want, c.script)
		}
	}
	if strings.Contains(search, "'moe 1'") || strings.Contains(seeds, "'moe 0'") {
		t.Errorf("the search array runs seed 0 only, the seeds array the others:\n%s", out.String())
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"sweep", "tabel3", "--out", dir}, "the experiments are"},
		{[]string{"sweep", "table3", "--out", dir, "--arms", "nope"}, "the arms are"},
		{[]string{"sweep", "table3"}, "--out is required"},
		{[]string{"sweep", "table3", "--out", dir, "--seeds", "0"}, "seeds: must be >= 1"},
		{[]string{"sweep", "table3", "--out", dir, "--lr-grid", "0.1"}, "at least two rates"},
	} {
		out.Reset()
		errb.Reset()
		if code := Run(c.args, &out, &errb); code != 2 || !strings.Contains(errb.String(), c.want) {
			t.Errorf("%v: exit %d, stderr %q; want 2 and %q", c.args, code, errb.String(), c.want)
		}
	}
}

// TestSweepOnSlurm submits table3 at tiny with 2 seeds and a learning-rate
// grid to a real Slurm cluster (make slurm-test starts a one-node one on
// loopback): the search array, then the seeds array after it, then the
// report job, whose aggregated table has every arm with 2 seeds at the rate
// its search chose.
func TestSweepOnSlurm(t *testing.T) {
	if testing.Short() {
		t.Skip("submits to Slurm")
	}
	if _, err := exec.LookPath("sbatch"); err != nil {
		t.Skip("no Slurm here (sbatch not on PATH): `make slurm-test` installs and starts a one-node cluster and runs this test")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if out, err := exec.CommandContext(ctx, "sinfo", "-h", "-o", "%T").CombinedOutput(); err != nil || !regexp.MustCompile(`idle|mixed|allocated`).Match(out) {
		t.Skipf("Slurm is installed but no node is up (sinfo: %v %s): run `make slurm-test`", err, out)
	}
	tmp := t.TempDir()
	bin := filepath.Join(tmp, "wm")
	if out, err := exec.Command("go", "build", "-o", bin, "../wm").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	res := filepath.Join(tmp, "results")
	out, err := exec.Command(bin, "sweep", "table3", "--preset", "tiny", "--seeds", "2", "--out", res, "--slurm", "--cpus-per-task", "1", "--lr-grid", "3e-3,1e-2").CombinedOutput()
	if err != nil {
		t.Fatalf("sweep: %v\n%s", err, out)
	}
	m := regexp.MustCompile(`squeue -j (\d+),(\d+),(\d+)`).FindSubmatch(out)
	if m == nil {
		t.Fatalf("no job ids (search array, seeds array, report) in:\n%s", out)
	}
	jobs := string(m[1]) + "," + string(m[2]) + "," + string(m[3])
	deadline := time.Now().Add(5 * time.Minute)
	for {
		q, _ := exec.Command("squeue", "-h", "-j", jobs).CombinedOutput()
		if len(bytes.TrimSpace(q)) == 0 || bytes.Contains(q, []byte("Invalid job id")) {
			break
		}
		if time.Now().After(deadline) {
			exec.Command("scancel", string(m[1]), string(m[2]), string(m[3])).Run()
			t.Fatalf("jobs %s still queued after 5 minutes:\n%s", jobs, q)
		}
		time.Sleep(time.Second)
	}
	logs, _ := filepath.Glob(filepath.Join(res, "table3", "tiny", "slurm", "*.out"))
	md, err := os.ReadFile(filepath.Join(res, "table3", "tiny", "table.md"))
	if err != nil {
		t.Fatalf("no aggregated table (%v); logs %v", err, logs)
	}
	for _, arm := range []string{"moe", "moe-sei", "cdmoe", "cdmoe-normal-keys"} {
		if !regexp.MustCompile(`(?m)^\| ` + regexp.QuoteMeta(arm) + ` \|.*\| 2 \|$`).Match(md) {
			t.Errorf("table.md has no row of %s with 2 seeds:\n%s", arm, md)
		}
		if _, err := os.Stat(filepath.Join(res, "table3", "tiny", arm, "lr-choice.json")); err != nil {
			t.Errorf("%s has no learning-rate choice: %v", arm, err)
		}
	}
	if len(logs) < 9 {
		t.Errorf("%d Slurm logs, want 4 search tasks, 4 seed tasks and the report", len(logs))
	}
}
