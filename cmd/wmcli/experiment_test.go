package wmcli

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wonderful-matrices/wonderful-matrices-go/experiments/data"
)

// wm list names every experiment and preset; wm run and wm report refuse
// bad input with exit 2 and a message naming it, before any work.
func TestListRunReportErrors(t *testing.T) {
	var out, errb bytes.Buffer
	if code := Run([]string{"list", "--arms", "tiny"}, &out, &errb); code != 0 {
		t.Fatalf("wm list: exit %d: %s", code, errb.String())
	}
	for _, want := range []string{"table1", "table2", "table3", "mqar", "throughput", "params", "extrapolation", "ssd-ifa-dm.rope", "tiny, small, medium, paper"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("wm list does not mention %q", want)
		}
	}
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty")
	os.Mkdir(empty, 0o755)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"run", "tabel1", "--out", dir}, `experiment "tabel1" does not exist; the experiments are: extrapolation, mqar`},
		{[]string{"run", "table1", "--preset", "huge", "--out", dir}, `preset "huge" does not exist; the presets are: tiny, small, medium, paper`},
		{[]string{"run", "table1"}, "--out is required"},
		{[]string{"run", "--preset", "tiny"}, "usage: wm run NAME"},
		{[]string{"run", "table1", "--out", dir, "extra"}, "unexpected arguments"},
		{[]string{"run", "table3", "--out", dir, "--arms", "nope"}, `arm "nope" does not exist`},
		{[]string{"run", "table3", "--out", dir, "--seeds", "-1"}, "seeds: must be >= 1"},
		{[]string{"run", "table3", "--out", dir, "--shards", "3"}, "arm moe: train.shards: must be >= 0 and divide train.batch"},
		{[]string{"run", "table3", "--out", dir, "--shards", "-2"}, "--shards: must be >= 0"},
		{[]string{"run", "table3", "--out", dir, "--shard-threads", "1"}, "--shard-threads: must be >= 0, and 0 unless --shards is above 1"},
		{[]string{"run", "table3", "--out", dir, "--shards", "2", "--shard-threads", "-1"}, "--shard-threads: must be >= 0"},
		{[]string{"report", filepath.Join(dir, "missing")}, "missing"},
		{[]string{"report", empty}, "holds no results of wm run"},
		{[]string{"list", "--arms", "huge"}, `preset "huge" does not exist`},
	} {
		out.Reset()
		errb.Reset()
		if code := Run(c.args, &out, &errb); code != 2 || !strings.Contains(errb.String(), c.want) {
			t.Errorf("wm %v: exit %d, stderr %q; want 2 and %q", c.args, code, errb.String(), c.want)
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("refused runs left %d entries in the results folder, want only the empty folder", len(entries))
	}
}

// wm train --tokenizer bpe:N trains the tokenizer on the corpus, saves it
// with the run, sizes the vocabulary to it, and wm generate decodes with it.
func TestTrainWithBPE(t *testing.T) {
	dir := t.TempDir()
	corpus := filepath.Join(dir, "c.txt")
	kjv, err := data.KJV()
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(corpus, []byte(kjv[:60_000]), 0o644)
	runDir := filepath.Join(dir, "run")
	var out, errb bytes.Buffer
	args := []string{"train", "--pattern", "AM", "--d-model", "16", "--heads", "2", "--steps", "3", "--seq-len", "16", "--batch", "2",
		"--corpus", corpus, "--tokenizer", "bpe:300", "--out", runDir}
	if code := Run(args, &out, &errb); code != 0 {
		t.Fatalf("wm train: exit %d: %s", code, errb.String())
	}
	cfg, _ := os.ReadFile(filepath.Join(runDir, "config.json"))
	if !strings.Contains(string(cfg), `"vocab": 300`) || !strings.Contains(string(cfg), "bpe-300") {
		t.Errorf("config.json should have vocab 300 and data .../bpe-300:\n%s", cfg)
	}
	if _, err := os.Stat(filepath.Join(runDir, "tokenizer.json")); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	if code := Run([]string{"generate", "--ckpt", runDir, "--prompt", "the lord", "--n", "5"}, &out, &errb); code != 0 {
		t.Fatalf("wm generate: exit %d: %s", code, errb.String())
	}
	if code := Run([]string{"train", "--pattern", "AM", "--steps", "3", "--tokenizer", "bpe", "--out", filepath.Join(dir, "x")}, &out, &errb); code != 2 || !strings.Contains(errb.String(), "--tokenizer") {
		t.Errorf("--tokenizer bpe: exit %d, %s", code, errb.String())
	}
}
