// Package experiments will hold the data, the training loop and the
// experiment definitions of SPEC §5–§7 (table1, table2, table3, mqar,
// throughput, params, extrapolation) and the runner that writes results.
package experiments
