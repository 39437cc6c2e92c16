package wmcli

import (
	"bufio"
	"bytes"
	"encoding/json"
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

// TestTrainSIGKILLResume builds wm, kills a `wm train` with SIGKILL part-way,
// resumes it, and compares with an uninterrupted run: the same losses at
// every step and the same result, to the bit.
func TestTrainSIGKILLResume(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	tmp := t.TempDir()
	bin := filepath.Join(tmp, "wm")
	if out, err := exec.Command("go", "build", "-o", bin, "../wm").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
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
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		b, _ := os.ReadFile(filepath.Join(killed, "metrics.jsonl"))
		if bytes.Count(b, []byte("\n")) >= 35 {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	_ = cmd.Process.Signal(syscall.SIGKILL)
	_ = cmd.Wait()
	if _, err := os.Stat(filepath.Join(killed, "result.json")); err == nil {
		t.Skip("the run finished before the kill (machine too fast for this test)")
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
	} {
		var out, errb bytes.Buffer
		if code := Run(c.args, &out, &errb); code != 2 || !strings.Contains(errb.String(), c.want) {
			t.Errorf("%v: exit %d, stderr %q; want 2 and %q", c.args, code, errb.String(), c.want)
		}
	}
}
