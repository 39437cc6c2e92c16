package experiments

import (
	"sort"
	"strings"

	"github.com/pkg/errors"

	"github.com/wonderful-matrices/wonderful-matrices-go/experiments/train"
	"github.com/wonderful-matrices/wonderful-matrices-go/graph"
)

// The presets of SPEC §7: tiny runs a whole table in under a minute (CI),
// small about half an hour a table on a 2-core machine, paper at the
// papers' sizes. medium is small trained on 4× the tokens (4× the steps),
// so that a gap between arms can be read at two training lengths: does it
// close or widen with scale?
const (
	Tiny   = "tiny"
	Small  = "small"
	Medium = "medium"
	Paper  = "paper"
)

// Presets lists the preset names in size order.
var Presets = []string{Tiny, Small, Medium, Paper}

// Label is one grouping key of an arm ("variant" = "rope").
type Label struct {
	Key, Value string
}

// Arm is one configuration of an experiment.
type Arm struct {
	// Name is the arm's folder name, unique within the experiment.
	Name string
	// Labels group the arm in tables and plots, in column order.
	Labels []Label
	// Task is what the runner does with the arm (TaskLM, MQARTask{…}, …,
	// or a task of one's own).
	Task  Task
	Model graph.Config
	// Train is the training config (a TrainingTask's arm).
	Train train.Config
	// Paper holds the paper's numbers for this arm, by column key.
	Paper map[string]float64
	// Values are measures known before running (the CDMoE ratio of the
	// pattern), by column key.
	Values map[string]float64
}

// Label returns the value of the label key, "" when the arm has none.
func (a Arm) Label(key string) string {
	for _, l := range a.Labels {
		if l.Key == key {
			return l.Value
		}
	}
	return ""
}

// Column is a column of an experiment's table: a measured value and,
// when the paper reports one, the paper's.
type Column struct {
	// Title heads the measured column; the paper's is "paper " + Title.
	Title string
	// Key names the measure: a field of the result ("val_ppl",
	// "tokens_per_s", "steps_per_s", "params", "active_params"), a key of
	// its Measures or of Arm.Values; "" for a column of the paper alone.
	Key string
	// Paper is the key into Arm.Paper; "" when the paper has no column.
	Paper string
	// Digits after the decimal point.
	Digits int
}

// PlotKind is a kind of figure the report draws.
type PlotKind int

// The figures. Every figure draws the mean over seeds with ± one sample
// standard deviation as error bars (where an arm has more than one seed),
// and its legend beside the plotting area.
const (
	// PlotCurves draws validation perplexity against step, a line per arm
	// (named by the label Series, or the arm's name), one panel per value
	// of the label Panel (small multiples, "" for one panel).
	PlotCurves PlotKind = iota
	// PlotBars draws one measure per arm beside the paper's. With
	// Reference set, both are ratios to the reference arm's (measured to
	// measured, paper to paper), and only arms with a paper value are
	// drawn: the paper's absolute numbers come from another corpus and
	// scale, so only ratios compare.
	PlotBars
	// PlotMeasureLines draws the measures "Prefix@X" against X, a line per arm.
	PlotMeasureLines
	// PlotLabelLines draws Y against the numeric label X, a line per value
	// of the label Series, one figure per value of the label Panel.
	PlotLabelLines
	// PlotGroupedBars draws the measure Key as grouped bars: a group per
	// value of the label X (e.g. the module set), a bar per value of the
	// label Series (e.g. the SSD variant).
	PlotGroupedBars
)

// Plot is a figure of an experiment's report.
type Plot struct {
	Kind PlotKind
	// File is the base name under plots/ (".png" and ".svg" are added).
	File          string
	Title         string
	XLabel        string
	YLabel        string
	LogX, LogY    bool
	Key, PaperKey string // PlotBars, PlotGroupedBars: the measure; PlotBars: the paper's key
	// Reference is the arm whose values divide the others (PlotBars).
	Reference string
	Prefix    string // PlotMeasureLines
	X, Series string // PlotLabelLines, PlotGroupedBars: label keys; PlotCurves: Series names the lines
	Y         string // PlotLabelLines: the measure
	Panel     string // PlotLabelLines, PlotCurves: label key, "" for one figure
}

