package experiments

import (
	"encoding/csv"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/pkg/errors"

	"github.com/wonderful-matrices/wonderful-matrices-go/experiments/data"
	"github.com/wonderful-matrices/wonderful-matrices-go/experiments/train"
	"github.com/wonderful-matrices/wonderful-matrices-go/internal/atomicfile"
)

// Report is what WriteReport wrote.
type Report struct {
	Dir   string
	Table string // table.md
	CSV   string // table.csv
	// SeedsCSV is seeds.csv: every arm's value of every column at each
	// seed, so that anyone can recompute an interval or a paired test.
	SeedsCSV string
	Plots    []string
	Markdown string // the table, as written to table.md
	// Missing lists arm/seed folders with no result (not run, or failed).
	Missing []string
}

// SeedResult is one finished arm at one seed.
type SeedResult struct {
	Seed    int
	Result  train.Result
	Metrics []train.Metrics
}

// ArmResults are an arm's results over its seeds.
type ArmResults struct {
	Arm   Arm
	Seeds []SeedResult
	// LR is the arm's learning-rate search, when it had one (its seeds are
	// those at the chosen rate).
	LR *LRChoice
}

// Collect reads the saved results of def at preset under out; arms with
// no finished seed have no Seeds.
func Collect(out string, def *Definition, preset string) ([]ArmResults, []string, error) {
	arms, err := def.Expand(preset)
	if err != nil {
		return nil, nil, err
	}
	var all []ArmResults
	var missing []string
	for _, a := range arms {
		ar := ArmResults{Arm: a}
		armDir := ArmDir(out, def.Name, preset, a.Name)
		seedsDir := armDir
		c, searched, err := ReadLRChoice(armDir)
		if err != nil {
			return nil, nil, err
		}
		if searched {
			ar.LR = &c
			ar.Arm.Train.LR = c.Chosen
			seedsDir = filepath.Join(armDir, lrDirName(c.Chosen))
		}
		dirs, _ := filepath.Glob(filepath.Join(seedsDir, "seed-*"))
		sort.Slice(dirs, func(i, j int) bool { return seedNumber(dirs[i]) < seedNumber(dirs[j]) })
		for _, dir := range dirs {
			s := seedNumber(dir)
			if s < 0 {
				continue
			}
			res, err := train.ReadResult(dir)
			if err != nil {
				missing = append(missing, dir)
				continue
			}
			met, _ := train.ReadMetrics(dir)
			ar.Seeds = append(ar.Seeds, SeedResult{Seed: s, Result: res, Metrics: met})
		}
		if len(dirs) == 0 {
			missing = append(missing, seedsDir)
		}
		all = append(all, ar)
	}
	return all, missing, nil
}

// seedNumber is S of a folder seed-S, -1 for another name.
func seedNumber(dir string) int {
	s, err := strconv.Atoi(strings.TrimPrefix(filepath.Base(dir), "seed-"))
	if err != nil || s < 0 {
		return -1
	}
	return s
}

// value is the measure key of one result: a result field, a Measure or a
// value of the arm.
func value(a Arm, r train.Result, key string) (float64, bool) {
	switch key {
	case "val_ppl":
		return r.ValPPL, r.Steps > 0
	case "val_loss":
		return r.ValLoss, r.Steps > 0
	case "test_ppl":
		return r.TestPPL, r.Steps > 0 && r.TestPPL > 0
	case "test_loss":
		return r.TestLoss, r.Steps > 0 && r.TestPPL > 0
	case "train_loss":
		return r.TrainLoss, r.Steps > 0
	case "tokens_per_s":
		return r.TokensPerS, r.Steps > 0
	case "steps_per_s":
		tok := float64(a.Train.Batch * a.Train.SeqLen)
		return r.TokensPerS / tok, r.Steps > 0 && tok > 0
	case "params":
		return float64(r.Params), r.Params > 0
	case "active_params":
		return float64(r.ActiveParams), r.Params > 0
	}
	if v, ok := r.Measures[key]; ok {
		return v, true
	}
	v, ok := a.Values[key]
	return v, ok
}

