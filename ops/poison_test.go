package ops

// Every test of the package runs with scratchUninit's buffers full of NaN.
func init() { poisonUninitScratch = true }
