// Package notebooks will hold thin, runnable walkthroughs that import the
// library and call it, each with a smoke test that runs the same path.
package notebooks
