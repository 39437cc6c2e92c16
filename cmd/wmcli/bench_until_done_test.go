package wmcli

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// fakeWM writes an executable in dir that stands for wm: each call appends
// its arguments as a line to dir/calls and exits with the next status of
// codes (the last one again once they run out).
func fakeWM(t *testing.T, dir string, codes ...string) string {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, "codes"), []byte(strings.Join(codes, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "wm")
	script := `#!/usr/bin/env bash
echo "$*" >> "` + dir + `/calls"
n=$(wc -l < "` + dir + `/calls")
code=$(sed -n "${n}p" "` + dir + `/codes")
[[ -n $code ]] || code=$(tail -n 1 "` + dir + `/codes")
exit "$code"
`
	if err := os.WriteFile(path, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

// untilDone runs scripts/bench-until-done.sh with wm and env, and returns
// its exit status, its stderr and the fake's calls.
func untilDone(t *testing.T, dir, wm string, env ...string) (int, string, []string) {
	t.Helper()
	cmd := exec.Command("bash", filepath.Join("..", "..", "scripts", "bench-until-done.sh"), wm, "--reps", "1", "--out", "x.md")
	cmd.Env = append(os.Environ(), env...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	text, _ := os.ReadFile(filepath.Join(dir, "calls"))
	var calls []string
	if s := strings.TrimSpace(string(text)); s != "" {
		calls = strings.Split(s, "\n")
	}
	return code, stderr.String(), calls
}

// bench-until-done.sh runs wm bench ARGS --resume again after each exit 3
// (the host off the report's speed), ends with any other status, gives up
// with 3 after TRIES, and starts no try while the HOLD file exists.
func TestBenchUntilDone(t *testing.T) {
	const call = "bench --reps 1 --out x.md --resume"
	for _, c := range []struct {
		name  string
		codes []string
		env   []string
		code  int
		calls int
		say   string
	}{
		{"finished on the third try", []string{"3", "3", "0"}, nil, 0, 3, "try 3 at"},
		{"another failure ends it", []string{"3", "1"}, nil, 1, 2, "try 2 at"},
		{"the tries run out", []string{"3"}, []string{"TRIES=2"}, 3, 2, "the host stayed off the report's speed for 2 tries"},
	} {
		dir := t.TempDir()
		code, stderr, calls := untilDone(t, dir, fakeWM(t, dir, c.codes...), append([]string{"WAIT=0"}, c.env...)...)
		if code != c.code || len(calls) != c.calls || !strings.Contains(stderr, c.say) {
			t.Errorf("%s: exit %d after %d calls, want %d after %d; stderr %q, want %q", c.name, code, len(calls), c.code, c.calls, stderr, c.say)
		}
		for _, got := range calls {
			if got != call {
				t.Errorf("%s: wm called as %q, want %q", c.name, got, call)
			}
		}
	}

	dir := t.TempDir()
	hold := filepath.Join(dir, "hold")
	if err := os.WriteFile(hold, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	go func() {
		time.Sleep(1500 * time.Millisecond)
		if _, err := os.Stat(filepath.Join(dir, "calls")); err == nil {
			t.Errorf("a try started while %s existed", hold)
		}
		os.Remove(hold)
	}()
	code, stderr, calls := untilDone(t, dir, fakeWM(t, dir, "0"), "WAIT=0", "HOLD="+hold)
	if code != 0 || len(calls) != 1 || !strings.Contains(stderr, "holding while "+hold+" exists") {
		t.Errorf("with HOLD: exit %d after %d calls, stderr %q; want 0 after 1, saying it holds", code, len(calls), stderr)
	}
}
