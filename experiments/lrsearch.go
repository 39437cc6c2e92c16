package experiments

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/pkg/errors"

	"github.com/wonderful-matrices/wonderful-matrices-go/experiments/train"
	"github.com/wonderful-matrices/wonderful-matrices-go/internal/atomicfile"
)

// A learning-rate search, as Zoology tunes each mixer on MQAR: every arm
// trains once (seed 0) at each rate of a grid, the rate with the best
// validation measure is chosen, and the arm's seeds run at that rate. The
// reported numbers come from the test split, which the choice never saw.
//
// Folders: OUT/NAME/PRESET/ARM/lr-RATE/seed-S holds the arm at one rate and
// seed (the search's trial at a rate is its seed-0); ARM/lr-choice.json
// records the search. An arm without a search keeps ARM/seed-S.

// LRChoiceFile is the record of an arm's search in the arm's folder.
const LRChoiceFile = "lr-choice.json"

// divergedFile marks a rate at which the search's trial diverged (its loss
// turned non-finite); a resumed search does not run it again.
const divergedFile = "diverged.txt"

// MaxLRExtensions is how many rates a search adds beyond the grid in the
// direction of a best rate at the grid's edge, one at a time, each a grid
// step further (the ratio of the grid's two outermost rates on that side).
const MaxLRExtensions = 2

// Selection is the validation measure that chooses a learning rate.
type Selection struct {
	// Key is a measure of the result ("val_loss" when empty).
	Key string
	// Max chooses the highest value instead of the lowest.
	Max bool
}

func (s Selection) key() string {
	if s.Key == "" {
		return "val_loss"
	}
	return s.Key
}

// LRTrial is one rate of a search: its validation measure, or why it has
// none.
type LRTrial struct {
	LR float64 `json:"lr"`
	// Value of the selection measure; nil when the trial diverged.
	Value *float64 `json:"value,omitempty"`
	// ValLoss breaks ties of Value (accuracy often ties at 1).
	ValLoss  float64 `json:"val_loss,omitempty"`
	Diverged string  `json:"diverged,omitempty"`
}

// LRChoice is lr-choice.json: the rates tried and the one chosen.
type LRChoice struct {
	// Grid is the grid asked for; Trials are every rate tried, ascending
	// (the grid and its extensions).
	Grid   []float64 `json:"grid"`
	Select string    `json:"select"`
	Max    bool      `json:"max,omitempty"`
	Trials []LRTrial `json:"trials"`
	Chosen float64   `json:"chosen"`
	// Edge is set when the chosen rate is still the lowest or highest tried
	// after the extensions: a better one may lie beyond.
	Edge bool `json:"edge"`
}

// lrDirName is the folder of an arm at one rate ("lr-0.003").
func lrDirName(lr float64) string { return "lr-" + strconv.FormatFloat(lr, 'g', -1, 64) }

// ArmDir is the folder of an arm.
func ArmDir(out, name, preset, arm string) string {
	return filepath.Join(PresetDir(out, name, preset), arm)
}

// LRSeedDir is the folder of an arm at a rate and a seed.
func LRSeedDir(out, name, preset, arm string, lr float64, seed int) string {
	return filepath.Join(ArmDir(out, name, preset, arm), lrDirName(lr), fmt.Sprintf("seed-%d", seed))
}

// ReadLRChoice reads an arm folder's lr-choice.json; ok is false when the
// arm has none (no search, or a search not finished).
func ReadLRChoice(armDir string) (LRChoice, bool, error) {
	var c LRChoice
	b, err := os.ReadFile(filepath.Join(armDir, LRChoiceFile))
	if os.IsNotExist(err) {
		return c, false, nil
	}
	if err != nil {
		return c, false, errors.Wrap(err, "learning-rate choice")
	}
	if err := json.Unmarshal(b, &c); err != nil {
		return c, false, errors.Wrapf(err, "%s", filepath.Join(armDir, LRChoiceFile))
	}
	return c, true, nil
}

// ParseLRGrid reads "1e-3,3e-3,1e-2": positive rates, at least two,
// returned ascending without repeats.
func ParseLRGrid(s string) ([]float64, error) {
	var out []float64
	for _, f := range strings.Split(s, ",") {
		v, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
		if err != nil || !(v > 0) || math.IsInf(v, 0) {
			return nil, errors.Errorf("learning-rate grid %q: %q is not a positive number", s, f)
		}
		out = append(out, v)
	}
	return checkLRGrid(out)
}

