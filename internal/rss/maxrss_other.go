//go:build !unix

package rss

// maxRSSMB is not measured on systems without getrusage.
func maxRSSMB() float64 { return 0 }
