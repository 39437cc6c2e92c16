package wmcli

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// An --out in a folder that does not exist yet gets the folder, with the
// journal in it; an --out under a file names the path.
func TestBenchJournalMakesFolder(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "runs", "xeon", "bench.md")
	s := journalSettings{Binary: "abc", Patterns: []string{"(SM)1"}, Sizes: []benchSize{{32, 32, 2}}, Procs: []int{1}, Reps: 8, Rounds: 1}
	j, err := openBenchJournal(out, s, false)
	if err != nil {
		t.Fatal(err)
	}
	j.f.Close()
	if _, err := os.Stat(out + journalSuffix); err != nil {
		t.Fatalf("no journal beside %s: %v", out, err)
	}
	file := filepath.Join(dir, "a-file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(file, "bench.md")
	if _, err := openBenchJournal(bad, s, false); err == nil || !strings.Contains(err.Error(), "bench --out "+bad+": its folder") {
		t.Fatalf("an --out under a file: got %v", err)
	}
}

// The journal keeps what it was given across a reopen, drops a last line a
// crash cut short (and appends after the good lines), refuses to be
// reopened without resume or with other settings, and names a damaged
// line.
func TestBenchJournal(t *testing.T) {
	out := filepath.Join(t.TempDir(), "bench.md")
	path := out + journalSuffix
	s := journalSettings{Binary: "abc", Patterns: []string{"(SM)1"}, Sizes: []benchSize{{32, 32, 2}}, Procs: []int{1, 2}, Reps: 8, Rounds: 5}
	j, err := openBenchJournal(out, s, false)
	if err != nil {
		t.Fatal(err)
	}
	r1 := journalRound{Pattern: "(SM)1", Size: benchSize{32, 32, 2}, Threads: 2, Round: 1, WM: benchResult{Train: 100, Eval: 300}, WMShards: 2,
		Peer: &benchResult{Train: 40, Eval: 90}, PeerLayout: "1×2"}
	if err := j.addRound(r1); err != nil {
		t.Fatal(err)
	}
	if err := j.addRate(2, 460.5, 701.25); err != nil {
		t.Fatal(err)
	}
	if err := j.finish(false); err != nil {
		t.Fatal(err)
	}
	good, _ := os.ReadFile(path)
	f, _ := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString(`{"round":{"pattern":"(SM)1","si`) // the crash
	f.Close()

	if _, err := openBenchJournal(out, s, false); err == nil || !strings.Contains(err.Error(), "pass --resume to continue it") {
		t.Errorf("an existing journal without resume: %v", err)
	}
	other := s
	other.Reps, other.Binary = 3, "def"
	if _, err := openBenchJournal(out, other, true); err == nil || !strings.Contains(err.Error(), "another wm binary; reps 8, now 3") {
		t.Errorf("other settings: %v", err)
	}
	j, err = openBenchJournal(out, s, true)
	if err != nil {
		t.Fatal(err)
	}
	got, ok := j.round("(SM)1", benchSize{32, 32, 2}, 2, 1)
	if !ok || got.WM != r1.WM || *got.Peer != *r1.Peer || got.PeerLayout != "1×2" || got.WMShards != 2 {
		t.Errorf("round read back as %+v (found %v), want %+v", got, ok, r1)
	}
	if _, ok := j.round("(SM)1", benchSize{32, 32, 2}, 2, 2); ok {
		t.Error("a round never written was found")
	}
	if len(j.rates) != 1 || j.rates[0] != (journalRate{2, 460.5, 701.25}) {
		t.Errorf("rates %v, want [{2 460.5 701.25}]", j.rates)
	}
	if b, _ := os.ReadFile(path); !bytes.Equal(b, good) {
		t.Errorf("the torn line was not dropped:\n%s", b)
	}
	r2 := r1
	r2.Round = 2
	if err := j.addRound(r2); err != nil {
		t.Fatal(err)
	}
	if err := j.finish(true); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("a finished run's journal is still there: %v", err)
	}
	kept, err := os.ReadFile(strings.TrimSuffix(path, journalSuffix) + roundsSuffix)
	if err != nil || !bytes.HasPrefix(kept, good) || bytes.Count(kept, []byte(`"round":{`)) != bytes.Count(good, []byte(`"round":{`))+1 {
		t.Errorf("the finished run's rounds were not kept beside it (%v):\n%s", err, kept)
	}

	os.WriteFile(path, append(append([]byte{}, good...), "not json\n{}\n"...), 0o644)
	if _, err := openBenchJournal(out, s, true); err == nil || !strings.Contains(err.Error(), "line 4") {
		t.Errorf("a damaged line: %v", err)
	}
	os.WriteFile(path, []byte("{\"rate\":{\"threads\":1,\"gflops\":9}}\n"), 0o644)
	if _, err := openBenchJournal(out, s, true); err == nil || !strings.Contains(err.Error(), "line 1: not the run's settings") {
		t.Errorf("no settings line: %v", err)
	}
}

