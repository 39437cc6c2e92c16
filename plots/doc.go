// Package plots will render saved results (perplexity curves, bars beside
// the papers' numbers, throughput and extrapolation plots) with gonum/plot.
// It reads results and imports nothing else of the project.
package plots

// gonum/plot v0.14.0 is the version checked to build beside Gorgonia here
// (GORGONIA-NOTES); importing it keeps that version pinned in go.mod until
// the renderers land.
import _ "gonum.org/v1/plot"