// checkLRGrid sorts a grid and refuses one of fewer than two distinct
// positive rates.
func checkLRGrid(g []float64) ([]float64, error) {
	g = append([]float64(nil), g...)
	sort.Float64s(g)
	for i, v := range g {
		if !(v > 0) || (i > 0 && v == g[i-1]) {
			return nil, errors.Errorf("learning-rate grid %v: rates must be positive and distinct", g)
		}
	}
	if len(g) < 2 {
		return nil, errors.Errorf("learning-rate grid %v: a search needs at least two rates", g)
	}
	return g, nil
}

// best is the index of the chosen trial: the best value under sel, ties
// broken by the lower validation loss, then the lower rate; -1 when every
// trial diverged.
func best(trials []LRTrial, sel Selection) int {
	b := -1
	for i, t := range trials {
		if t.Value == nil {
			continue
		}
		if b < 0 {
			b = i
			continue
		}
		v, w := *t.Value, *trials[b].Value
		if sel.Max {
			v, w = -v, -w
		}
		if v < w || (v == w && t.ValLoss < trials[b].ValLoss) {
			b = i
		}
	}
	return b
}

// extension is the next rate beyond the edge that the best trial sits on,
// or 0 when it sits inside, or the extensions are used up.
func extension(trials []LRTrial, b, used int) float64 {
	n := len(trials)
	if used >= MaxLRExtensions || n < 2 || b < 0 {
		return 0
	}
	switch b {
	case 0:
		return round3(trials[0].LR * trials[0].LR / trials[1].LR)
	case n - 1:
		return round3(trials[n-1].LR * trials[n-1].LR / trials[n-2].LR)
	}
	return 0
}

// round3 rounds a rate to 3 significant digits (folder names stay short:
// lr-0.0333, not lr-0.03333333333333333).
func round3(v float64) float64 {
	r, _ := strconv.ParseFloat(strconv.FormatFloat(v, 'g', 3, 64), 64)
	return r
}

// trialFunc runs an arm at a rate with seed 0 and returns its result;
// a *train.DivergedError marks the rate as failed.
type trialFunc func(lr float64) (train.Result, error)

// searchLR runs the trials of grid (those not finished before) and extends
// it past an edge best, then writes and returns the choice. It fails when
// every rate diverged, or on any other error of a trial.
func searchLR(armDir string, grid []float64, sel Selection, run trialFunc) (LRChoice, error) {
	c := LRChoice{Grid: grid, Select: sel.key(), Max: sel.Max}
	try := func(lr float64) error {
		t := LRTrial{LR: lr}
		marker := filepath.Join(armDir, lrDirName(lr), divergedFile)
		if b, err := os.ReadFile(marker); err == nil {
			t.Diverged = strings.TrimSpace(string(b))
		} else {
			res, err := run(lr)
			var div *train.DivergedError
			switch {
			case errors.As(err, &div):
				t.Diverged = div.Error()
				if err := os.MkdirAll(filepath.Dir(marker), 0o755); err != nil {
					return errors.Wrap(err, "learning-rate search")
				}
				if err := atomicfile.WriteBytes(marker, []byte(t.Diverged+"\n")); err != nil {
					return err
				}
			case err != nil:
				return errors.Wrapf(err, "learning rate %g", lr)
			default:
				v, ok := value(Arm{}, res, sel.key())
				if !ok {
					return errors.Errorf("learning rate %g: the result has no %q to choose by", lr, sel.key())
				}
				t.Value, t.ValLoss = &v, res.ValLoss
			}
		}
		c.Trials = append(c.Trials, t)
		sort.Slice(c.Trials, func(i, j int) bool { return c.Trials[i].LR < c.Trials[j].LR })
		return nil
	}
	for _, lr := range grid {
		if err := try(lr); err != nil {
			return c, err
		}
	}
	for used := 0; ; used++ {
		next := extension(c.Trials, best(c.Trials, sel), used)
		if next == 0 {
			break
		}
		if err := try(next); err != nil {
			return c, err
		}
	}
	b := best(c.Trials, sel)
	if b < 0 {
		return c, errors.Errorf("every learning rate diverged: %v", c.rates())
	}
	c.Chosen = c.Trials[b].LR
	c.Edge = b == 0 || b == len(c.Trials)-1
	j, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return c, errors.Wrap(err, "learning-rate choice")
	}
	return c, atomicfile.WriteBytes(filepath.Join(armDir, LRChoiceFile), append(j, '\n'))
}

// rates lists the rates tried.
func (c LRChoice) rates() []float64 {
	var out []float64
	for _, t := range c.Trials {
		out = append(out, t.LR)
	}
	return out
}

// Describe is the choice in a table cell: the rate, and "(edge)" when it
// is the lowest or highest tried.
func (c LRChoice) Describe() string {
	s := strconv.FormatFloat(c.Chosen, 'g', 3, 64)
	if c.Edge {
		s += " (edge)"
	}
	return s
}
