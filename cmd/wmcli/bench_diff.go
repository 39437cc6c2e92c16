package wmcli

import (
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/pkg/errors"

	"github.com/wonderful-matrices/wonderful-matrices-go/internal/atomicfile"
)

// runBenchDiff is `wm bench-diff BEFORE.md AFTER.md`: two reports written
// by `wm bench --out` set side by side, as Markdown on stdout (and in
// --out): the BLAS's rate at each thread count, each performance target's
// count of rows met and the rows that changed verdict, then every row's
// tokens/s on both sides, its ratios and its shares of the ceiling, before
// → after. A re-run of docs/bench.md is read against the run before it
// this way (`git show REV:docs/bench.md > before.md`).
func runBenchDiff(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("wm bench-diff", flag.ContinueOnError)
	fs.SetOutput(stderr)
	out := fs.String("out", "", "also write the comparison to this Markdown file")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() != 2 {
		fmt.Fprintln(stderr, "wm bench-diff: give two reports of wm bench --out, the run before and the run after: wm bench-diff before.md docs/bench.md")
		return 2
	}
	var runs [2]benchReport
	for i, path := range fs.Args() {
		text, err := os.ReadFile(path)
		if err != nil {
			fmt.Fprintf(stderr, "wm bench-diff: %v\n", err)
			return 2
		}
		if runs[i], err = parseBenchReport(path, string(text)); err != nil {
			fmt.Fprintf(stderr, "wm bench-diff: %v\n", err)
			return 2
		}
	}
	diff := benchDiff(runs[0], runs[1])
	fmt.Fprint(stdout, diff)
	if *out != "" {
		if err := atomicfile.WriteBytes(*out, []byte(diff)); err != nil {
			fmt.Fprintf(stderr, "wm bench-diff: %v\n", err)
			return 1
		}
	}
	return 0
}

// benchReport is what wm bench-diff reads from a report: its machine line,
// its rows (in the table's order), the BLAS rate at each thread count and
// each performance target's verdicts.
type benchReport struct {
	path    string
	machine string // the paragraph under "# wm bench": date, CPU, BLAS, peer
	rows    []benchReportRow
	rates   map[int]float64 // BLAS GFLOP/s by threads
	targets []benchTarget
}

// benchReportRow is one row of a report: tokens/s of each side (0 where the
// report has none), and the ceilings of the matrix-product table.
type benchReportRow struct {
	label                                string // as benchRow.label writes it
	threads                              int
	wmTrain, peerTrain, wmEval, peerEval float64
	trainCeiling, evalCeiling            float64 // tokens/s; 0 when unknown
}

// benchTarget is one bullet of a report's "Performance targets" whose
// verdict is met or not per row: its name and the labels of the rows that
// meet it.
type benchTarget struct {
	name   string
	counts string // "16 of 28"
	met    map[string]bool
}

// benchTableStart and benchCeilingStart begin the header lines of the
// table of rows and of the ceiling table in every version of the report;
// the columns after them are found by name, so that reports written before
// a column was added (wm shards, the peer's threads) are read too.
const (
	benchTableStart   = "| pattern | d_model | seq_len | batch | threads |"
	benchCeilingStart = "| row | BLAS GFLOP/s |"
)

// parseBenchReport reads a report written by wm bench --out. Errors name
// the file and line of what could not be read.
func parseBenchReport(path, text string) (benchReport, error) {
	rep := benchReport{path: path, rates: map[int]float64{}}
	lines := strings.Split(text, "\n")
	if strings.TrimSpace(lines[0]) != "# wm bench" {
		return rep, errors.Errorf("%s: not a report of wm bench --out (its first line is not \"# wm bench\")", path)
	}
	for _, l := range lines[1:] {
		if l = strings.TrimSpace(l); l != "" {
			rep.machine = l
			break
		}
	}
	byLabel := map[string]int{}
	var table string      // benchTableStart, benchCeilingStart or ""
	var cols benchColumns // the current table's columns
	for n, line := range lines {
		where := fmt.Sprintf("%s:%d", path, n+1)
		switch {
		case strings.HasPrefix(line, benchTableStart), strings.HasPrefix(line, benchCeilingStart):
			table, cols = benchTableStart, newBenchColumns(line)
			if strings.HasPrefix(line, benchCeilingStart) {
				table = benchCeilingStart
			}
			continue
		case !strings.HasPrefix(line, "|"):
			table = ""
		case strings.HasPrefix(line, "| ---"):
			continue
		}
		switch {
		case table == benchTableStart:
			r, err := parseBenchTableRow(line, cols)
			if err != nil {
				return rep, errors.Wrap(err, where)
			}
			if _, dup := byLabel[r.label]; dup {
				return rep, errors.Errorf("%s: row %s appears twice", where, r.label)
			}
			byLabel[r.label] = len(rep.rows)
			rep.rows = append(rep.rows, r)
		case table == benchCeilingStart:
			if err := rep.readCeilingRow(line, cols, byLabel); err != nil {
				return rep, errors.Wrap(err, where)
			}
		case strings.HasPrefix(line, "- **") && strings.Contains(line, ":** met in "):
			rep.targets = append(rep.targets, parseBenchTarget(line, rep.rows))
		}
	}
	if len(rep.rows) == 0 {
		return rep, errors.Errorf("%s: no table of rows (a line beginning %q)", path, benchTableStart)
	}
	return rep, nil
}

