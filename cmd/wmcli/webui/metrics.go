package webui

import (
	"bufio"
	"encoding/json"
	"io/fs"

	"github.com/wonderful-matrices/wonderful-matrices-go/experiments/train"
)

// MaxPoints caps the points of one curve that the server sends: a longer
// metrics.jsonl is thinned as it streams (every 2nd point kept, then every
// 4th, …), so memory stays bounded whatever the run's length.
const MaxPoints = 1000

// Curve is a series of (step, value) points.
type Curve struct {
	Step  []int     `json:"step"`
	Value []float64 `json:"value"`
	// Stride is how many steps' points were thinned into each one (1:
	// every point).
	Stride int `json:"stride"`
}

// thinned collects points, keeping at most 2·max of them: when full it
// drops every other one and from then on keeps only every stride-th point.
type thinned struct {
	Curve
	max, seen int
}

func newThinned(max int) *thinned { return &thinned{Curve: Curve{Stride: 1}, max: max} }

func (t *thinned) add(step int, v float64) {
	t.seen++
	if (t.seen-1)%t.Stride != 0 {
		return
	}
	t.Step, t.Value = append(t.Step, step), append(t.Value, v)
	if len(t.Step) >= 2*t.max {
		k := 0
		for i := 0; i < len(t.Step); i += 2 {
			t.Step[k], t.Value[k] = t.Step[i], t.Value[i]
			k++
		}
		t.Step, t.Value = t.Step[:k], t.Value[:k]
		t.Stride *= 2
	}
}

// RunCurves are a run's curves: training loss (cross-entropy) at every
// step and validation perplexity where it was measured.
type RunCurves struct {
	ID     string `json:"id"`
	Loss   Curve  `json:"loss"`
	ValPPL Curve  `json:"val_ppl"`
	// Points is the number of metrics lines read (complete and valid).
	Points int `json:"points"`
}

// readCurves streams a run's metrics.jsonl line by line; incomplete or
// malformed lines (a run still writing, a crash) are skipped.
func readCurves(fsys fs.FS, id string, maxPoints int) (RunCurves, error) {
	f, err := fsys.Open(id + "/" + train.MetricsFile)
	if err != nil {
		return RunCurves{}, err
	}
	defer f.Close()
	loss, val := newThinned(maxPoints), newThinned(maxPoints)
	rc := RunCurves{ID: id}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		var m train.Metrics
		if json.Unmarshal(sc.Bytes(), &m) != nil || m.Step <= 0 {
			continue
		}
		rc.Points++
		loss.add(m.Step, m.CE)
		if m.ValPPL != nil {
			val.add(m.Step, *m.ValPPL)
		}
	}
	rc.Loss, rc.ValPPL = loss.Curve, val.Curve
	return rc, sc.Err()
}
