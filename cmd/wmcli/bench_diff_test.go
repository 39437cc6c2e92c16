package wmcli

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wonderful-matrices/wonderful-matrices-go/experiments/train"
)

// benchReportText is a report as wm bench --out writes it for rows, under
// a machine line.
func benchReportText(machine string, rows []benchRow) string {
	var b strings.Builder
	b.WriteString("# wm bench\n\n" + machine + "\n\nRatios are wm ÷ peer.\n\n")
	b.WriteString(benchTableHeader + "\n" + benchTableDelimiter + "\n")
	for _, r := range rows {
		b.WriteString(r.markdown())
	}
	return b.String() + "\n" + benchAnalysis(rows)
}

// benchDiffRows are three rows of one run: training at ratioTrain × the
// peer for the first, its evaluation and the others fixed, the third only
// when third is set.
func benchDiffRows(rate, ratioTrain float64, third bool) []benchRow {
	row := func(pat string, d, threads int, wmTrain, peerTrain float64) benchRow {
		return benchRow{Pattern: pat, Size: benchSize{D: d, T: 256, B: 8}, Threads: threads, GemmRate: rate * float64(threads),
			WMLayout: train.Layout{Shards: threads}, PeerLayout: "1×1",
			WM:   benchResult{Train: wmTrain, Eval: 3 * wmTrain, RSSMB: 100, TrainGFLOP: 1, EvalGFLOP: 1.0 / 3},
			Peer: benchResult{Train: peerTrain, Eval: 3 * peerTrain, RSSMB: 200}}
	}
	rows := []benchRow{
		row("(SM)3 AM", 64, 1, 1000*ratioTrain, 1000),
		row("(SM)3 AM", 64, 2, 5000, 1000),
	}
	rows[0].WM.Eval = 7500 // 2.5× the peer's 3000 in both runs
	if third {
		rows = append(rows, row("(AM)4", 256, 1, 900, 1000))
	}
	return rows
}

// Two runs set side by side: the rates and target counts of each, a row
// whose ratio fell below 2× named as no longer meeting the training
// target (and one whose memory rose above the peer's, the memory target,
// whose bullet lists only the rows that miss it), each row's figures with the change in percent and its share of
// the ceiling, and a row of one run only named as such.
func TestBenchDiff(t *testing.T) {
	before, err := parseBenchReport("before.md", benchReportText("machine A", benchDiffRows(100, 2.5, true)))
	if err != nil {
		t.Fatal(err)
	}
	afterRows := benchDiffRows(90, 1.8, false)
	afterRows[1].WM.RSSMB = 300 // above the peer's 200
	after, err := parseBenchReport("after.md", benchReportText("machine B", afterRows))
	if err != nil {
		t.Fatal(err)
	}
	if len(before.rows) != 3 || before.rows[0].label != "(SM)3 AM d64 t256 b8 ×1" || before.rows[0].wmTrain != 2500 || before.rows[0].peerEval != 3000 {
		t.Fatalf("rows read back: %+v", before.rows)
	}
	// ceiling: 2048 tokens at 100 GFLOP/s of 1 GFLOP a step.
	if c := before.rows[0].trainCeiling; c != 204800 || before.rates[1] != 100 || before.rates[2] != 200 {
		t.Errorf("ceiling %v, rates %v; want 204800 and 100, 200", c, before.rates)
	}
	if len(before.targets) < 4 || before.targets[0].name != "Training ≥ 2× the peer" || before.targets[0].counts != "2 of 3" {
		t.Fatalf("targets read back: %+v", before.targets)
	}
	got := benchDiff(before, after)
	reportHas(t, got,
		"Before: before.md: machine A",
		"After: after.md: machine B",
		"| BLAS GFLOP/s, 1 thread | 100 | 90 |",
		"| BLAS GFLOP/s, 2 threads | 200 | 180 |",
		"| Training ≥ 2× the peer | 2 of 3 | 1 of 2 |",
		"- **Training ≥ 2× the peer:** no longer met: (SM)3 AM d64 t256 b8 ×1; newly met: none.",
		"- **Peak RSS ≤ the peer's:** no longer met: (SM)3 AM d64 t256 b8 ×2; newly met: none.",
		"| (SM)3 AM d64 t256 b8 ×1 | 2500 → 1800 (-28.0%) | 1000 → 1000 (+0.0%) | 2.50× → 1.80× | 0.012 → 0.010 |",
		"Rows in one run only: before: (AM)4 d256 t256 b8 ×1; after: none.",
	)
	if strings.Contains(got, "Evaluation ≥ 2× the peer:** no longer") {
		t.Errorf("evaluation's verdicts did not change, yet a change is listed:\n%s", got)
	}
	same := benchDiff(after, after)
	reportHas(t, same, "Every target reported in both runs is met by the same rows in both.")
	// A report from before the targets were written has none in common.
	old := before
	old.targets = nil
	reportHas(t, benchDiff(old, after), "No performance target is reported in both runs.")
}