// A `wm bench` killed part-way is continued by `wm bench --resume`: the
// rounds its journal holds are not measured again and make the same row;
// the others are measured; the finished run keeps the journal's lines as
// F.rounds.jsonl. Without
// --resume, or with other flags, the journal is refused and kept.
func TestBenchResume(t *testing.T) {
	var outb, errb bytes.Buffer
	if code := Run([]string{"bench", "--resume"}, &outb, &errb); code != 2 || !strings.Contains(errb.String(), "--resume: needs --out") {
		t.Errorf("--resume without --out: exit %d, %q", code, errb.String())
	}
	bin, tmp := buildWM(t)
	file := filepath.Join(tmp, "bench.md")
	args := []string{"bench", "--patterns", "(SM)1", "--sizes", "32x32x2", "--ssd-sizes", "32x64x1", "--procs", "1",
		"--reps", "1", "--rounds", "2", "--peer", "", "--out", file}
	cmd := exec.Command(bin, args...)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Rounds are spread over the run: round 1 of both configurations, then
	// round 2 of each. Kill it once three rounds are in the journal: both
	// of the first configuration's, the second's first (it then measures
	// the second's last round).
	deadline := time.Now().Add(2 * time.Minute)
	for {
		b, _ := os.ReadFile(file + journalSuffix)
		if bytes.Count(b, []byte(`"round":{`)) >= 3 {
			break
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatalf("no three rounds in the journal after two minutes:\n%s", b)
		}
		time.Sleep(20 * time.Millisecond)
	}
	cmd.Process.Kill()
	cmd.Wait()
	journal, _ := os.ReadFile(file + journalSuffix)
	if _, err := os.Stat(file); err == nil {
		t.Fatalf("wm bench finished before it was killed; the test needs a slower step")
	}

	res, err := exec.Command(bin, args...).CombinedOutput()
	if err == nil || !strings.Contains(string(res), "pass --resume to continue it") {
		t.Errorf("a second run without --resume: %v\n%s", err, res)
	}
	res, err = exec.Command(bin, append(args[:len(args):len(args)], "--resume", "--reps", "2")...).CombinedOutput()
	if err == nil || !strings.Contains(string(res), "reps 1, now 2") {
		t.Errorf("resuming with other --reps: %v\n%s", err, res)
	}
	if b, _ := os.ReadFile(file + journalSuffix); !bytes.Equal(b, journal) {
		t.Error("a refused run changed the journal")
	}

	res, err = exec.Command(bin, append(args, "--resume")...).CombinedOutput()
	if err != nil {
		t.Fatalf("wm bench --resume: %v\n%s", err, res)
	}
	for _, want := range []string{"(SM)1 d=32 t=32 b=2 threads=1, round 1 of 2: from the journal (round 1 of 4)", "(SM)1 d=32 t=32 b=2 threads=1, round 2 of 2: from the journal (round 3 of 4; 2 from the journal)",
		"(SM)1 d=32 t=64 b=1 threads=1, round 1 of 2: from the journal (round 2 of 4; 1 from the journal)", "(SM)1 d=32 t=64 b=1 threads=1, round 2 of 2 (round 4 of 4; 3 from the journal) …"} {
		if !strings.Contains(string(res), want) {
			t.Errorf("the resumed run's progress lacks %q:\n%s", want, res)
		}
	}
	if _, err := os.Stat(file + journalSuffix); !os.IsNotExist(err) {
		t.Errorf("the finished run's journal is still there: %v", err)
	}
	// (The killed run's last line may be torn, and is dropped on resuming:
	// the kept file starts with the same settings line, not every byte.)
	settingsLine, _, _ := bytes.Cut(journal, []byte("\n"))
	if kept, err := os.ReadFile(file + roundsSuffix); err != nil || !bytes.HasPrefix(kept, settingsLine) || bytes.Count(kept, []byte(`"round":{`)) != 4 {
		t.Errorf("the finished run's four rounds were not kept in %s (%v):\n%s", file+roundsSuffix, err, kept)
	}
	// The first row is the best of the journal's two rounds.
	j := &benchJournal{path: "journal", rounds: map[roundKey]journalRound{}}
	if _, err := j.read(journal, settingsOf(t, journal)); err != nil {
		t.Fatal(err)
	}
	best := 0.0
	for round := 1; round <= 2; round++ {
		r, ok := j.round("(SM)1", benchSize{32, 32, 2}, 1, round)
		if !ok {
			t.Fatalf("round %d of the first configuration is not in the killed run's journal", round)
		}
		best = max(best, r.WM.Train)
	}
	md, _ := os.ReadFile(file)
	row := regexp.MustCompile(`\| \(SM\)1 \| 32 \| 32 \| 2 \| 1 \| 1 \| — \| (\d+) \|`).FindSubmatch(md)
	if want := fmt.Sprintf("%.0f", best); row == nil || string(row[1]) != want {
		t.Errorf("the first row's wm training figure is %q, the journal's best round %s:\n%s", row, want, md)
	}

	// The finished two-round run gets a third round: only round 3 of each
	// configuration is measured, and the kept file holds all six.
	finished, _ := os.ReadFile(file + roundsSuffix)
	more := append(append([]string{}, args...), "--resume", "--rounds", "3")
	res, err = exec.Command(bin, more...).CombinedOutput()
	if err != nil {
		t.Fatalf("wm bench --resume --rounds 3 after a finished two-round run: %v\n%s", err, res)
	}
	for _, want := range []string{"adding round 3 to the finished run of " + file + roundsSuffix + " (4 rounds measured",
		"(SM)1 d=32 t=32 b=2 threads=1, round 2 of 3: from the journal", "(SM)1 d=32 t=32 b=2 threads=1, round 3 of 3 (round 5 of 6; 4 from the journal) …",
		"(SM)1 d=32 t=64 b=1 threads=1, round 3 of 3 (round 6 of 6; 4 from the journal, 1 measured in "} {
		if !strings.Contains(string(res), want) {
			t.Errorf("the added round's progress lacks %q:\n%s", want, res)
		}
	}
	kept, _ := os.ReadFile(file + roundsSuffix)
	_, finishedLines, _ := bytes.Cut(finished, []byte("\n"))
	if s := settingsOf(t, kept); s.Rounds != 3 || bytes.Count(kept, []byte(`"round":{`)) != 6 || !bytes.Contains(kept, finishedLines) {
		t.Errorf("the three-round run's file (rounds %d) does not hold the two-round run's lines and two more:\n%s", s.Rounds, kept)
	}
	if _, err := os.Stat(file + journalSuffix); !os.IsNotExist(err) {
		t.Errorf("the extended run's journal is still there: %v", err)
	}
}