// benchColumns are a table's columns: how many, and where each name is
// first.
type benchColumns struct {
	n     int
	index map[string]int
}

func newBenchColumns(header string) benchColumns {
	names := tableCells(header)
	c := benchColumns{n: len(names), index: map[string]int{}}
	for i, name := range names {
		if _, seen := c.index[name]; !seen {
			c.index[name] = i
		}
	}
	return c
}

// cellsByName are a table line's cells for the named columns of cols, or
// an error naming the first column the table lacks or the line misses.
func cellsByName(line string, cols benchColumns, names ...string) ([]string, error) {
	c := tableCells(line)
	if len(c) != cols.n {
		return nil, errors.Errorf("a row of %d cells under a header of %d: %q", len(c), cols.n, line)
	}
	out := make([]string, len(names))
	for i, name := range names {
		j, ok := cols.index[name]
		if !ok {
			return nil, errors.Errorf("the table has no column %q", name)
		}
		out[i] = c[j]
	}
	return out, nil
}

// parseBenchTableRow reads one row of the table that benchRow.markdown
// writes, by its columns' names.
func parseBenchTableRow(line string, cols benchColumns) (benchReportRow, error) {
	c, err := cellsByName(line, cols, "pattern", "d_model", "seq_len", "batch", "threads",
		"wm train tok/s", "peer train tok/s", "wm eval tok/s", "peer eval tok/s")
	if err != nil {
		return benchReportRow{}, err
	}
	var ints [4]int
	for i := range ints {
		v, err := strconv.Atoi(c[1+i])
		if err != nil {
			return benchReportRow{}, errors.Errorf("%q is not a whole number, in %q", c[1+i], line)
		}
		ints[i] = v
	}
	r := benchReportRow{label: fmt.Sprintf("%s d%d t%d b%d ×%d", c[0], ints[0], ints[1], ints[2], ints[3]), threads: ints[3]}
	var errs [4]error
	r.wmTrain, errs[0] = cellNumber(c[5])
	r.peerTrain, errs[1] = cellNumber(c[6])
	r.wmEval, errs[2] = cellNumber(c[7])
	r.peerEval, errs[3] = cellNumber(c[8])
	if err := firstErr(errs[:]...); err != nil {
		return r, errors.Wrapf(err, "row %s", r.label)
	}
	return r, nil
}

// readCeilingRow reads one row of the ceiling table into its row of the
// table of rows: the BLAS's rate at the row's threads, and the ceilings.
func (rep *benchReport) readCeilingRow(line string, cols benchColumns, byLabel map[string]int) error {
	c, err := cellsByName(line, cols, "row", "BLAS GFLOP/s", "train ceiling tok/s", "eval ceiling tok/s")
	if err != nil {
		return err
	}
	i, ok := byLabel[c[0]]
	if !ok {
		return errors.Errorf("a ceiling row that is not one of the table's rows: %q", line)
	}
	rate, err1 := cellNumber(c[1])
	tc, err2 := cellNumber(c[2])
	ec, err3 := cellNumber(c[3])
	if err := firstErr(err1, err2, err3); err != nil {
		return errors.Wrapf(err, "ceiling row %s", c[0])
	}
	rep.rows[i].trainCeiling, rep.rows[i].evalCeiling = tc, ec
	rep.rates[rep.rows[i].threads] = rate
	return nil
}

// parseBenchTarget reads a target's bullet: its name, "N of M" and which
// of rows meet it: those it lists under "Met:" where it has that list
// (the speed and share targets), else every row it does not list under
// "Not met:" (the memory target).
func parseBenchTarget(line string, rows []benchReportRow) benchTarget {
	name, rest, _ := strings.Cut(strings.TrimPrefix(line, "- **"), ":** met in ")
	counts, _, _ := strings.Cut(rest, " rows")
	t := benchTarget{name: name, counts: counts, met: map[string]bool{}}
	before, notMet, _ := strings.Cut(rest, "Not met: ")
	_, met, listsMet := strings.Cut(before, "Met: ")
	for _, r := range rows {
		if listsMet {
			t.met[r.label] = strings.Contains(met, r.label+" ")
		} else {
			t.met[r.label] = !strings.Contains(notMet, r.label+" ")
		}
	}
	return t
}

// tableCells are a Markdown table line's cells, trimmed.
func tableCells(line string) []string {
	c := strings.Split(strings.Trim(strings.TrimSpace(line), "|"), "|")
	for i := range c {
		c[i] = strings.TrimSpace(c[i])
	}
	return c
}

// cellNumber is a number cell of a report: "—" (none) is 0.
func cellNumber(s string) (float64, error) {
	if s == "—" {
		return 0, nil
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return 0, errors.Errorf("%q is not a number", s)
	}
	return v, nil
}

