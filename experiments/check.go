package experiments

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/pkg/errors"
)

// plotKindNames names the plot kinds, for errors.
var plotKindNames = map[PlotKind]string{PlotCurves: "PlotCurves", PlotBars: "PlotBars", PlotMeasureLines: "PlotMeasureLines", PlotLabelLines: "PlotLabelLines", PlotGroupedBars: "PlotGroupedBars"}

// keySet is the measures, measure prefixes, paper keys and label keys the
// arms of a definition have.
type keySet struct {
	measures, prefixes, paper, labels, arms map[string]bool
	// trains is set when an arm trains (a rate search and the primary
	// measure apply).
	trains bool
}

func (k keySet) measure(key string) bool {
	if k.measures[key] {
		return true
	}
	p, n, ok := strings.Cut(key, "@")
	if _, err := strconv.Atoi(n); ok && err == nil {
		return k.prefixes[p]
	}
	return false
}

func list(m map[string]bool, suffix string) string {
	var out []string
	for k := range m {
		out = append(out, k+suffix)
	}
	sort.Strings(out)
	if len(out) == 0 {
		return "(none)"
	}
	return strings.Join(out, ", ")
}

func (k keySet) measureList() string {
	s := list(k.measures, "")
	if len(k.prefixes) > 0 {
		s += ", " + list(k.prefixes, "@N")
	}
	return s
}

// Check verifies that every column and plot of d names something its arms
// have: a measure of their task or a value (Column.Key, Plot.Key, Plot.Y),
// a paper number (Column.Paper, Plot.PaperKey), a measure prefix
// (Plot.Prefix), a label (Plot.X, Series, Panel), an arm (Plot.Reference),
// and that every plot kind is known. The arms are those of the tiny preset; the columns are checked
// at every preset. The error names the experiment, the column or plot, and
// the valid keys. Register calls it.
func (d *Definition) Check() error {
	if d.Name == "" || d.Arms == nil {
		return errors.New("experiments: a definition needs a Name and an Arms function")
	}
	arms, err := d.Arms(Tiny)
	if err != nil {
		return errors.Wrapf(err, "experiment %s at %s", d.Name, Tiny)
	}
	k, err := d.keys(arms)
	if err != nil {
		return err
	}
	if err := d.checkLearningRates(k); err != nil {
		return err
	}
	if err := d.checkColumns(k); err != nil {
		return err
	}
	for i, p := range d.Plots {
		if err := k.checkPlot(p, fmt.Sprintf("experiment %s: plot %d (%q)", d.Name, i+1, p.File)); err != nil {
			return err
		}
	}
	return nil
}

// keys collects what the arms have: measures of their tasks and values,
// measure prefixes, paper keys, labels, names.
func (d *Definition) keys(arms []Arm) (keySet, error) {
	k := keySet{measures: map[string]bool{}, prefixes: map[string]bool{}, paper: map[string]bool{}, labels: map[string]bool{}, arms: map[string]bool{}}
	add := func(set map[string]bool, keys ...string) {
		for _, key := range keys {
			set[key] = true
		}
	}
	for _, a := range arms {
		if a.Task == nil {
			return k, errors.Errorf("experiment %s: arm %s has no Task (TaskLM, MQARTask{…}, ExtrapolationTask{…}, ThroughputTask{…}, TaskParams, or one of your own)", d.Name, a.Name)
		}
		k.arms[a.Name] = true
		k.trains = k.trains || a.trains()
		keys, prefixes := a.Task.Measures()
		add(k.measures, keys...)
		add(k.prefixes, prefixes...)
		add(k.measures, sortedKeys(a.Values)...)
		add(k.paper, sortedKeys(a.Paper)...)
		for _, l := range a.Labels {
			k.labels[l.Key] = true
		}
	}
	return k, nil
}

