//go:build !unix

package wmcli

// peakRSSMB is not measured on systems without getrusage.
func peakRSSMB() float64 { return 0 }
