package wmcli

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// losses reads the loss column of a run's metrics.jsonl.
func losses(t *testing.T, dir string) []float64 {
	t.Helper()
	f, err := os.Open(filepath.Join(dir, "metrics.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []float64
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var m struct{ Loss float64 }
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatal(err)
		}
		out = append(out, m.Loss)
	}
	return out
}

// buildWM builds cmd/wm into a temporary folder and returns its path and
// the folder.
func buildWM(t *testing.T) (bin, tmp string) {
	t.Helper()
	if testing.Short() {
		t.Skip("builds the binary")
	}
	tmp = t.TempDir()
	bin = filepath.Join(tmp, "wm")
	if out, err := exec.Command("go", "build", "-o", bin, "../wm").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	return bin, tmp
}

// waitForLines waits (at most a minute) until dir's metrics.jsonl has n lines.
func waitForLines(dir string, n int) {
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		b, _ := os.ReadFile(filepath.Join(dir, "metrics.jsonl"))
		if bytes.Count(b, []byte("\n")) >= n {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestTrainSIGKILLResume builds wm, kills a `wm train` with SIGKILL part-way,
// resumes it, and compares with an uninterrupted run: the same losses at
// every step and the same result, to the bit. While the first process
// trains, a second one on the same folder is refused (the folder lock), and
// the lock the killed process leaves does not block the resume.
func TestTrainSIGKILLResume(t *testing.T) {
	bin, tmp := buildWM(t)
	args := func(out string) []string {
		return []string{"train", "--pattern", "SM AM", "--d-model", "32", "--heads", "2", "--steps", "80",
			"--batch", "4", "--seq-len", "32", "--ckpt-every", "10", "--seed", "3", "--out", out}
	}
	full, killed := filepath.Join(tmp, "full"), filepath.Join(tmp, "killed")
	if out, err := exec.Command(bin, args(full)...).CombinedOutput(); err != nil {
		t.Fatalf("uninterrupted run: %v\n%s", err, out)
	}
	cmd := exec.Command(bin, args(killed)...)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waitForLines(killed, 35)
	// While it trains, a second process on the same folder is refused with
	// the holder's pid and changes nothing.
	second, err := exec.Command(bin, append(args(killed), "--resume")...).CombinedOutput()
	if _, done := os.Stat(filepath.Join(killed, "result.json")); done != nil {
		if err == nil || !strings.Contains(string(second), fmt.Sprintf("is in use by pid %d", cmd.Process.Pid)) {
			t.Errorf("a second wm train on the folder in use: %v\n%s", err, second)
		}
	}
	_ = cmd.Process.Signal(syscall.SIGKILL)
	_ = cmd.Wait()
	if _, err := os.Stat(filepath.Join(killed, "result.json")); err == nil {
		t.Skip("the run finished before the kill (machine too fast for this test)")
	}
	// The lock file stays behind the killed process; it must not block --resume.
	if _, err := os.Stat(filepath.Join(killed, "run.lock")); err != nil {
		t.Errorf("no run.lock in the killed run's folder: %v", err)
	}
	out, err := exec.Command(bin, append(args(killed), "--resume")...).CombinedOutput()
	if err != nil {
		t.Fatalf("resume: %v\n%s", err, out)
	}
	a, b := losses(t, full), losses(t, killed)
	if len(a) != 80 || len(b) != 80 {
		t.Fatalf("%d and %d metrics lines, want 80", len(a), len(b))
	}
	for i := range a {
		if a[i] != b[i] {
			t.Fatalf("step %d: loss %v after the kill, %v uninterrupted", i+1, b[i], a[i])
		}
	}
	ra, _ := os.ReadFile(filepath.Join(full, "result.json"))
	rb, _ := os.ReadFile(filepath.Join(killed, "result.json"))
	var resA, resB struct{ ValLoss, TrainLoss float64 }
	json.Unmarshal(ra, &resA)
	json.Unmarshal(rb, &resB)
	if resA != resB {
		t.Errorf("result %+v after the kill, %+v uninterrupted", resB, resA)
	}
}

func TestTrainBadInput(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.txt")
	os.WriteFile(bad, []byte("fine\n\xff\n"), 0o644)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"train", "--arch", "llama", "--steps", "5"}, "--out is required"},
		{[]string{"train", "--arch", "llama", "--out", dir + "/x"}, "train.steps"},
		{[]string{"train", "--arch", "llama", "--steps", "5", "--out", dir + "/y", "--corpus", dir + "/missing.txt"}, "missing.txt"},
		{[]string{"train", "--arch", "llama", "--steps", "5", "--out", dir + "/z", "--corpus", bad}, "bad.txt:2: invalid UTF-8"},
		{[]string{"train", "--pattern", "Q", "--steps", "5", "--out", dir + "/w"}, "unknown letter"},
		{[]string{"train", "--arch", "llama", "--steps", "5", "--out", dir + "/v", "--shards", "3"}, "train.shards: must be >= 0 and divide train.batch (8), got 3"},
		{[]string{"train", "--arch", "llama", "--steps", "5", "--out", dir + "/v", "--shard-threads", "1"}, "train.shard_threads (--shard-threads): must be >= 0, and 0 unless train.shards is above 1 (it is 0), got 1"},
	} {
		var out, errb bytes.Buffer
		if code := Run(c.args, &out, &errb); code != 2 || !strings.Contains(errb.String(), c.want) {
			t.Errorf("%v: exit %d, stderr %q; want 2 and %q", c.args, code, errb.String(), c.want)
		}
	}
}