// lrNote says how the learning rates of the table were chosen, "" when no
// arm searched.
func lrNote(def *Definition, all []ArmResults) string {
	var searched, edge []string
	var grid []float64
	for _, ar := range all {
		if ar.LR == nil {
			continue
		}
		searched = append(searched, ar.Arm.Name)
		grid = ar.LR.Grid
		if ar.LR.Edge {
			edge = append(edge, ar.Arm.Name)
		}
	}
	if len(searched) == 0 {
		return ""
	}
	dir := "lowest"
	if def.Select.Max {
		dir = "highest"
	}
	s := fmt.Sprintf("lr: each arm trained once (seed 0) at each rate of the grid %v, extended by up to %d steps past an edge where the best sat, and its seeds ran at the rate with the %s validation %s (lr-choice.json in each arm's folder has every trial). The reported measures are on the test split, which no choice saw.", grid, MaxLRExtensions, dir, def.Select.key())
	if len(edge) > 0 {
		s += fmt.Sprintf(" (edge) marks a rate still at the edge of the rates tried, so a better one may lie beyond: %s.", strings.Join(edge, ", "))
	}
	return s
}

// anyTrains says whether an arm of the table trains (has a learning rate).
func anyTrains(all []ArmResults) bool {
	for _, ar := range all {
		if ar.Arm.trains() {
			return true
		}
	}
	return false
}

// lrCell is the arm's learning rate: the search's choice (flagged at the
// edge of the rates tried), or the arm's own, "—" for an arm that does not
// train.
func (ar ArmResults) lrCell() string {
	switch {
	case ar.LR != nil:
		return ar.LR.Describe()
	case ar.Arm.trains():
		return strconv.FormatFloat(ar.Arm.Train.LR, 'g', 3, 64)
	}
	return "—"
}

// labelCells are the arm's name and its values of the label keys.
func (ar ArmResults) labelCells(keys []string) []string {
	row := []string{ar.Arm.Name}
	for _, k := range keys {
		row = append(row, ar.Arm.Label(k))
	}
	return row
}

// paper is the paper's number for key, NaN when it gives none.
func (a Arm) paper(key string) float64 {
	if v, ok := a.Paper[key]; ok {
		return v
	}
	return math.NaN()
}

// Stat is the mean and sample standard deviation of a measure over seeds.
type Stat struct {
	Mean, SD float64
	N        int
}

// stat aggregates key over an arm's seeds.
func (ar ArmResults) stat(key string) Stat {
	var vs []float64
	for _, s := range ar.Seeds {
		if v, ok := value(ar.Arm, s.Result, key); ok {
			vs = append(vs, v)
		}
	}
	if len(vs) == 0 {
		if v, ok := ar.Arm.Values[key]; ok {
			return Stat{Mean: v, N: 1}
		}
		return Stat{Mean: math.NaN()}
	}
	return meanSD(vs)
}

// meanSD is the mean and the sample standard deviation of vs (0 for one
// value, NaN mean for none).
func meanSD(vs []float64) Stat {
	if len(vs) == 0 {
		return Stat{Mean: math.NaN()}
	}
	var m float64
	for _, v := range vs {
		m += v
	}
	m /= float64(len(vs))
	var ss float64
	for _, v := range vs {
		ss += (v - m) * (v - m)
	}
	sd := 0.0
	if len(vs) > 1 {
		sd = math.Sqrt(ss / float64(len(vs)-1))
	}
	return Stat{Mean: m, SD: sd, N: len(vs)}
}

// format prints v with digits after the point (integers grouped), "inf"
// for infinity and "—" for none.
func format(v float64, digits int) string {
	switch {
	case math.IsNaN(v):
		return "—"
	case math.IsInf(v, 1):
		return "inf"
	case digits == 0 && math.Abs(v) >= 1e4:
		return strconv.FormatFloat(v, 'f', 0, 64)
	}
	return strconv.FormatFloat(v, 'f', digits, 64)
}

func (s Stat) format(digits int) string {
	// A count that does not vary over seeds (parameters) needs no ± 0.
	if s.N > 1 && !(digits == 0 && s.SD == 0) {
		return format(s.Mean, digits) + " ± " + format(s.SD, digits)
	}
	return format(s.Mean, digits)
}