func firstErr(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// benchDiff writes the comparison of two reports as Markdown.
func benchDiff(before, after benchReport) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# wm bench-diff\n\nBefore: %s: %s\n\nAfter: %s: %s\n\n", before.path, before.machine, after.path, after.machine)
	b.WriteString("| | before | after |\n| --- | ---: | ---: |\n")
	for _, threads := range sortedKeys(before.rates, after.rates) {
		fmt.Fprintf(&b, "| BLAS GFLOP/s, %s | %s | %s |\n", plural(threads, "thread"), num(before.rates[threads]), num(after.rates[threads]))
	}
	afterTargets := map[string]benchTarget{}
	for _, t := range after.targets {
		afterTargets[t.name] = t
	}
	var changes []string
	common := 0
	for _, t := range before.targets {
		a, ok := afterTargets[t.name]
		if !ok {
			continue
		}
		common++
		fmt.Fprintf(&b, "| %s | %s | %s |\n", t.name, t.counts, a.counts)
		lost, gained := metChanges(before.rows, t, after.rows, a)
		if len(lost)+len(gained) > 0 {
			changes = append(changes, fmt.Sprintf("- **%s:** no longer met: %s; newly met: %s.", t.name, listOrNone(lost), listOrNone(gained)))
		}
	}
	switch {
	case common == 0:
		b.WriteString("\nNo performance target is reported in both runs.\n")
	case len(changes) == 0:
		b.WriteString("\nEvery target reported in both runs is met by the same rows in both.\n")
	default:
		b.WriteString("\nRows whose verdict changed:\n\n" + strings.Join(changes, "\n") + "\n")
	}
	b.WriteString("\nEach row, before → after (tokens/s with the change in percent; share: wm ÷ the matrix-product ceiling):\n\n")
	b.WriteString("| row | wm train tok/s | peer train tok/s | train ratio | train share | wm eval tok/s | peer eval tok/s | eval ratio | eval share |\n")
	b.WriteString("| --- |" + strings.Repeat(" ---: |", 8) + "\n")
	afterRows := map[string]benchReportRow{}
	for _, r := range after.rows {
		afterRows[r.label] = r
	}
	var onlyBefore []string
	for _, x := range before.rows {
		y, ok := afterRows[x.label]
		if !ok {
			onlyBefore = append(onlyBefore, x.label)
			continue
		}
		delete(afterRows, x.label)
		fmt.Fprintf(&b, "| %s | %s | %s | %s → %s | %s → %s | %s | %s | %s → %s | %s → %s |\n", x.label,
			change(x.wmTrain, y.wmTrain), change(x.peerTrain, y.peerTrain), ratio(x.wmTrain, x.peerTrain), ratio(y.wmTrain, y.peerTrain),
			share(x.wmTrain, x.trainCeiling), share(y.wmTrain, y.trainCeiling),
			change(x.wmEval, y.wmEval), change(x.peerEval, y.peerEval), ratio(x.wmEval, x.peerEval), ratio(y.wmEval, y.peerEval),
			share(x.wmEval, x.evalCeiling), share(y.wmEval, y.evalCeiling))
	}
	var onlyAfter []string
	for _, r := range after.rows {
		if _, left := afterRows[r.label]; left {
			onlyAfter = append(onlyAfter, r.label)
		}
	}
	if len(onlyBefore)+len(onlyAfter) > 0 {
		fmt.Fprintf(&b, "\nRows in one run only: before: %s; after: %s.\n", listOrNone(onlyBefore), listOrNone(onlyAfter))
	}
	return b.String()
}

// metChanges are the rows present in both runs that meet target t before
// and not after (lost), and the other way round (gained), in before's
// order.
func metChanges(beforeRows []benchReportRow, t benchTarget, afterRows []benchReportRow, a benchTarget) (lost, gained []string) {
	inAfter := map[string]bool{}
	for _, r := range afterRows {
		inAfter[r.label] = true
	}
	for _, r := range beforeRows {
		switch {
		case !inAfter[r.label]:
		case t.met[r.label] && !a.met[r.label]:
			lost = append(lost, r.label)
		case !t.met[r.label] && a.met[r.label]:
			gained = append(gained, r.label)
		}
	}
	return lost, gained
}

// change is "a → b (+x.x%)", or with "—" for a side without a figure.
func change(a, b float64) string {
	if a == 0 || b == 0 {
		return num(a) + " → " + num(b)
	}
	return fmt.Sprintf("%s → %s (%+.1f%%)", num(a), num(b), 100*(b/a-1))
}

// share is v ÷ ceiling to three places, "—" when the ceiling is unknown.
func share(v, ceiling float64) string {
	if ceiling == 0 || v == 0 {
		return "—"
	}
	return strconv.FormatFloat(v/ceiling, 'f', 3, 64)
}

// plural is "1 thread", "2 threads".
func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

func listOrNone(l []string) string {
	if len(l) == 0 {
		return "none"
	}
	return strings.Join(l, ", ")
}

// sortedKeys are the keys of both maps, ascending.
func sortedKeys(a, b map[int]float64) []int {
	keys := slices.Collect(maps.Keys(a))
	for k := range b {
		if _, ok := a[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	return keys
}
