package eval

import (
	"github.com/pkg/errors"

	"github.com/wonderful-matrices/wonderful-matrices-go/experiments/data"
	"github.com/wonderful-matrices/wonderful-matrices-go/graph"
)

// PasskeyAccuracy is the share of examples whose key m retrieves greedily:
// after the prompt and the answer prefix, the argmax of every step is the
// next digit of the key. One forward pass with the key appended gives every
// step's argmax at once (teacher forcing equals greedy decoding as long as
// each digit is right). This is stricter than CoCA B.1, which looks for the
// key anywhere in 64 generated tokens: here it must come first.
func PasskeyAccuracy(m *graph.Model, tok data.Tokenizer, examples []data.PasskeyExample) (float64, error) {
	if len(examples) == 0 {
		return 0, errors.New("passkey accuracy: no examples")
	}
	right := 0
	for i, ex := range examples {
		prompt := append([]int{data.BOS}, tok.Encode(ex.Prompt+data.PasskeyAnswerPrefix)...)
		key := tok.Encode(ex.Key)
		ok, err := Continues(m, prompt, key)
		if err != nil {
			return 0, errors.Wrapf(err, "passkey accuracy: example %d (%d tokens)", i, len(prompt)+len(key))
		}
		if ok {
			right++
		}
		afterForward(len(prompt) + len(key))
	}
	return float64(right) / float64(len(examples)), nil
}
