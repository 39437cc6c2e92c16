// Package train trains a graph.Model (SPEC §5): AdamW with weight decay only
// on the parameters that take it (not norms, biases or dynamic masks), linear
// warm-up over 10% of the steps then cosine decay to 10% of the peak rate,
// gradient clipping at 1.0, a NaN/Inf guard that names the step and the
// layer, validation perplexity, a JSON-lines metrics log, periodic atomic
// checkpoints and exact resume.
//
// # Repeatability
//
// The batches are a pure function of (seed, step) (data.Batcher) and the
// model's ops repeat to the bit for a given GOMAXPROCS, so the same config,
// seed and data give the same loss curve to the last bit, and a run resumed
// from a checkpoint continues exactly as if it had never stopped.
package train
