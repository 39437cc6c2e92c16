// Package ops holds every operation of SPEC §2 as a Gorgonia op with a
// symbolic gradient: RoPE (dynamic NTK, position offset), log-n scaling, the
// chunked SSD scan (with final state and one-token step), the causal
// depthwise convolution, causal attention (the paper's dynamic mask, the
// doge bias, grouped-query heads, KV-cache queries), the inner-function
// value, CoCA scores with their causal softmax, cross-domain MoE, the routed
// MoE (top-k gates, load-balancing loss, SwiGLU experts), RMSNorm, a fused
// cross-entropy, and the small ops a model needs (linear, bias add, head
// repeat, doge bias, embedding, SiLU, softplus, ReLU).
//
// # How an op is built
//
// Each op is a kernel (fused.go): one forward and one backward function
// over flat row-major []float32 or []float64 buffers. A kernel becomes a
// Gorgonia Op whose SymDiff adds a single backward node computing every
// input's gradient at once, packed, plus one small unpack node per input;
// gradients are graph nodes, so Gorgonia's Grad and solvers use them as
// they use its own ops.
//
// # Invariants
//
//   - Shapes are fixed when the node is built and checked again in Do.
//   - WriteHash covers every attribute and the input shapes, so Gorgonia
//     never merges two nodes that compute different things.
//   - Kernels run in float32 or float64; reductions and exponents that
//     decide stability (segment sums, log-sum-exp) run in float64.
//   - A kernel parallelises itself (batch × heads, or token ranges) and
//     calls gemm (blas.go) on the BLAS Gorgonia uses: gonum's pure Go by
//     default, OpenBLAS with the openblas build tag.
//   - For a given GOMAXPROCS, results repeat to the bit: work is split into
//     fixed ranges and partial sums are added in a fixed order (a different
//     GOMAXPROCS may round differently).
//
// Each op's doc comment gives its equation and the paper line it follows;
// where the papers' listings have slips, SPEC.md rules and the comment says
// so. The golden cases of testdata/golden (a copy of the project's
// shared/golden) pin every op (golden_test.go).
package ops
