// Package graph will hold the stacks of SPEC §4: the pattern language
// (letters, whitespace, (…)N), the named architectures (cheems, transxssm,
// llama, mamba2, jamba, doge) and the model (embedding, pre-norm residual
// sublayers, final norm, LM head, loss). It imports layers and ops.
package graph
