package ops

import (
	"fmt"
	"math"

	"github.com/pkg/errors"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// LinearCrossEntropy is the LM head and the language-model loss as one op:
// CrossEntropy(x W, targets, red) (SPEC §2 and §4: logits = RMSNorm(x) W,
// −log softmax(logits)[target] reduced over tokens), with x [..., d], W
// [d, V] and targets [...] as CrossEntropy takes them (a negative target is
// ignored; targets get no gradient).
//
// Where this build's BLAS runs the head's product in row blocks
// (tallRowBlock: d_model 64 on OpenBLAS's AVX-512 kernels) it never writes
// the [tokens, V] logits: each block of rows takes its logits, their
// log-sum-exp and loss, and, in a graph that takes the gradient, the
// logits' gradient softmax − onehot and the block's share of dx = dlogits Wᵀ
// and dW = xᵀ dlogits, while the block is in cache. The loss is the root of
// a training graph, so those gradients are taken in the forward, at an
// upstream gradient of 1, and kept for the backward (linearCESaved), which
// scales them by the gradient it is given (by 1 in training: the same
// bits). The logits and dx are those of Linear and CrossEntropy to the bit
// (same products in the same blocks, the same row kernel); the loss and dW
// are summed in another order (linearCEGroups). An evaluation forward keeps
// nothing. Elsewhere it builds the two nodes, Linear and CrossEntropy.
func LinearCrossEntropy(x, w, targets *G.Node, red Reduction) (*G.Node, error) {
	xs, ws, ts := x.Shape(), w.Shape(), targets.Shape()
	if xs.Dims() < 2 || ws.Dims() != 2 || ws[0] != xs[xs.Dims()-1] {
		return nil, errors.Errorf("linear_cross_entropy: W %v must be [d, V] with d = x's last axis (x %v)", ws, xs)
	}
	if !ts.Eq(xs[:xs.Dims()-1]) {
		return nil, errors.Errorf("linear_cross_entropy: targets %v must be x %v without the last axis", ts, xs)
	}
	if red != ReduceMean && red != ReduceSum {
		return nil, errors.Errorf("linear_cross_entropy: reduction %q is not one of %q, %q", red, ReduceMean, ReduceSum)
	}
	k := linearCEKernel{x: xs.Clone(), d: ws[0], v: ws[1], red: red, saved: &linearCESaved{}}
	k.blk = tallRowBlock(k.v, k.d) // the same for x W (n V, k d) and dlogits Wᵀ (n d, k V)
	if k.blk == 0 {
		logits, err := Linear(x, w)
		if err != nil {
			return nil, errors.Wrap(err, "linear_cross_entropy")
		}
		loss, err := CrossEntropy(logits, targets, red)
		return loss, errors.Wrap(err, "linear_cross_entropy")
	}
	return apply(k, x, w, targets)
}

type linearCEKernel struct {
	x    tensor.Shape
	d, v int
	red  Reduction
	// blk is the rows of one block: tallRowBlock of the head's products,
	// so the blocks are those Linear would cut.
	blk int
	// saved is shared by the op and its gradient op (not an attribute: no
	// hash).
	saved *linearCESaved
}

// linearCESaved is what a LinearCrossEntropy forward in a graph that takes
// its gradient keeps for the backward of the same run, for the same inputs
// (forwardSave): dx [rows, d] and dW [d, V] at an upstream gradient of 1.
type linearCESaved struct {
	forwardSave
	wanted bool
	dx, dw any // []float32 or []float64 from the scratch pools, or nil
}

func (k linearCEKernel) gradientWanted() {
	if k.saved != nil {
		k.saved.wanted = true
	}
}

// release hands the saved gradients back to the pools.
func (sv *linearCESaved) release() {
	releaseScratchAny(sv.dx)
	releaseScratchAny(sv.dw)
	sv.dx, sv.dw = nil, nil
	sv.drop()
}

// releaseSaved is called by ReleaseBuffers.
func (k linearCEKernel) releaseSaved() {
	if k.saved != nil {
		k.saved.release()
	}
}

func (k linearCEKernel) name() string { return "linear_cross_entropy" }
func (k linearCEKernel) attrs() string {
	return fmt.Sprintf("reduction=%s,blk=%d", k.red, k.blk)
}
func (k linearCEKernel) rows() int { return k.x.TotalSize() / k.d }
func (k linearCEKernel) inShapes() []tensor.Shape {
	return []tensor.Shape{k.x, {k.d, k.v}, k.x[:k.x.Dims()-1]}
}
func (k linearCEKernel) outShape() tensor.Shape { return tensor.ScalarShape() }
func (k linearCEKernel) diffWRT() []bool        { return []bool{true, true, false} }

// The backward writes all of dx and dW (a copy or scaling of the save).
func (k linearCEKernel) writesWholeGradients() bool { return true }

func (k linearCEKernel) forward(in []any, out any) error {
	switch y := out.(type) {
	case []float32:
		return linearCEForward(y, as[float32](in), k)
	case []float64:
		return linearCEForward(y, as[float64](in), k)
	}
	return nil
}

func (k linearCEKernel) backward(in []any, out, dOut any, dIn []any) error {
	switch dy := dOut.(type) {
	case []float32:
		return linearCEBackward(as[float32](dIn), dy[0], as[float32](in), k)
	case []float64:
		return linearCEBackward(as[float64](dIn), dy[0], as[float64](in), k)
	}
	return nil
}

// checkTargets returns the reduction's denominator, or an error naming the
// first target that is not a class index.
func checkTargets[T floats](k linearCEKernel, targets []T) (float64, error) {
	for i := range targets {
		if _, err := target(targets, i, k.v); err != nil {
			return 0, errors.Wrap(err, "linear_cross_entropy")
		}
	}
	return denominator(k.red, targets), nil
}

// linearCERun checks the targets and returns the reduced loss and, when
// grads, dx and dW at an upstream gradient of 1 (from scratch; the caller
// releases them): the forward's work, which a backward without a save
// repeats.
func linearCERun[T floats](x, w, targets []T, grads bool, k linearCEKernel) (loss float64, dx, dw []T, err error) {
	den, err := checkTargets(k, targets)
	if err != nil {
		return 0, nil, nil, err
	}
	if grads {
		dx, dw = scratchUninit[T](k.rows()*k.d), scratchUninit[T](k.d*k.v) // written whole
	}
	return linearCEBlocks(x, w, targets, 1/den, dx, dw, k) / den, dx, dw, nil
}

// linearCEForward writes the loss, and when the graph takes the gradient
// keeps dx and dW for the backward in k.saved.
func linearCEForward[T floats](y []T, in [][]T, k linearCEKernel) error {
	x, w, targets := in[0], in[1], in[2]
	sv := k.saved
	sv.release() // a save nobody used (an evaluation run) goes back first
	loss, dx, dw, err := linearCERun(x, w, targets, sv.wanted, k)
	if err != nil {
		return err
	}
	y[0] = T(loss)
	if sv.wanted {
		sv.dx, sv.dw = dx, dw
		sv.keep(x, w, targets)
	}
	return nil
}

// linearCEBackward writes dx and dW (d[0], d[1]): the forward's, scaled by
// g, or computed again when there is no save for these inputs.
func linearCEBackward[T floats](d [][]T, g T, in [][]T, k linearCEKernel) error {
	x, w, targets := in[0], in[1], in[2]
	sv := k.saved
	var dx, dw []T
	if sv.take(x, w, targets) {
		dx, _ = sv.dx.([]T)
		dw, _ = sv.dw.([]T)
	}
	if dx == nil || dw == nil {
		sv.release()
		var err error
		if _, dx, dw, err = linearCERun(x, w, targets, true, k); err != nil {
			return err
		}
	}
	sv.dx, sv.dw = nil, nil // this pass owns them now
	sv.drop()
	defer releaseScratch(dx)
	defer releaseScratch(dw)
	scaleInto(d[0], dx, g)
	scaleInto(d[1], dw, g)
	return nil
}

// scaleInto sets dst = g·src; g = 1 is a copy, the same bits.
func scaleInto[T floats](dst, src []T, g T) {
	if g == 1 {
		copy(dst, src)
		return
	}
	for i, v := range src[:len(dst)] {
		dst[i] = g * v
	}
}

// linearCEGroups is the number of groups of row blocks whose losses and
// dW LinearCrossEntropy sums apart and then adds, group 0 first: a fixed
// number, so that the order of the sums, and the bits, do not depend on how
// many workers run the groups (as swigluGradGroups).
const linearCEGroups = 2

// linearCEBlocks runs the rows one block at a time and returns the sum of
// the labelled rows' losses (float64, before the reduction's division).
// When dx is not nil it also writes dx and dW, the gradients of scale times
// that sum: per block, the logits' gradient (labelledRowGradient, zero for
// an ignored row), dx = dlogits Wᵀ and the block's share of dW = xᵀ dlogits.
// Each group sums its blocks in order, group 0 into dw and the others into
// scratch, added to dw after.
func linearCEBlocks[T floats](x, w, targets []T, scale float64, dx, dw []T, k linearCEKernel) float64 {
	rows, dv, blk := k.rows(), k.d*k.v, k.blk
	grads := dx != nil
	var wt []T
	if grads {
		// Wᵀ [V, d] once, as gemmTall copies it: the small kernels gain
		// only on untransposed operands.
		wt = transposedScratch(w, k.v, k.d, k.v)
		defer releaseScratch(wt)
	}
	blocks := (rows + blk - 1) / blk
	groups := min(linearCEGroups, blocks)
	losses := make([]float64, groups)
	part := make([][]T, groups) // group g's dW
	for g := 1; grads && g < groups; g++ {
		part[g] = scratchUninit[T](dv) // written by the group's first block (beta 0)
	}
	products := 1.0 // the logits; with grads, dx and dW too
	if grads {
		products = 3
	}
	parallelForWork(groups, products*gemmWork(rows, k.d, k.v), func(g int) {
		n := blk * k.v
		ws := scratchUninit[T](2 * n) // the block's logits and their gradient, each written whole
		defer releaseScratch(ws)
		dwg := dw
		if g > 0 {
			dwg = part[g]
		}
		first := g * blocks / groups
		for b := first; b < (g+1)*blocks/groups; b++ {
			r0, m := b*blk, min(blk, rows-b*blk)
			logits, dlogits := ws[:m*k.v], ws[n:n+m*k.v]
			gemm(false, false, m, k.v, k.d, 1, x[r0*k.d:], k.d, w, k.v, 0, logits, k.v)
			losses[g] += linearCERows(logits, dlogits, targets[r0:r0+m], scale, grads, k.v)
			if !grads {
				continue
			}
			var beta T
			if b > first {
				beta = 1
			}
			gemm(false, false, m, k.d, k.v, 1, dlogits, k.v, wt, k.d, 0, dx[r0*k.d:], k.d)
			gemm(true, false, k.d, k.v, m, 1, x[r0*k.d:], k.d, dlogits, k.v, beta, dwg, k.v)
		}
	})
	var total float64
	for g := range groups {
		total += losses[g]
		if grads && g > 0 {
			addVec(dw, dw, part[g])
			releaseScratch(part[g])
		}
	}
	return total
}

// linearCERows returns the summed loss of a block's rows of logits
// ([rows, v], rows = len(targets)), and when grads writes their gradients
// into dlogits (labelledRowGradient: scale·(softmax − onehot), zero for an
// ignored row); without grads dlogits is scratch. Float32 blocks go through
// linearCERows32.
func linearCERows[T floats](logits, dlogits, targets []T, scale float64, grads bool, v int) float64 {
	if l32, ok := any(logits).([]float32); ok {
		return linearCERows32(l32, any(dlogits).([]float32), any(targets).([]float32), scale, grads, v)
	}
	var loss float64
	for i := range targets {
		row, drow := logits[i*v:(i+1)*v], dlogits[i*v:(i+1)*v]
		c, _ := target(targets, i, v) // checked by the caller
		switch {
		case c < 0:
			if grads {
				clear(drow)
			}
		case grads:
			loss += labelledRowGradient(drow, row, c, scale)
		default:
			lse, _ := logSumExp(row, drow)
			loss += lse - float64(row[c])
		}
	}
	return loss
}

// linearCERows32 is linearCERows for float32 with two calls to C for the
// block (lsePartsRows32, scaleRows32) instead of one per row and a Go
// loop: the same kernels and roundings as logSumExp and
// labelledRowGradient, so the same bits.
func linearCERows32(logits, dlogits, targets []float32, scale float64, grads bool, v int) float64 {
	rows := len(targets)
	maxs, fs := scratchUninit[float32](rows), scratch[float32](rows)
	sums := scratchUninit[float64](rows)
	defer releaseScratch(maxs)
	defer releaseScratch(fs)
	defer releaseScratch(sums)
	lsePartsRows32(logits, dlogits, maxs, sums, rows, v)
	var loss float64
	for i := range rows {
		c, _ := target(targets, i, v) // checked by the caller
		if c < 0 {
			continue
		}
		lse := float64(maxs[i]) + math.Log(sums[i])
		loss += lse - float64(logits[i*v+c])
		fs[i] = float32(scale / math.Exp(lse-float64(maxs[i])))
	}
	if !grads {
		return loss
	}
	scaleRows32(dlogits, fs, rows, v)
	for i := range rows {
		drow := dlogits[i*v : (i+1)*v]
		if c, _ := target(targets, i, v); c < 0 {
			clear(drow) // whatever e^(row−m) held, as labelledRowGradient's caller does
		} else {
			drow[c] -= float32(scale)
		}
	}
	return loss
}