// WriteReport rebuilds table.md, table.csv and the plots of def at preset
// from the results saved under out; it trains nothing.
func WriteReport(out string, def *Definition, preset string) (*Report, error) {
	all, missing, err := Collect(out, def, preset)
	if err != nil {
		return nil, err
	}
	dir := PresetDir(out, def.Name, preset)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, errors.Wrap(err, "report")
	}
	rep := &Report{Dir: dir, Table: filepath.Join(dir, "table.md"), CSV: filepath.Join(dir, "table.csv"), SeedsCSV: filepath.Join(dir, "seeds.csv"), Missing: missing}
	head, rows := tableRows(def, preset, all)
	rep.Markdown = markdown(def, preset, head, rows, missing, all)
	if err := atomicfile.WriteBytes(rep.Table, []byte(rep.Markdown)); err != nil {
		return nil, err
	}
	if err := atomicfile.Write(rep.CSV, func(w io.Writer) error { return writeCSV(w, def, preset, all) }); err != nil {
		return nil, err
	}
	if err := atomicfile.Write(rep.SeedsCSV, func(w io.Writer) error { return writeSeedsCSV(w, def, preset, all) }); err != nil {
		return nil, err
	}
	for _, p := range def.Plots {
		paths, err := drawPlot(filepath.Join(dir, "plots"), p, all)
		if err != nil {
			return nil, errors.Wrapf(err, "plot %s", p.File)
		}
		rep.Plots = append(rep.Plots, paths...)
	}
	return rep, nil
}

// labelKeys are the label keys of the arms, in first-seen order.
func labelKeys(all []ArmResults) []string {
	var keys []string
	seen := map[string]bool{}
	for _, ar := range all {
		for _, l := range ar.Arm.Labels {
			if !seen[l.Key] {
				seen[l.Key] = true
				keys = append(keys, l.Key)
			}
		}
	}
	return keys
}

// tableRows are the Markdown table's header and cells: arm, labels, then
// for each column the measured value and, where the paper has one, the
// paper's, then the number of seeds.
func tableRows(def *Definition, preset string, all []ArmResults) ([]string, [][]string) {
	keys := labelKeys(all)
	cols := def.ColumnsAt(preset)
	head := append([]string{"arm"}, keys...)
	lr := anyTrains(all)
	if lr {
		head = append(head, "lr")
	}
	for _, c := range cols {
		if c.Key != "" {
			head = append(head, c.Title)
		}
		if c.Paper != "" {
			head = append(head, "paper "+c.Title)
		}
	}
	head = append(head, "seeds")
	var rows [][]string
	for _, ar := range all {
		row := ar.labelCells(keys)
		if lr {
			row = append(row, ar.lrCell())
		}
		for _, c := range cols {
			if c.Key != "" {
				row = append(row, ar.stat(c.Key).format(c.Digits))
			}
			if c.Paper != "" {
				row = append(row, format(ar.Arm.paper(c.Paper), c.Digits))
			}
		}
		rows = append(rows, append(row, strconv.Itoa(len(ar.Seeds))))
	}
	return head, rows
}

func markdown(def *Definition, preset string, head []string, rows [][]string, missing []string, all []ArmResults) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# %s (v%d) at %s\n\n%s. Reproduces %s.\n\n", def.Name, def.Version, preset, def.Title, def.Reference)
	b.WriteString("| " + strings.Join(head, " | ") + " |\n|")
	for range head {
		b.WriteString(" --- |")
	}
	b.WriteString("\n")
	for _, r := range rows {
		b.WriteString("| " + strings.Join(r, " | ") + " |\n")
	}
	b.WriteString("\nMeasured values are the mean over seeds (± the sample standard deviation with more than one seed); — is no value. Per-seed values are in seeds.csv beside this table.\n")
	if note := lrNote(def, all); note != "" {
		b.WriteString("\n" + note + "\n")
	}
	if ppl, ok := kjvUnigram(all); ok {
		fmt.Fprintf(&b, "\nBaseline: a byte unigram model of the KJV training books has test perplexity %.2f.\n", ppl)
	}
	for _, n := range def.Notes {
		b.WriteString("\n- " + n)
	}
	if len(def.Notes) > 0 {
		b.WriteString("\n")
	}
	if len(missing) > 0 {
		b.WriteString("\nNo result yet (not run, unfinished or failed):\n")
		for _, m := range missing {
			b.WriteString("\n- " + m)
		}
		b.WriteString("\n")
	}
	return b.String()
}

