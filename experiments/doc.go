// Package experiments holds the experiment definitions of SPEC §7 (table1,
// table2, table3, mqar, throughput, params, extrapolation), the runner that
// trains or measures their arms into a results folder, and the report that
// turns saved results into tables and plots beside the papers' numbers.
//
// # Layout of a results folder
//
//	DIR/NAME/PRESET/ARM/seed-S/   config.json, metrics.jsonl, result.json, checkpoint
//	DIR/NAME/PRESET/table.md      measured beside paper, mean ± spread over seeds
//	DIR/NAME/PRESET/table.csv
//	DIR/NAME/PRESET/plots/*.png, *.svg
//
// # Defining an experiment
//
// A Definition names itself, carries a version, and expands a preset into
// arms (a model and training config each, with labels that group them in
// tables and plots and the paper's numbers for the arm). Register it in an
// init function of one file; `wm list` and `wm run` then know it. See
// table1.go for the shape of one.
//
// Subpackages: data (tokenizers, embedded KJV, corpus loader, packing, MQAR,
// passkey), train (AdamW, schedule, checkpoints, resume, throughput) and
// eval (sliding-window perplexity, MQAR and passkey accuracy).
package experiments
