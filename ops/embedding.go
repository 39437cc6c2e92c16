package ops

import (
	"github.com/pkg/errors"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// Embedding gathers rows of table [V, d] by ids [...] (class indices stored as
// floats, the graph's dtype): y[..., :] = table[ids[...], :]. The gradient
// scatters back into the table; ids get none.
func Embedding(table, ids *G.Node) (*G.Node, error) {
	ts := table.Shape()
	if ts.Dims() != 2 {
		return nil, errors.Errorf("embedding: table must be [V, d], got %v", ts)
	}
	return apply(embeddingKernel{table: ts.Clone(), ids: ids.Shape().Clone()}, table, ids)
}

type embeddingKernel struct{ table, ids tensor.Shape }

func (k embeddingKernel) name() string             { return "embedding" }
func (k embeddingKernel) attrs() string            { return "" }
func (k embeddingKernel) inShapes() []tensor.Shape { return []tensor.Shape{k.table, k.ids} }
func (k embeddingKernel) outShape() tensor.Shape {
	return append(k.ids.Clone(), k.table[1])
}
func (k embeddingKernel) diffWRT() []bool { return []bool{true, false} }

// The gather writes every row of the output (a bad id is an error).
func (k embeddingKernel) writesWholeOutput() bool { return true }

func (k embeddingKernel) forward(in []any, out any) error {
	switch y := out.(type) {
	case []float32:
		return embeddingGather(y, in[0].([]float32), in[1].([]float32), k)
	case []float64:
		return embeddingGather(y, in[0].([]float64), in[1].([]float64), k)
	}
	return nil
}

func (k embeddingKernel) backward(in []any, out, dOut any, dIn []any) error {
	switch dy := dOut.(type) {
	case []float32:
		return embeddingScatter(dIn[0].([]float32), dy, in[1].([]float32), k)
	case []float64:
		return embeddingScatter(dIn[0].([]float64), dy, in[1].([]float64), k)
	}
	return nil
}

// row checks that id (token i's) names a row of the table.
func (k embeddingKernel) row(f float64, i int) (int, error) {
	r := int(f)
	if float64(r) != f || r < 0 || r >= k.table[0] {
		return 0, errors.Errorf("id %d is %v: not a row of the %d-row table", i, f, k.table[0])
	}
	return r, nil
}

func embeddingGather[T floats](y, table, ids []T, k embeddingKernel) error {
	d := k.table[1]
	for i := range ids {
		r, err := k.row(float64(ids[i]), i)
		if err != nil {
			return err
		}
		copy(y[i*d:(i+1)*d], table[r*d:(r+1)*d])
	}
	return nil
}

func embeddingScatter[T floats](dtable, dy, ids []T, k embeddingKernel) error {
	d := k.table[1]
	for i := range ids {
		r, err := k.row(float64(ids[i]), i)
		if err != nil {
			return err
		}
		dst, src := dtable[r*d:(r+1)*d], dy[i*d:(i+1)*d]
		for j := range dst {
			dst[j] += src[j]
		}
	}
	return nil
}
