package eval

import (
	"github.com/pkg/errors"

	"github.com/wonderful-matrices/wonderful-matrices-go/experiments/data"
	"github.com/wonderful-matrices/wonderful-matrices-go/graph"
)

// MQARAccuracy is the mean over the examples of the share of labelled
// positions whose argmax prediction is the label (Wonderful Matrices
// appendix C.1; Zoology's per-example accuracy). Examples run batch at a time.
func MQARAccuracy(m *graph.Model, ds data.Examples, batch int) (float64, error) {
	if batch < 1 || ds.Len() == 0 {
		return 0, errors.Errorf("mqar accuracy: batch %d over %d examples", batch, ds.Len())
	}
	var sum float64
	for i := 0; i < ds.Len(); i += batch {
		rows := ds.IDs[i:min(i+batch, ds.Len())]
		logits, err := m.Logits(rows)
		if err != nil {
			return 0, errors.Wrapf(err, "mqar accuracy: examples %d..", i)
		}
		t := ds.SeqLen()
		v := len(logits) / (len(rows) * t)
		for r := range rows {
			pred := make([]int, t)
			for p := 0; p < t; p++ {
				o := (r*t + p) * v
				pred[p] = graph.Argmax(logits[o : o+v])
			}
			sum += data.MQARAccuracy(pred, ds.Targets[i+r])
		}
	}
	return sum / float64(ds.Len()), nil
}