// TestTrainSIGINTStopsCleanly: SIGINT part-way makes wm train finish its
// step, write a checkpoint of it, and exit 130 with the command that
// resumes; the resumed run ends with the metrics of one never stopped.
func TestTrainSIGINTStopsCleanly(t *testing.T) {
	bin, tmp := buildWM(t)
	args := func(out string) []string {
		return []string{"train", "--pattern", "SM AM", "--d-model", "32", "--heads", "2", "--steps", "60",
			"--batch", "4", "--seq-len", "32", "--ckpt-every", "50", "--seed", "4", "--out", out}
	}
	full, stopped := filepath.Join(tmp, "full"), filepath.Join(tmp, "stopped")
	if out, err := exec.Command(bin, args(full)...).CombinedOutput(); err != nil {
		t.Fatalf("uninterrupted run: %v\n%s", err, out)
	}
	cmd := exec.Command(bin, args(stopped)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waitForLines(stopped, 12)
	_ = cmd.Process.Signal(os.Interrupt)
	err := cmd.Wait()
	if _, done := os.Stat(filepath.Join(stopped, "result.json")); done == nil {
		t.Skip("the run finished before the signal (machine too fast for this test)")
	}
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != ExitStopped {
		t.Fatalf("exit: %v, want status %d\n%s", err, ExitStopped, stderr.String())
	}
	want := "to resume: " + resumeLine(args(stopped))
	if !strings.Contains(want, "'SM AM'") || !strings.HasSuffix(want, " --resume") {
		t.Errorf("resume line %q: the pattern should be quoted for the shell and --resume added", want)
	}
	if !strings.Contains(stderr.String(), want) {
		t.Errorf("stderr lacks %q:\n%s", want, stderr.String())
	}
	// The checkpoint is of the last step logged (not of step 50, the next
	// regular one): nothing trained is lost.
	ptr, err := os.ReadFile(filepath.Join(stopped, "checkpoint.json"))
	var p struct{ Step int }
	if err != nil || json.Unmarshal(ptr, &p) != nil || p.Step != len(losses(t, stopped)) {
		t.Fatalf("checkpoint %s (err %v) after %d logged steps", ptr, err, len(losses(t, stopped)))
	}
	if out, err := exec.Command(bin, append(args(stopped), "--resume")...).CombinedOutput(); err != nil {
		t.Fatalf("resume: %v\n%s", err, out)
	}
	a, b := losses(t, full), losses(t, stopped)
	if len(a) != 60 || len(b) != 60 {
		t.Fatalf("%d and %d metrics lines, want 60", len(a), len(b))
	}
	for i := range a {
		if a[i] != b[i] {
			t.Fatalf("step %d: loss %v after the stop, %v uninterrupted", i+1, b[i], a[i])
		}
	}
}