// --resume adds rounds to a finished run only when it had the same
// settings and fewer rounds; otherwise the run starts from nothing and the
// finished run's file is left alone until the new run replaces it. A
// finished file whose first line is not settings is named.
func TestBenchJournalExtendsFinishedRun(t *testing.T) {
	out := filepath.Join(t.TempDir(), "bench.md")
	s := journalSettings{Binary: "abc", Patterns: []string{"(SM)1"}, Sizes: []benchSize{{32, 32, 2}}, Procs: []int{1}, Reps: 8, Rounds: 2}
	j, err := openBenchJournal(out, s, false)
	if err != nil {
		t.Fatal(err)
	}
	for round := 1; round <= 2; round++ {
		r := journalRound{Pattern: "(SM)1", Size: benchSize{32, 32, 2}, Threads: 1, Round: round, WM: benchResult{Train: float64(100 * round)}}
		if err := j.addRound(r); err != nil {
			t.Fatal(err)
		}
	}
	if err := j.addRate(1, 99, 150); err != nil {
		t.Fatal(err)
	}
	if err := j.finish(true); err != nil {
		t.Fatal(err)
	}
	finished, _ := os.ReadFile(out + roundsSuffix)

	same, other, fewer, three := s, s, s, s
	other.Rounds, other.Reps = 3, 4
	fewer.Rounds, three.Rounds = 1, 3
	for _, c := range []struct {
		name   string
		s      journalSettings
		resume bool
	}{{"the same rounds", same, true}, {"fewer rounds", fewer, true}, {"other reps", other, true}, {"more rounds without --resume", three, false}} {
		j, err := openBenchJournal(out, c.s, c.resume)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if len(j.rounds) != 0 || len(j.rates) != 0 || j.extends != 0 {
			t.Errorf("%s: the journal starts with %d rounds and %d rates (extends %d), want a new run", c.name, len(j.rounds), len(j.rates), j.extends)
		}
		j.discard()
	}

	more := s
	more.Rounds = 5
	j, err = openBenchJournal(out, more, true)
	if err != nil {
		t.Fatal(err)
	}
	if j.extends != 2 || len(j.rounds) != 2 || len(j.rates) != 1 {
		t.Errorf("five rounds of a finished two-round run: extends %d, %d rounds, %d rates; want 2, 2, 1", j.extends, len(j.rounds), len(j.rates))
	}
	if r, ok := j.round("(SM)1", benchSize{32, 32, 2}, 1, 2); !ok || r.WM.Train != 200 {
		t.Errorf("round 2 read back as %+v (found %v)", r, ok)
	}
	j.finish(false)
	journal, _ := os.ReadFile(out + journalSuffix)
	if got := settingsOf(t, journal); got.Rounds != 5 {
		t.Errorf("the new journal's settings have %d rounds, want 5", got.Rounds)
	}
	if _, rest, _ := bytes.Cut(finished, []byte("\n")); !bytes.HasSuffix(journal, rest) {
		t.Errorf("the new journal does not hold the finished run's lines:\n%s", journal)
	}
	if b, _ := os.ReadFile(out + roundsSuffix); !bytes.Equal(b, finished) {
		t.Error("extending a finished run changed its file before the run finished")
	}
	os.Remove(out + journalSuffix)

	os.WriteFile(out+roundsSuffix, []byte("{\"rate\":{\"threads\":1,\"gflops\":9}}\n"), 0o644)
	if _, err := openBenchJournal(out, more, true); err == nil || !strings.Contains(err.Error(), roundsSuffix+" line 1: not a run's settings") {
		t.Errorf("a finished file without settings: %v", err)
	}
}

