package eval

import (
	"math"

	"github.com/pkg/errors"

	"github.com/wonderful-matrices/wonderful-matrices-go/graph"
)

// SlidingWindowPPL is the perplexity of stream under m with a context window
// of window tokens moved stride tokens at a time (Press et al. 2022; CoCA
// Table 1 uses stride 512): the first window scores all its predictions,
// every later window only its last stride, so each token is predicted once
// with at least window−stride tokens of context. Windows start at 0,
// stride, 2·stride, … while they fit in the stream.
func SlidingWindowPPL(m *graph.Model, stream []int, window, stride int) (float64, error) {
	switch {
	case window < 2:
		return 0, errors.Errorf("sliding-window perplexity: window must be >= 2, got %d", window)
	case stride < 1 || stride > window:
		return 0, errors.Errorf("sliding-window perplexity: stride must be in [1, window %d], got %d", window, stride)
	case len(stream) < window+1:
		return 0, errors.Errorf("sliding-window perplexity: %d tokens, too few for a window of %d", len(stream), window)
	}
	var nll float64
	var n int
	for s := 0; s+window+1 <= len(stream); s += stride {
		ids, targets := stream[s:s+window], stream[s+1:s+window+1]
		from := window - stride
		if s == 0 {
			from = 0
		}
		logits, err := m.Logits([][]int{ids})
		if err != nil {
			return 0, errors.Wrapf(err, "sliding-window perplexity: window at %d", s)
		}
		v := len(logits) / window
		for p := from; p < window; p++ {
			nll += NLL(logits[p*v:(p+1)*v], targets[p])
			n++
		}
		afterForward(window)
	}
	return math.Exp(nll / float64(n)), nil
}

// NLL is −log softmax(logits)[target], computed stably.
func NLL(logits []float64, target int) float64 {
	mx := math.Inf(-1)
	for _, z := range logits {
		mx = math.Max(mx, z)
	}
	var s float64
	for _, z := range logits {
		s += math.Exp(z - mx)
	}
	return mx + math.Log(s) - logits[target]
}
