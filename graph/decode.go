package graph

import (
	"fmt"

	"github.com/wonderful-matrices/wonderful-matrices-go/layers"
)

// DecodeState is a model's decoding memory: one layers.State per block (SSD
// and Mamba2 states and conv inputs, attention KV caches) and the number of
// tokens seen.
type DecodeState struct {
	Pos    int
	Layers []*layers.State
}

// NewDecodeState returns the empty state (no tokens seen) of m.
func (m *Model) NewDecodeState() *DecodeState {
	st := &DecodeState{Layers: make([]*layers.State, len(m.Blocks))}
	for i := range st.Layers {
		st.Layers[i] = layers.NewState(fmt.Sprintf("state.%d", i))
	}
	return st
}

func (st *DecodeState) commit(t int) error {
	for _, l := range st.Layers {
		if err := l.Commit(t); err != nil {
			return err
		}
	}
	st.Pos += t
	return nil
}

func (st *DecodeState) discard() {
	for _, l := range st.Layers {
		l.Discard()
	}
}

// Bytes is the memory the state holds.
func (st *DecodeState) Bytes() int {
	n := 0
	for _, l := range st.Layers {
		n += l.Bytes()
	}
	return n
}

// Step feeds ids [b][t] (the next t tokens of each of b sequences) after
// the tokens in st and returns their logits [b,t,vocab], flattened. st is
// advanced by t. A step's cost is constant in the tokens seen for SSD and
// Mamba2 layers and linear for attention (its KV cache).
func (m *Model) Step(st *DecodeState, ids [][]int) ([]float64, error) {
	return m.run(ids, st)
}