// settingsOf reads the settings line of a journal.
func settingsOf(t *testing.T, journal []byte) journalSettings {
	t.Helper()
	first, _, _ := bytes.Cut(journal, []byte("\n"))
	var l journalLine
	if err := json.Unmarshal(first, &l); err != nil || l.Settings == nil {
		t.Fatalf("the journal's first line %q is not its settings (%v)", first, err)
	}
	return *l.Settings
}

// A run that fails part-way (here the peer crashes) exits 1, says where its
// finished rounds are and how to continue, and keeps the journal with the
// rounds it measured.
func TestBenchFailureKeepsJournal(t *testing.T) {
	bin, tmp := buildWM(t)
	python := filepath.Join(tmp, "python")
	script := "#!/bin/sh\nif [ \"$1\" = -c ]; then echo 9.9; exit 0; fi\necho 'peer crashed' >&2\nexit 1\n"
	if err := os.WriteFile(python, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(tmp, "bench.md")
	res, err := exec.Command(bin, "bench", "--patterns", "(SM)1", "--sizes", "32x32x2", "--ssd-sizes", "", "--procs", "1",
		"--reps", "1", "--rounds", "1", "--peer", python, "--peer-malloc", "glibc", "--out", file).CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 {
		t.Fatalf("a run whose peer crashes: %v, want exit 1\n%s", err, res)
	}
	for _, want := range []string{"peer crashed", "the finished rounds are kept in " + file + journalSuffix, "--resume continues the run"} {
		if !strings.Contains(string(res), want) {
			t.Errorf("the failure's message lacks %q:\n%s", want, res)
		}
	}
	journal, err := os.ReadFile(file + journalSuffix)
	if err != nil {
		t.Fatalf("the failed run's journal: %v", err)
	}
	if bytes.Count(journal, []byte(`"rate":{`)) == 0 {
		t.Errorf("the journal lacks the BLAS rate measured before the failure:\n%s", journal)
	}
	if _, err := os.Stat(file); !os.IsNotExist(err) {
		t.Errorf("a failed run wrote its report: %v", err)
	}
}
