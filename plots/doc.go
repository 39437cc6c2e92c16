// Package plots draws the figures of an experiment's report with gonum/plot,
// each as PNG and SVG: line plots (perplexity against step, throughput
// against sequence length, accuracy against d_model, perplexity against
// evaluation length on log axes) and grouped bars (measured beside the
// paper). It takes plain numbers and imports nothing else of the project
// but the atomic file writer, so a crash never leaves half a figure.
//
// Log axes drop the points they cannot show (zero, negative, NaN or
// infinite values: gonum/plot's log scale panics on them) and say so in the
// figure's title.
package plots
