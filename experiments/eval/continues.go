package eval

import (
	"github.com/pkg/errors"

	"github.com/wonderful-matrices/wonderful-matrices-go/graph"
)

// Continues says whether m, given prompt, predicts want token by token:
// one forward pass over prompt and want but its last token (teacher
// forcing), and the argmax after each position must be the next token of
// want. As long as every token is right this equals greedy decoding. It is
// the exact-answer check of passkey retrieval, and of a task of one's own
// (the lab's sums, the examples' counting).
func Continues(m *graph.Model, prompt, want []int) (bool, error) {
	if len(prompt) == 0 || len(want) == 0 {
		return false, errors.Errorf("continues: a prompt of %d and an answer of %d tokens, need at least one each", len(prompt), len(want))
	}
	ids := append(append([]int{}, prompt...), want[:len(want)-1]...)
	logits, err := m.Logits([][]int{ids})
	if err != nil {
		return false, err
	}
	v := len(logits) / len(ids)
	for j, w := range want {
		p := len(prompt) - 1 + j
		if graph.Argmax(logits[p*v:(p+1)*v]) != w {
			return false, nil
		}
	}
	return true, nil
}