// checkLearningRates checks the grids, and that the selection and primary
// measures are measures of training arms.
func (d *Definition) checkLearningRates(k keySet) error {
	for p, g := range d.LRGrid {
		if err := CheckPreset(p); err != nil {
			return errors.Wrapf(err, "experiment %s: LRGrid", d.Name)
		}
		if _, err := checkLRGrid(g); err != nil {
			return errors.Wrapf(err, "experiment %s: LRGrid at %s", d.Name, p)
		}
	}
	for _, m := range []struct{ field, key string }{{"Select.Key", d.Select.key()}, {"Primary", d.primary()}} {
		if k.trains && !k.measure(m.key) {
			return errors.Errorf("experiment %s: %s %q is no measure of its arms; the measures are: %s", d.Name, m.field, m.key, k.measureList())
		}
	}
	return nil
}

// checkColumns checks every preset's columns.
func (d *Definition) checkColumns(k keySet) error {
	for _, preset := range Presets {
		for i, c := range d.ColumnsAt(preset) {
			where := fmt.Sprintf("experiment %s: column %d (%q)", d.Name, i+1, c.Title)
			switch {
			case c.Key == "" && c.Paper == "":
				return errors.Errorf("%s: has neither Key nor Paper", where)
			case c.Key != "" && !k.measure(c.Key):
				return errors.Errorf("%s: Key %q is no measure of its arms; the measures are: %s", where, c.Key, k.measureList())
			case c.Paper != "" && preset == Tiny && !k.paper[c.Paper]:
				return errors.Errorf("%s: Paper %q is no key of any arm's Paper; the keys are: %s", where, c.Paper, list(k.paper, ""))
			}
		}
	}
	return nil
}

// labelKeys checks that every non-empty label key (named by its field) is a
// label of the arms.
func (k keySet) labelKeys(where string, names ...[2]string) error {
	for _, l := range names {
		if l[1] != "" && !k.labels[l[1]] {
			return errors.Errorf("%s: %s %q is no label of its arms; the labels are: %s", where, l[0], l[1], list(k.labels, ""))
		}
	}
	return nil
}

// checkPlot checks one plot against what the arms have.
func (k keySet) checkPlot(p Plot, where string) error {
	if p.File == "" {
		return errors.Errorf("%s: File is empty", where)
	}
	switch p.Kind {
	case PlotCurves:
		return k.labelKeys(where, [2]string{"Series", p.Series}, [2]string{"Panel", p.Panel})
	case PlotBars, PlotGroupedBars:
		return k.checkBars(p, where)
	case PlotMeasureLines:
		if !k.prefixes[p.Prefix] {
			return errors.Errorf("%s: Prefix %q is no measure prefix of its arms; the prefixes are: %s", where, p.Prefix, list(k.prefixes, ""))
		}
		return nil
	case PlotLabelLines:
		if !k.measure(p.Y) {
			return errors.Errorf("%s: Y %q is no measure of its arms; the measures are: %s", where, p.Y, k.measureList())
		}
		if p.X == "" || p.Series == "" {
			return errors.Errorf("%s: label lines need the label keys X and Series", where)
		}
		return k.labelKeys(where, [2]string{"X", p.X}, [2]string{"Series", p.Series}, [2]string{"Panel", p.Panel})
	}
	var kinds []string
	for _, n := range plotKindNames {
		kinds = append(kinds, n)
	}
	sort.Strings(kinds)
	return errors.Errorf("%s: Kind %d is not a plot kind; the kinds are: %s", where, p.Kind, strings.Join(kinds, ", "))
}

// checkBars checks a bar plot's measure, paper key, reference arm and, for
// grouped bars, its label keys.
func (k keySet) checkBars(p Plot, where string) error {
	switch {
	case !k.measure(p.Key):
		return errors.Errorf("%s: Key %q is no measure of its arms; the measures are: %s", where, p.Key, k.measureList())
	case p.PaperKey != "" && !k.paper[p.PaperKey]:
		return errors.Errorf("%s: PaperKey %q is no key of any arm's Paper; the keys are: %s", where, p.PaperKey, list(k.paper, ""))
	case p.Reference != "" && !k.arms[p.Reference]:
		return errors.Errorf("%s: Reference %q is no arm; the arms are: %s", where, p.Reference, list(k.arms, ""))
	case p.Kind != PlotGroupedBars:
		return nil
	case p.X == "" || p.Series == "":
		return errors.Errorf("%s: grouped bars need the label keys X and Series", where)
	}
	return k.labelKeys(where, [2]string{"X", p.X}, [2]string{"Series", p.Series})
}
