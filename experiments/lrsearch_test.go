package experiments

import (
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/wonderful-matrices/wonderful-matrices-go/experiments/train"
)

// fakeTrials is a search whose validation loss is (log10 lr − log10 best)²
// and which diverges above diverge; it counts the trials run.
func fakeTrials(bestLR, diverge float64, ran *[]float64) trialFunc {
	return func(lr float64) (train.Result, error) {
		*ran = append(*ran, lr)
		if lr > diverge {
			return train.Result{}, &train.DivergedError{Step: 3, Loss: math.NaN()}
		}
		d := math.Log10(lr) - math.Log10(bestLR)
		return train.Result{Steps: 1, ValLoss: 1 + d*d, ValPPL: math.Exp(1 + d*d)}, nil
	}
}

func TestSearchLR(t *testing.T) {
	grid := []float64{1e-3, 3e-3, 1e-2}
	cases := []struct {
		name            string
		best, diverge   float64
		wantChosen      float64
		wantEdge        bool
		wantRates       []float64
		wantDivergedAny bool
	}{
		{"inside", 3e-3, 1, 3e-3, false, grid, false},
		// best beyond the top: two extensions of ×10/3 (3 digits), the last
		// still best.
		{"above", 1, 1, 0.111, true, []float64{1e-3, 3e-3, 1e-2, 0.0333, 0.111}, false},
		// the extension diverges: the grid's top is chosen, not at the edge.
		{"diverges above", 1, 2e-2, 1e-2, false, []float64{1e-3, 3e-3, 1e-2, 0.0333}, true},
		// best below the bottom: the second extension puts it inside.
		{"below", 3e-4, 1, 0.000333, false, []float64{1e-3, 3e-3, 1e-2, 0.000333, 0.000111}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			var ran []float64
			got, err := searchLR(dir, grid, Selection{}, fakeTrials(c.best, c.diverge, &ran))
			if err != nil {
				t.Fatal(err)
			}
			if !close(got.Chosen, c.wantChosen) || got.Edge != c.wantEdge {
				t.Errorf("chose %g (edge %v), want %g (edge %v); trials %+v", got.Chosen, got.Edge, c.wantChosen, c.wantEdge, got.Trials)
			}
			if len(ran) != len(c.wantRates) {
				t.Fatalf("ran %v, want %v", ran, c.wantRates)
			}
			for i := range ran {
				if !close(ran[i], c.wantRates[i]) {
					t.Fatalf("ran %v, want %v", ran, c.wantRates)
				}
			}
			saved, ok, err := ReadLRChoice(dir)
			if err != nil || !ok || !reflect.DeepEqual(saved, got) {
				t.Errorf("lr-choice.json holds %+v (ok %v, err %v), want %+v", saved, ok, err, got)
			}
			diverged := false
			for _, tr := range got.Trials {
				diverged = diverged || tr.Diverged != ""
			}
			if diverged != c.wantDivergedAny {
				t.Errorf("diverged trials: %v, want %v", diverged, c.wantDivergedAny)
			}
			// A second search runs nothing the first ran to divergence.
			ran = nil
			if _, err := searchLR(dir, grid, Selection{}, fakeTrials(c.best, c.diverge, &ran)); err != nil {
				t.Fatal(err)
			}
			for _, lr := range ran {
				if lr > c.diverge {
					t.Errorf("the diverged rate %g ran again", lr)
				}
			}
		})
	}
}

func close(a, b float64) bool { return math.Abs(a-b) <= 1e-12*math.Abs(b) }

func TestSearchLRMaximises(t *testing.T) {
	acc := map[float64]float64{1e-3: 0.5, 3e-3: 1, 1e-2: 1}
	loss := map[float64]float64{1e-3: 2, 3e-3: 0.3, 1e-2: 0.1}
	run := func(lr float64) (train.Result, error) {
		return train.Result{Steps: 1, ValLoss: loss[lr], Measures: map[string]float64{"val_accuracy": acc[lr]}}, nil
	}
	got, err := searchLR(t.TempDir(), []float64{1e-3, 3e-3, 1e-2}, Selection{Key: "val_accuracy", Max: true}, func(lr float64) (train.Result, error) {
		if _, ok := acc[lr]; !ok {
			acc[lr], loss[lr] = 0, 9 // the extension above the grid
		}
		return run(lr)
	})
	if err != nil {
		t.Fatal(err)
	}
	// 3e-3 and 1e-2 tie on accuracy; the lower validation loss decides.
	if got.Chosen != 1e-2 {
		t.Errorf("chose %g, want 1e-2 (tie on accuracy, lower loss)", got.Chosen)
	}
}

func TestSearchLRAllDiverge(t *testing.T) {
	var ran []float64
	if _, err := searchLR(t.TempDir(), []float64{1e-2, 3e-2}, Selection{}, fakeTrials(1, 1e-9, &ran)); err == nil {
		t.Fatal("a search where every rate diverged succeeded")
	}
}

func TestSearchLRFailsOnOtherErrors(t *testing.T) {
	dir := t.TempDir()
	_, err := searchLR(dir, []float64{1e-3, 1e-2}, Selection{}, func(float64) (train.Result, error) { return train.Result{}, os.ErrPermission })
	if err == nil {
		t.Fatal("a trial's I/O error was taken for a result")
	}
	if _, err := os.Stat(filepath.Join(dir, LRChoiceFile)); !os.IsNotExist(err) {
		t.Errorf("a failed search wrote %s", LRChoiceFile)
	}
}

func TestParseLRGrid(t *testing.T) {
	g, err := ParseLRGrid("1e-2, 1e-3,3e-3")
	if err != nil || !reflect.DeepEqual(g, []float64{1e-3, 3e-3, 1e-2}) {
		t.Errorf("got %v, %v", g, err)
	}
	for _, bad := range []string{"", "1e-3", "1e-3,x", "1e-3,-1", "1e-3,1e-3", "0,1"} {
		if _, err := ParseLRGrid(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

// A run's failure is recorded in its folder and cleared by a later
// success; a graceful stop records nothing; a folder never made gets none.
func TestMarkFailure(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, FailedFile)
	markFailure(dir, os.ErrPermission)
	if b, err := os.ReadFile(path); err != nil || !strings.Contains(string(b), "permission denied") {
		t.Fatalf("failure not recorded: %q %v", b, err)
	}
	markFailure(dir, nil)
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("a success left %s", FailedFile)
	}
	markFailure(dir, &train.StoppedError{Dir: dir, Step: 3})
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("a graceful stop was recorded as a failure")
	}
	missing := filepath.Join(dir, "never")
	markFailure(missing, os.ErrPermission)
	if _, err := os.Stat(missing); !os.IsNotExist(err) {
		t.Errorf("a failure made the folder of a run that never started")
	}
}
