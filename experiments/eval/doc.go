// Package eval measures trained models beyond the training loss: perplexity
// over a sliding window at lengths past training (Press et al. 2022, as CoCA
// Table 1 uses it), MQAR accuracy (Wonderful Matrices appendix C.1), passkey
// retrieval (CoCA appendix B.1) and training/evaluation throughput
// (Wonderful Matrices Figure 6, TransXSSM Figure 4).
package eval
