// Package graph holds the stacks of SPEC §4 and the model around them.
//
// # Overview
//
//   - pattern.go: the pattern language. Letters name sublayers (S A I K B M E
//     R H), whitespace is ignored and (…)N repeats a group. Parse gives a
//     small tree (a closed set of node kinds, after go/ast); Expand flattens
//     it; every error names the character position.
//   - arch.go: the named architectures (cheems, transxssm, llama, mamba2,
//     jamba, doge) as patterns.
//   - config.go: the model config, plain data with defaults and Validate,
//     which runs before anything is built and names the bad field.
//   - model.go: embedding → pre-norm residual sublayers → final RMSNorm → LM
//     head → cross-entropy (+ the MoE balance losses).
//   - params.go: parameter counts by layer kind (total and active) and the
//     matcher that sizes one knob to equalise two arms.
//   - checkpoint.go: safetensors weights with the config in the metadata,
//     written atomically and checked on load.
//   - decode.go, generate.go: token-by-token decoding from recurrent states
//     and KV caches, greedy and sampled generation.
//
// Package graph imports layers and ops.
package graph
