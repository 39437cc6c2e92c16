package ops

import (
	"fmt"
	"math/rand"
	"testing"
)

// Attention multiplying by [d, t] copies of its keys and values
// (transposedHeads) gives the outputs and gradients of the transposed
// products, for every mask kind, grouped kv heads, more keys than queries,
// and a backward that computes P again as well as one that takes the save.
func TestAttentionTransposedHeadsMatch(t *testing.T) {
	defer func(small, on bool) { blasSmallKernels, attnTransposeHeads = small, on }(blasSmallKernels, attnTransposeHeads)
	blasSmallKernels = true // the path exists only for BLAS small kernels; gonum's gemm runs it as well
	for i, c := range []attnCase{
		{2, attnBlock, attnBlock, 4, 4, 16, 16, MaskNone},
		{1, 2*attnBlock + 5, 2*attnBlock + 5, 2, 1, 3, 2, MaskPaper},
		{2, attnBlock + 3, attnBlock + 9, 2, 2, 4, 3, MaskDoge},
		{1, 3 * attnBlock, 3 * attnBlock, 4, 2, 9, 7, MaskNone},
	} {
		for _, save := range []bool{false, true} {
			name := fmt.Sprintf("%+v save=%v", c, save)
			newK := func() attnKernel { return c.kernel(save) }
			r := rand.New(rand.NewSource(int64(30 + i)))
			var in []any
			for _, s := range newK().inShapes() {
				in = append(in, randData(r, s.TotalSize(), uniformIn(0.2, 1.5)))
			}
			dOut := randData(r, newK().outShape().TotalSize(), nil)
			run := func(transposed bool) (y []float64, grads [][]float64) {
				attnTransposeHeads = transposed
				k := newK()
				if k.transposedHeads() != transposed {
					t.Fatalf("%s: transposedHeads() = %v, want %v", name, k.transposedHeads(), transposed)
				}
				y = make([]float64, k.outShape().TotalSize())
				if err := k.forward(in, y); err != nil {
					t.Fatal(err)
				}
				return y, kernelGrads(t, k, in, dOut)
			}
			wantY, want := run(false)
			gotY, got := run(true)
			assertClose(t, name+" output", gotY, wantY, 1e-12, 1e-14)
			for j := range want {
				assertClose(t, fmt.Sprintf("%s gradient %d", name, j), got[j], want[j], 1e-12, 1e-14)
			}
		}
	}
}

// attnCase is an attention kernel's sizes and mask for the tests that hold
// two of its paths to each other.
type attnCase struct {
	b, tq, tk, h, hk, d, dv int
	mask                    MaskKind
}

// kernel is the case's kernel (paper-mask positions for tk + 2), keeping P
// for its backward when keep is set.
func (c attnCase) kernel(keep bool) attnKernel {
	k := attnKernel{b: c.b, tq: c.tq, tk: c.tk, h: c.h, hk: c.hk, d: c.d, dv: c.dv, mask: c.mask}
	if c.mask == MaskPaper {
		k.maxPos = c.tk + 2
	}
	if keep {
		k.saved = &attnSaved{}
		k.gradientWanted()
	}
	return k
}
