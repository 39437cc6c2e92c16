package graph

import (
	"fmt"

	"github.com/pkg/errors"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/wonderful-matrices/wonderful-matrices-go/layers"
	"github.com/wonderful-matrices/wonderful-matrices-go/ops"
)

// Block is one residual sublayer x = x + Layer(rmsnorm(x; Norm)) (SPEC §4).
type Block struct {
	Letter byte
	Norm   *layers.Param
	Layer  layers.Sublayer
}

// Model is embedding → blocks → final RMSNorm → LM head (SPEC §4), with its
// parameters. New makes the shapes; Init draws the values.
type Model struct {
	// Config is the resolved config the model was made from.
	Config    Config
	Blocks    []Block
	Embed     *layers.Param
	FinalNorm *layers.Param
	// Head is the LM head [d_model, vocab]; nil when tied to Embed.
	Head   *layers.Param
	params layers.Params
}

// New validates cfg and makes the model's layers and parameter shapes (no
// values yet: see Init).
func New(cfg Config) (*Model, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	c := cfg.Resolved()
	letters, _ := c.Letters()
	shape := layers.Shape{DModel: c.DModel, NLayers: len(letters)}
	m := &Model{Config: c}
	m.Embed = layers.EmbeddingTable("embed", c.Vocab, c.DModel)
	m.params = append(m.params, m.Embed)
	for i, l := range letters {
		name := fmt.Sprintf("blocks.%d.%c", i, l)
		layer, err := newSublayer(l, name, c, shape)
		if err != nil {
			return nil, err
		}
		blk := Block{Letter: l, Norm: layers.NormWeight(name+".norm", c.DModel), Layer: layer}
		m.Blocks = append(m.Blocks, blk)
		m.params = append(m.params, blk.Norm)
		m.params = append(m.params, blk.Layer.Params()...)
	}
	m.FinalNorm = layers.NormWeight("norm", c.DModel)
	m.params = append(m.params, m.FinalNorm)
	if !c.TieEmbeddings {
		m.Head = layers.LinearWeight("lm_head", 1, c.DModel, c.Vocab)
		m.params = append(m.params, m.Head)
	}
	seen := map[string]bool{}
	for _, p := range m.params {
		if seen[p.Name] {
			// A programming error in a layer: checkpoints and the optimiser
			// find parameters by name.
			return nil, errors.Errorf("model: two parameters are named %s", p.Name)
		}
		seen[p.Name] = true
	}
	return m, nil
}

// Params are every parameter in a fixed order: embedding, then per block
// its norm and layer, then the final norm and the head.
func (m *Model) Params() layers.Params { return m.params }

// Init draws every parameter from seed in dtype (Float32 for training,
// Float64 for gradient checks). The same config and seed give the same
// weights to the bit.
func (m *Model) Init(dtype tensor.Dtype, seed int64) error {
	return errors.Wrap(m.params.Initialize(dtype, seed), "model init")
}

// Dtype is the dtype of the parameters' values (after Init or Load).
func (m *Model) Dtype() tensor.Dtype {
	if m.Embed.Value == nil {
		return tensor.Float32
	}
	return m.Embed.Value.Dtype()
}

// Forward builds the logits [b,t,vocab] for ids [b,t] (token ids stored as
// floats). With a non-nil st it continues decoding from st, whose tokens
// come before ids.
func (m *Model) Forward(b *layers.Builder, ids *G.Node, st *DecodeState) *G.Node {
	return b.Must(ops.Linear(m.hidden(b, ids, st), m.headWeight(b)))
}

// hidden builds the final normalised residual stream [b,t,d_model], the LM
// head's input, for ids as Forward takes them.
func (m *Model) hidden(b *layers.Builder, ids *G.Node, st *DecodeState) *G.Node {
	c := m.Config
	if st != nil && len(st.Layers) != len(m.Blocks) {
		b.Fail("decode state has %d layers, the model %d", len(st.Layers), len(m.Blocks))
	}
	x := b.Must(ops.Embedding(b.Node(m.Embed), ids)) // [b,t,d]
	for i, blk := range m.Blocks {
		var ls *layers.State
		if st != nil {
			ls = st.Layers[i]
		}
		// x + Layer(RMSNorm(x)), with x's two gradients summed inside the
		// norm's backward (ops.PreNorm), and the add inside the layer's
		// last op where the layer can do it (layers.Closer).
		h, res, err := ops.PreNorm(x, b.Node(blk.Norm), c.NormEps)
		h = b.Must(h, errors.Wrapf(err, "block %d", i))
		if cl, ok := blk.Layer.(layers.Closer); ok {
			x = cl.ForwardClosing(b, h, res, ls)
			continue
		}
		y, err := res.Add(blk.Layer.Forward(b, h, ls))
		x = b.Must(y, errors.Wrapf(err, "block %d (%s)", i, blk.Layer.Kind()))
	}
	return b.Must(ops.RMSNorm(x, b.Node(m.FinalNorm), c.NormEps))
}