// writeCSV writes one row per arm: labels, then per column mean, sd and
// paper, then the seed count.
func writeCSV(w io.Writer, def *Definition, preset string, all []ArmResults) error {
	cw := csv.NewWriter(w)
	keys := labelKeys(all)
	cols := def.ColumnsAt(preset)
	head := append(append([]string{"arm"}, keys...), "lr", "lr_at_edge")
	for _, c := range cols {
		if c.Key != "" {
			head = append(head, c.Key, c.Key+"_sd")
		}
		if c.Paper != "" {
			head = append(head, "paper_"+c.Paper)
		}
	}
	if err := cw.Write(append(head, "seeds")); err != nil {
		return err
	}
	for _, ar := range all {
		row := append(ar.labelCells(keys), ar.lrFields()...)
		for _, c := range cols {
			if c.Key != "" {
				s := ar.stat(c.Key)
				row = append(row, num(s.Mean), num(s.SD))
			}
			if c.Paper != "" {
				row = append(row, num(ar.Arm.paper(c.Paper)))
			}
		}
		if err := cw.Write(append(row, strconv.Itoa(len(ar.Seeds)))); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

// num is a CSV number: shortest exact form, "" for none.
func num(v float64) string {
	if math.IsNaN(v) {
		return ""
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}

// lrFields are an arm's learning rate and whether the search left it at
// the edge of the rates tried ("" where the arm does not train).
func (ar ArmResults) lrFields() []string {
	switch {
	case ar.LR != nil:
		return []string{num(ar.LR.Chosen), strconv.FormatBool(ar.LR.Edge)}
	case ar.Arm.trains():
		return []string{num(ar.Arm.Train.LR), ""}
	}
	return []string{"", ""}
}

// writeSeedsCSV writes one row per arm and seed: labels, learning rate,
// seed, then the value of every measured column (and the validation
// measures the choices read).
func writeSeedsCSV(w io.Writer, def *Definition, preset string, all []ArmResults) error {
	cw := csv.NewWriter(w)
	keys := labelKeys(all)
	var measures []string
	seen := map[string]bool{}
	for _, c := range def.ColumnsAt(preset) {
		if c.Key != "" && !seen[c.Key] {
			seen[c.Key] = true
			measures = append(measures, c.Key)
		}
	}
	for _, k := range []string{"val_loss", "val_ppl", def.Select.key(), def.primary()} {
		if !seen[k] {
			seen[k] = true
			measures = append(measures, k)
		}
	}
	head := append(append(append([]string{"arm"}, keys...), "lr", "lr_at_edge", "seed"), measures...)
	if err := cw.Write(head); err != nil {
		return err
	}
	for _, ar := range all {
		for _, s := range ar.Seeds {
			row := append(append(ar.labelCells(keys), ar.lrFields()...), strconv.Itoa(s.Seed))
			for _, k := range measures {
				v, ok := value(ar.Arm, s.Result, k)
				if !ok {
					v = math.NaN()
				}
				row = append(row, num(v))
			}
			if err := cw.Write(row); err != nil {
				return err
			}
		}
	}
	cw.Flush()
	return cw.Error()
}

// kjvUnigram is the byte unigram perplexity of the KJV test books,
// for experiments whose arms train on KJV.
func kjvUnigram(all []ArmResults) (float64, bool) {
	uses := false
	for _, ar := range all {
		switch t := ar.Arm.Task.(type) {
		case LMTask:
			uses = uses || t == TaskLM
		case ExtrapolationTask:
			uses = true
		}
	}
	if !uses {
		return 0, false
	}
	tr, _, te, err := data.KJVSplit()
	if err != nil {
		return 0, false
	}
	tok := data.ByteTokenizer{}
	return data.UnigramPPL(data.Encode(tok, []string{tr}), data.Encode(tok, []string{te}), data.ByteVocab), true
}