// What is not a report, or a report with a damaged row, is refused with
// the file and line; the command wants two files and writes --out.
func TestBenchDiffErrors(t *testing.T) {
	good := benchReportText("m", benchDiffRows(100, 2.5, false))
	if _, err := parseBenchReport("x.md", "# something else\n"); err == nil || !strings.Contains(err.Error(), "x.md: not a report") {
		t.Errorf("another file: %v", err)
	}
	broken := strings.Replace(good, "| 2500 |", "| fast |", 1)
	if _, err := parseBenchReport("b.md", broken); err == nil || !strings.Contains(err.Error(), "b.md:9") || !strings.Contains(err.Error(), `"fast" is not a number`) {
		t.Errorf("a cell that is not a number: %v", err)
	}
	short := strings.Replace(good, "| 1×1 |", "|", 1)
	if _, err := parseBenchReport("s.md", short); err == nil || !strings.Contains(err.Error(), "s.md:9: a row of 15 cells under a header of 16") {
		t.Errorf("a row with a cell missing: %v", err)
	}
	if _, err := parseBenchReport("e.md", "# wm bench\n\nno table\n"); err == nil || !strings.Contains(err.Error(), "e.md: no table of rows") {
		t.Errorf("a report without rows: %v", err)
	}

	dir := t.TempDir()
	a, b, out := filepath.Join(dir, "a.md"), filepath.Join(dir, "b.md"), filepath.Join(dir, "diff.md")
	for _, p := range []string{a, b} {
		if err := os.WriteFile(p, []byte(good), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"bench-diff", a}, "give two reports"},
		{[]string{"bench-diff", a, filepath.Join(dir, "none.md")}, "none.md"},
	} {
		var o, e bytes.Buffer
		if code := Run(c.args, &o, &e); code != 2 || !strings.Contains(e.String(), c.want) {
			t.Errorf("%q: exit %d, %q; want 2 and %q", c.args, code, e.String(), c.want)
		}
	}
	var o, e bytes.Buffer
	if code := Run([]string{"bench-diff", "--out", out, a, b}, &o, &e); code != 0 {
		t.Fatalf("exit %d: %s", code, e.String())
	}
	written, err := os.ReadFile(out)
	if err != nil || string(written) != o.String() || !strings.Contains(o.String(), "Every target reported in both runs is met by the same rows") {
		t.Errorf("--out wrote %q (%v); stdout %q", written, err, o.String())
	}
}

// The table of rows has as many cells in its delimiter line as in its
// header and in each row, or Markdown shows no table.
func TestBenchTableCells(t *testing.T) {
	n := len(tableCells(benchTableHeader))
	row := benchDiffRows(100, 2, false)[0].markdown()
	if d, r := len(tableCells(benchTableDelimiter)), len(tableCells(row)); d != n || r != n {
		t.Errorf("header %d cells, delimiter %d, a row %d", n, d, r)
	}
}

// A report written before the table had its shard and peer-thread columns
// is read by its columns' names; a table without a column the comparison
// needs is refused, naming it.
func TestBenchDiffOlderReports(t *testing.T) {
	const head = "# wm bench\n\nan older run\n\n"
	old := head + "| pattern | d_model | seq_len | batch | threads | wm train tok/s | peer train tok/s | train ratio | wm eval tok/s | peer eval tok/s | eval ratio | wm peak RSS MB | peer peak RSS MB | RSS ratio |\n" +
		"| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n" +
		"| (SM)4 | 64 | 256 | 8 | 1 | 1200 | 1000 | 1.20× | 3000 | — | — | 100 | 200 | 0.50× |\n"
	rep, err := parseBenchReport("old.md", old)
	if err != nil {
		t.Fatal(err)
	}
	if r := rep.rows[0]; r.label != "(SM)4 d64 t256 b8 ×1" || r.wmTrain != 1200 || r.peerTrain != 1000 || r.wmEval != 3000 || r.peerEval != 0 {
		t.Errorf("an older row read as %+v", r)
	}
	noEval := head + "| pattern | d_model | seq_len | batch | threads | wm train tok/s | peer train tok/s |\n| --- | ---: | ---: | ---: | ---: | ---: | ---: |\n| (SM)4 | 64 | 256 | 8 | 1 | 1200 | 1000 |\n"
	if _, err := parseBenchReport("n.md", noEval); err == nil || !strings.Contains(err.Error(), `n.md:7: the table has no column "wm eval tok/s"`) {
		t.Errorf("a table without evaluation: %v", err)
	}
}
