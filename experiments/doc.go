// Package experiments will hold the experiment definitions of SPEC §7
// (table1, table2, table3, mqar, throughput, params, extrapolation) and the
// runner that writes their results, tables and plots. Its parts that exist
// live in subpackages: data (tokenizer, embedded KJV, corpus loader,
// packing, MQAR, passkey) and train (AdamW, schedule, checkpoints, resume).
package experiments
