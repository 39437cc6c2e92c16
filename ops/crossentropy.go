package ops

import (
	"fmt"
	"math"

	"github.com/pkg/errors"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// Reduction says how CrossEntropy combines the per-token losses.
type Reduction string

const (
	// ReduceMean averages over the tokens whose target is not ignored.
	ReduceMean Reduction = "mean"
	// ReduceSum adds them.
	ReduceSum Reduction = "sum"
)

// CrossEntropy is the fused, numerically stable language-model loss
// -log softmax(logits)[target] = logsumexp(logits) - logits[target], reduced
// over tokens (SPEC §2). logits are [..., V]; targets [...] hold class
// indices stored as floats (the graph's dtype). A negative target marks a
// position to ignore (MQAR labels only the queries, SPEC §6); with
// ReduceMean the mean is over the labelled positions. Targets get no gradient.
// It replaces Gorgonia's Log(SoftMax(x)), whose stabilisation rewrites the
// softmax in place (gorgonia issue #569).
func CrossEntropy(logits, targets *G.Node, red Reduction) (*G.Node, error) {
	ls, ts := logits.Shape(), targets.Shape()
	if ls.Dims() < 1 || ts.Dims() != ls.Dims()-1 || !ts.Eq(ls[:ls.Dims()-1]) {
		return nil, errors.Errorf("cross_entropy: targets %v must be logits %v without the last (vocabulary) axis", ts, ls)
	}
	if red != ReduceMean && red != ReduceSum {
		return nil, errors.Errorf("cross_entropy: reduction %q is not one of %q, %q", red, ReduceMean, ReduceSum)
	}
	return apply(crossEntropyKernel{red: red, logits: ls.Clone(), targets: ts.Clone()}, logits, targets)
}

type crossEntropyKernel struct {
	red             Reduction
	logits, targets tensor.Shape
}

func (k crossEntropyKernel) name() string  { return "cross_entropy" }
func (k crossEntropyKernel) attrs() string { return fmt.Sprintf("reduction=%s", k.red) }
func (k crossEntropyKernel) inShapes() []tensor.Shape {
	return []tensor.Shape{k.logits, k.targets}
}
func (k crossEntropyKernel) outShape() tensor.Shape { return tensor.ScalarShape() }
func (k crossEntropyKernel) diffWRT() []bool        { return []bool{true, false} }

// The backward writes every row of the logits' gradient, zeros for an
// ignored target, so the fused op does not clear it first (the whole
// [tokens, vocab] of it, each step).
func (k crossEntropyKernel) writesWholeGradients() bool { return true }

func (k crossEntropyKernel) forward(in []any, out any) error {
	switch y := out.(type) {
	case []float32:
		return crossEntropyForward(y, as[float32](in), k)
	case []float64:
		return crossEntropyForward(y, as[float64](in), k)
	}
	return nil
}

func (k crossEntropyKernel) backward(in []any, out, dOut any, dIn []any) error {
	switch dy := dOut.(type) {
	case []float32:
		return crossEntropyBackward(dIn[0].([]float32), dy[0], as[float32](in), k)
	case []float64:
		return crossEntropyBackward(dIn[0].([]float64), dy[0], as[float64](in), k)
	}
	return nil
}

// target reads token i's class, or -1 when it is ignored.
func target[T floats](targets []T, i, vocab int) (int, error) {
	f := float64(targets[i])
	if f < 0 {
		return -1, nil
	}
	c := int(f)
	if float64(c) != f || c >= vocab {
		return 0, errors.Errorf("target %d is %v: not a class index in [0, %d) (negative to ignore)", i, f, vocab)
	}
	return c, nil
}

// denominator is the reduction's divisor: 1 for a sum, for a mean the
// count of tokens that are not ignored (at least 1).
func denominator[T floats](red Reduction, targets []T) float64 {
	if red == ReduceSum {
		return 1
	}
	n := 0
	for _, t := range targets {
		if t >= 0 {
			n++
		}
	}
	return math.Max(float64(n), 1)
}

// logSumExp is log Σ e^row, shifted by the row's maximum m. Float32 rows go
// through lseParts32 (one C call in the openblas build) in scratch, which
// must hold len(row) values and is left holding e^(row−m); the sum is
// float64 in both precisions. It returns the log-sum-exp and m.
func logSumExp[T floats](row, scratch []T) (lse, rowMax float64) {
	if r32, ok := any(row).([]float32); ok {
		m, s := lseParts32(r32, any(scratch).([]float32))
		return float64(m) + math.Log(s), float64(m)
	}
	m := maxOf(row)
	var s float64
	for _, v := range row {
		s += math.Exp(float64(v - m))
	}
	return float64(m) + math.Log(s), float64(m)
}

func crossEntropyForward[T floats](y []T, in [][]T, k crossEntropyKernel) error {
	logits, targets := in[0], in[1]
	V := k.logits[k.logits.Dims()-1]
	for i := range targets {
		if _, err := target(targets, i, V); err != nil {
			return err
		}
	}
	parts := make([]float64, workerCount(len(targets)))
	parallelRanges(len(targets), func(w, lo, hi int) {
		scratch := make([]T, V)
		for i := lo; i < hi; i++ {
			if c, _ := target(targets, i, V); c >= 0 {
				row := logits[i*V : (i+1)*V]
				lse, _ := logSumExp(row, scratch)
				parts[w] += lse - float64(row[c])
			}
		}
	})
	var total float64
	for _, p := range parts {
		total += p
	}
	y[0] = T(total / denominator(k.red, targets))
	return nil
}

// crossEntropyBackward: d/dlogits = g * (softmax - onehot(target)) / N.
func crossEntropyBackward[T floats](dx []T, g T, in [][]T, k crossEntropyKernel) error {
	logits, targets := in[0], in[1]
	V := k.logits[k.logits.Dims()-1]
	scale := float64(g) / denominator(k.red, targets)
	for i := range targets {
		if _, err := target(targets, i, V); err != nil {
			return err
		}
	}
	parallelRanges(len(targets), func(_, lo, hi int) {
		for i := lo; i < hi; i++ {
			c, _ := target(targets, i, V)
			row, drow := logits[i*V:(i+1)*V], dx[i*V:(i+1)*V]
			if c < 0 {
				clear(drow)
				continue
			}
			labelledRowGradient(drow, row, c, scale)
		}
	})
	return nil
}

// labelledRowGradient writes drow = scale·(softmax(row) − onehot(c)), the
// gradient of a labelled row's loss scaled by scale, and returns that loss,
// logsumexp(row) − row[c] (float64). CrossEntropy's backward and
// LinearCrossEntropy's float64 rows call it; LinearCrossEntropy's float32
// rows (linearCERows32) take the same kernels and roundings a block at a
// time, so the two ops' gradients have the same bits.
func labelledRowGradient[T floats](drow, row []T, c int, scale float64) float64 {
	lse, m := logSumExp(row, drow)
	if d32, ok := any(drow).([]float32); ok {
		// logSumExp left e^(v−m) in drow, and their sum is e^(lse−m):
		// the softmax is one scaling away.
		f := float32(scale / math.Exp(lse-m))
		for j := range d32 {
			d32[j] *= f
		}
	} else {
		for j, v := range row {
			drow[j] = T(math.Exp(float64(v)-lse) * scale)
		}
	}
	drow[c] -= T(scale)
	return lse - float64(row[c])
}

// maxOf is the largest value of a non-empty row.
func maxOf[T floats](row []T) T {
	m := row[0]
	for _, v := range row[1:] {
		if v > m {
			m = v
		}
	}
	return m
}
