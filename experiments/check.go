package experiments

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/pkg/errors"
)

// resultKeys are the measures every training task's result has.
var resultKeys = []string{"val_ppl", "val_loss", "test_ppl", "test_loss", "train_loss", "tokens_per_s", "steps_per_s", "params", "active_params"}

// taskMeasures are the keys a task's result has: fixed names, and
// prefixes of the measures "PREFIX@N" at evaluation lengths N.
func taskMeasures(t Task) (keys, prefixes []string) {
	switch t {
	case TaskLM:
		return resultKeys, nil
	case TaskMQAR:
		return append(append([]string{}, resultKeys...), "accuracy", "val_accuracy"), nil
	case TaskExtrapolation:
		return resultKeys, []string{"ppl", "passkey"}
	case TaskThroughput:
		return []string{"params", "active_params", "mixer_params"}, []string{"train", "eval"}
	case TaskParams:
		return []string{"params", "active_params", "mixer_params"}, nil
	}
	return nil, nil
}

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
	k := keySet{measures: map[string]bool{}, prefixes: map[string]bool{}, paper: map[string]bool{}, labels: map[string]bool{}, arms: map[string]bool{}}
	for _, a := range arms {
		k.arms[a.Name] = true
		k.trains = k.trains || a.trains()
		keys, prefixes := taskMeasures(a.Task)
		if keys == nil {
			return errors.Errorf("experiment %s: arm %s has task %q; the tasks are: %s, %s, %s, %s, %s", d.Name, a.Name, a.Task, TaskLM, TaskMQAR, TaskExtrapolation, TaskThroughput, TaskParams)
		}
		for _, m := range keys {
			k.measures[m] = true
		}
		for _, p := range prefixes {
			k.prefixes[p] = true
		}
		for m := range a.Values {
			k.measures[m] = true
		}
		for p := range a.Paper {
			k.paper[p] = true
		}
		for _, l := range a.Labels {
			k.labels[l.Key] = true
		}
	}
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
	for _, preset := range Presets {
		for i, c := range d.ColumnsAt(preset) {
			where := fmt.Sprintf("experiment %s: column %d (%q)", d.Name, i+1, c.Title)
			if c.Key == "" && c.Paper == "" {
				return errors.Errorf("%s: has neither Key nor Paper", where)
			}
			if c.Key != "" && !k.measure(c.Key) {
				return errors.Errorf("%s: Key %q is no measure of its arms; the measures are: %s", where, c.Key, k.measureList())
			}
			if c.Paper != "" && preset == Tiny && !k.paper[c.Paper] {
				return errors.Errorf("%s: Paper %q is no key of any arm's Paper; the keys are: %s", where, c.Paper, list(k.paper, ""))
			}
		}
	}
	for i, p := range d.Plots {
		where := fmt.Sprintf("experiment %s: plot %d (%q)", d.Name, i+1, p.File)
		if p.File == "" {
			return errors.Errorf("%s: File is empty", where)
		}
		labels := func(names ...[2]string) error {
			for _, l := range names {
				if l[1] != "" && !k.labels[l[1]] {
					return errors.Errorf("%s: %s %q is no label of its arms; the labels are: %s", where, l[0], l[1], list(k.labels, ""))
				}
			}
			return nil
		}
		switch p.Kind {
		case PlotCurves:
			if err := labels([2]string{"Series", p.Series}, [2]string{"Panel", p.Panel}); err != nil {
				return err
			}
		case PlotBars, PlotGroupedBars:
			if !k.measure(p.Key) {
				return errors.Errorf("%s: Key %q is no measure of its arms; the measures are: %s", where, p.Key, k.measureList())
			}
			if p.PaperKey != "" && !k.paper[p.PaperKey] {
				return errors.Errorf("%s: PaperKey %q is no key of any arm's Paper; the keys are: %s", where, p.PaperKey, list(k.paper, ""))
			}
			if p.Reference != "" && !k.arms[p.Reference] {
				return errors.Errorf("%s: Reference %q is no arm; the arms are: %s", where, p.Reference, list(k.arms, ""))
			}
			if p.Kind == PlotGroupedBars {
				if p.X == "" || p.Series == "" {
					return errors.Errorf("%s: grouped bars need the label keys X and Series", where)
				}
				if err := labels([2]string{"X", p.X}, [2]string{"Series", p.Series}); err != nil {
					return err
				}
			}
		case PlotMeasureLines:
			if !k.prefixes[p.Prefix] {
				return errors.Errorf("%s: Prefix %q is no measure prefix of its arms; the prefixes are: %s", where, p.Prefix, list(k.prefixes, ""))
			}
		case PlotLabelLines:
			if !k.measure(p.Y) {
				return errors.Errorf("%s: Y %q is no measure of its arms; the measures are: %s", where, p.Y, k.measureList())
			}
			if p.X == "" || p.Series == "" {
				return errors.Errorf("%s: label lines need the label keys X and Series", where)
			}
			if err := labels([2]string{"X", p.X}, [2]string{"Series", p.Series}, [2]string{"Panel", p.Panel}); err != nil {
				return err
			}
		default:
			var kinds []string
			for _, n := range plotKindNames {
				kinds = append(kinds, n)
			}
			sort.Strings(kinds)
			return errors.Errorf("%s: Kind %d is not a plot kind; the kinds are: %s", where, p.Kind, strings.Join(kinds, ", "))
		}
	}
	return nil
}