// headWeight is the LM head's [d_model, vocab]: Head, or the embedding
// transposed when the two are tied.
func (m *Model) headWeight(b *layers.Builder) *G.Node {
	if m.Head == nil {
		return b.Must(G.Transpose(b.Node(m.Embed)))
	}
	return b.Node(m.Head)
}

// Loss builds the training objective for ids and targets [b,t] (a negative
// target is ignored): the mean cross-entropy ce, and total = ce plus the
// auxiliary (MoE load-balancing) losses. The head and the cross-entropy are
// one op (ops.LinearCrossEntropy), so the logits are not built whole where
// the head runs in row blocks.
func (m *Model) Loss(b *layers.Builder, ids, targets *G.Node) (total, ce *G.Node) {
	ce = b.Must(ops.LinearCrossEntropy(m.hidden(b, ids, nil), m.headWeight(b), targets, ops.ReduceMean))
	total = ce
	for _, a := range b.Aux() {
		total = b.Add(total, a)
	}
	return total, ce
}

// checkIDs returns ids [b][t] flattened as floats, or an error naming the
// first id outside the vocabulary or a ragged row.
func checkIDs(ids [][]int, vocab int) ([]float64, int, int, error) {
	if len(ids) == 0 || len(ids[0]) == 0 {
		return nil, 0, 0, errors.New("token ids: empty batch")
	}
	bs, t := len(ids), len(ids[0])
	flat := make([]float64, 0, bs*t)
	for i, row := range ids {
		if len(row) != t {
			return nil, 0, 0, errors.Errorf("token ids: row %d has %d tokens, row 0 has %d", i, len(row), t)
		}
		for j, id := range row {
			if id < 0 || id >= vocab {
				return nil, 0, 0, errors.Errorf("token ids: id %d at [%d,%d] is outside the vocabulary [0, %d)", id, i, j, vocab)
			}
			flat = append(flat, float64(id))
		}
	}
	return flat, bs, t, nil
}

// Logits runs the full-sequence forward pass on ids [b][t] and returns the
// logits [b,t,vocab] flattened, as float64.
func (m *Model) Logits(ids [][]int) ([]float64, error) {
	return m.run(ids, nil)
}

// run builds and runs the forward pass, decoding from st when it is non-nil.
func (m *Model) run(ids [][]int, st *DecodeState) (logits []float64, err error) {
	flat, bs, t, err := checkIDs(ids, m.Config.Vocab)
	if err != nil {
		return nil, err
	}
	if st != nil {
		defer func() {
			if err != nil {
				st.discard()
			}
		}()
	}
	b := layers.NewBuilder(m.Dtype())
	var out *G.Node
	if err := b.Run("forward", func() {
		out = m.Forward(b, b.Input("ids", flat, bs, t), st)
	}); err != nil {
		return nil, err
	}
	vm := ops.NewTapeMachine(b.G)
	defer vm.Close()
	if err := vm.RunAll(); err != nil {
		return nil, errors.Wrap(err, "forward: run")
	}
	if st != nil {
		if err := st.commit(t); err != nil {
			return nil, err
		}
	}
	logits = toFloat64(out.Value().Data())
	// The graph is used once: its kept output buffers (ops.reusedBuffer)
	// are dropped now rather than whenever the collector finds the graph.
	ops.ReleaseBuffers(b.G)
	return logits, nil
}

// toFloat64 copies a []float32 or []float64 buffer into a new []float64.
func toFloat64(data any) []float64 {
	switch d := data.(type) {
	case []float32:
		out := make([]float64, len(d))
		for i, v := range d {
			out[i] = float64(v)
		}
		return out
	case []float64:
		return append([]float64(nil), d...)
	}
	panic(fmt.Sprintf("graph: logits of type %T", data))
}
