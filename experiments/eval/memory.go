package eval

import (
	"runtime"
	"runtime/debug"
)

// longWindow is the length from which an evaluation returns the memory of
// each forward pass before the next: CoCA's and attention's scores grow as
// the square of the length (about 1 GiB a layer at 8192 tokens and 4
// heads), and the collector, paced by the heap of the last collection,
// would otherwise let several passes' garbage pile up.
const longWindow = 1024

// afterForward returns the memory of a forward pass over n tokens to the
// system when n is long: two collections, because sync.Pools (the ops'
// scratch pools, Gorgonia's own) keep what they hold through one, and
// objects in them still reach the pass's buffers; then a scavenge. That is
// milliseconds against the seconds such a pass takes.
func afterForward(n int) {
	if n >= longWindow {
		runtime.GC()
		debug.FreeOSMemory()
	}
}