// Definition is a named, versioned experiment.
type Definition struct {
	Name    string
	Version int
	// Title is one line for `wm list`.
	Title string
	// Reference names the papers' tables or figures it reproduces.
	Reference string
	// Notes are printed under the table (what the paper's column means,
	// what cannot be reproduced).
	Notes []string
	// Arms expands a preset into the arms; it is called with a known preset.
	Arms    func(preset string) ([]Arm, error)
	Columns []Column
	// PresetColumns, when set, adds columns that depend on the preset (one
	// per sequence length).
	PresetColumns func(preset string) []Column
	Plots         []Plot
	// LRGrid is the learning-rate grid each training arm searches at a
	// preset (none when the preset has no entry): every arm trains at each
	// rate with seed 0, the best on validation (Select) is chosen, and the
	// seeds run at it. `wm run --lr-grid` overrides it.
	LRGrid map[string][]float64
	// Select is the validation measure that chooses the rate (the lowest
	// val_loss when zero).
	Select Selection
	// Primary is the reported measure that the noisy-seed rule and the
	// per-seed values read ("test_ppl" when empty).
	Primary string
}

// primary is the definition's reported measure.
func (d *Definition) primary() string {
	if d.Primary == "" {
		return "test_ppl"
	}
	return d.Primary
}

// ColumnsAt returns the table columns at preset.
func (d *Definition) ColumnsAt(preset string) []Column {
	cols := append([]Column{}, d.Columns...)
	if d.PresetColumns != nil {
		cols = append(cols, d.PresetColumns(preset)...)
	}
	return cols
}

var registry = map[string]*Definition{}

// Register adds a definition. It is called from init, so its errors are
// programming errors found at start-up, and it panics with the message of
// the error: a second definition of the same name, or one that Check
// refuses (a column, plot key or plot kind its arms do not have, with the
// valid ones listed).
func Register(d *Definition) {
	if _, dup := registry[d.Name]; dup {
		panic("experiments: " + d.Name + " registered twice")
	}
	if err := d.Check(); err != nil {
		panic(err.Error())
	}
	registry[d.Name] = d
}

// Names lists the registered experiments, sorted.
func Names() []string {
	var out []string
	for n := range registry {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Lookup returns the definition of name, or an error listing the valid ones.
func Lookup(name string) (*Definition, error) {
	d, ok := registry[name]
	if !ok {
		return nil, errors.Errorf("experiment %q does not exist; the experiments are: %s", name, strings.Join(Names(), ", "))
	}
	return d, nil
}

// CheckPreset returns an error naming the valid presets when p is not one.
func CheckPreset(p string) error {
	for _, q := range Presets {
		if p == q {
			return nil
		}
	}
	return errors.Errorf("preset %q does not exist; the presets are: %s", p, strings.Join(Presets, ", "))
}

// Expand returns the arms of d at preset, checked: names unique and
// non-empty, every model config valid.
func (d *Definition) Expand(preset string) ([]Arm, error) {
	if err := CheckPreset(preset); err != nil {
		return nil, err
	}
	arms, err := d.Arms(preset)
	if err != nil {
		return nil, errors.Wrapf(err, "%s at %s", d.Name, preset)
	}
	seen := map[string]bool{}
	for i, a := range arms {
		if a.Name == "" || strings.ContainsAny(a.Name, `/\ `) || seen[a.Name] {
			return nil, errors.Errorf("%s at %s: arm %d has a missing, duplicate or unsafe name %q", d.Name, preset, i, a.Name)
		}
		seen[a.Name] = true
		if err := a.Model.Resolved().Validate(); err != nil {
			return nil, errors.Wrapf(err, "%s at %s: arm %s", d.Name, preset, a.Name)
		}
		if a.Task == nil {
			return nil, errors.Errorf("%s at %s: arm %s has no Task", d.Name, preset, a.Name)
		}
		if err := a.Task.Check(a); err != nil {
			return nil, errors.Wrapf(err, "%s at %s: arm %s", d.Name, preset, a.Name)
		}
	}
	return arms, nil
}
