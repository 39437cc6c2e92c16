package layers

import (
	"fmt"

	"github.com/pkg/errors"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// State is one sublayer's decoding memory: named tensors (an SSD state, the
// last conv inputs, a key/value cache) and the position of the next token.
// Within one step a layer reads a tensor with Get and hands over its
// successor with Set; Commit stores the successors once the graph has run.
type State struct {
	// Pos is the number of tokens seen so far.
	Pos int
	// Name prefixes the state's input nodes (unique within a model).
	Name    string
	values  map[string]*tensor.Dense
	pending map[string]*G.Node
	steps   int
}

// NewState returns an empty state (no tokens seen).
func NewState(name string) *State {
	return &State{Name: name, values: map[string]*tensor.Dense{}, pending: map[string]*G.Node{}}
}

// Has says whether a tensor of that name is stored.
func (s *State) Has(key string) bool { _, ok := s.values[key]; return ok }

// Get returns the stored tensor key as an input node of b's graph; when
// there is none yet, a tensor of zeros of shape (the state before the first
// token).
func (s *State) Get(b *Builder, key string, shape ...int) *G.Node {
	v, ok := s.values[key]
	if !ok {
		v = tensor.New(tensor.Of(b.Dtype), tensor.WithShape(shape...))
	}
	return b.Value(fmt.Sprintf("%s.%s@%d", s.Name, key, s.steps), v)
}

// Set records n as the next value of key.
func (s *State) Set(key string, n *G.Node) { s.pending[key] = n }

// Commit stores the values the graph computed for the keys given to Set and
// advances Pos by t tokens. Call it after the graph has run.
func (s *State) Commit(t int) error {
	for key, n := range s.pending {
		v, ok := n.Value().(*tensor.Dense)
		if !ok || v == nil {
			return errors.Errorf("state %s.%s: the graph has not computed it (value %T)", s.Name, key, n.Value())
		}
		var c *tensor.Dense
		if v.IsView() {
			c = v.Materialize().(*tensor.Dense)
		} else {
			c = v.Clone().(*tensor.Dense)
		}
		s.values[key] = c
	}
	s.pending = map[string]*G.Node{}
	s.Pos += t
	s.steps++
	return nil
}

// Discard drops what Set recorded since the last Commit (a step that failed).
func (s *State) Discard() { s.pending = map[string]*G.Node{} }

// Bytes is the memory the stored tensors take, for state-size reports
// (zoology's state_size).
func (s *State) Bytes() int {
	n := 0
	for _, v := range s.values {
		n += int(v.MemSize())
	}
	return n
}
