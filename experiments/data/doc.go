// Package data holds the data of SPEC §6: tokenizers (byte-level by
// default), the embedded King James Bible and its deterministic
// train/validation split, a loader for a user's corpus (.txt, .txt.gz,
// .jsonl with a "text" field, or a folder of them) with errors that name the
// file and line, packing into fixed-length sequences, and the synthetic
// MQAR and passkey tasks.
package data
