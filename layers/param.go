package layers

import (
	"math"
	"math/rand"

	"github.com/pkg/errors"
	"gorgonia.org/tensor"
)

// Param is one trainable tensor of a layer.
type Param struct {
	// Name is unique within a model, e.g. "blocks.3.S.x_proj".
	Name string
	// Shape is fixed at construction.
	Shape tensor.Shape
	// Decay says whether AdamW's weight decay applies (SPEC §5: not on norms,
	// biases or dynamic masks).
	Decay bool
	// Value is nil until Initialize; it holds float32 (models) or float64
	// (gradient checks) data.
	Value *tensor.Dense
	// init fills a float64 buffer of Shape's size.
	init func(r *rand.Rand, dst []float64)
}

// Size is the number of elements.
func (p *Param) Size() int { return p.Shape.TotalSize() }

// Data returns the value's backing slice ([]float32 or []float64).
func (p *Param) Data() any { return p.Value.Data() }

// Params is an ordered list of parameters.
type Params []*Param

// Count is the total number of elements.
func (ps Params) Count() int64 {
	var n int64
	for _, p := range ps {
		n += int64(p.Size())
	}
	return n
}

// Initialize draws every parameter's value, in order, from one random source
// seeded with seed, and stores it in dtype (tensor.Float32 or Float64). The
// draws are made in float64 and rounded, so a float64 model is the float32
// model's weights to within rounding.
func (ps Params) Initialize(dtype tensor.Dtype, seed int64) error {
	if dtype != tensor.Float32 && dtype != tensor.Float64 {
		return errors.Errorf("initialize: dtype %v, want float32 or float64", dtype)
	}
	r := rand.New(rand.NewSource(seed))
	for _, p := range ps {
		buf := make([]float64, p.Size())
		p.init(r, buf)
		p.Value = denseOf(dtype, buf, p.Shape)
	}
	return nil
}

// denseOf converts buf to a dense tensor of dtype and shape.
func denseOf(dtype tensor.Dtype, buf []float64, s tensor.Shape) *tensor.Dense {
	if dtype == tensor.Float64 {
		return tensor.New(tensor.WithShape(s.Clone()...), tensor.WithBacking(buf))
	}
	f := make([]float32, len(buf))
	for i, v := range buf {
		f[i] = float32(v)
	}
	return tensor.New(tensor.WithShape(s.Clone()...), tensor.WithBacking(f))
}

// InitStd is the standard deviation of linear weights (SPEC §3: N(0, 0.02)).
const InitStd = 0.02

// paramSet collects a layer's parameters under a name prefix.
type paramSet struct {
	prefix string
	list   Params
}

func (s *paramSet) add(name string, shape []int, decay bool, init func(*rand.Rand, []float64)) *Param {
	p := &Param{Name: s.prefix + name, Shape: tensor.Shape(shape).Clone(), Decay: decay, init: init}
	s.list = append(s.list, p)
	return p
}

// linear adds a weight [din, dout] drawn from N(0, InitStd·scale): scale is 1
// for input projections and OutScale for a mixer's or FFN's output.
func (s *paramSet) linear(name string, scale float64, shape ...int) *Param {
	return s.add(name, shape, true, normalInit(InitStd*scale))
}

// OutScale is the factor of output projections, 1/sqrt(2·n_layers) (SPEC §3,
// GPT-2's residual scaling), n_layers being the model's sublayer count.
func OutScale(nLayers int) float64 {
	if nLayers < 1 {
		return 1
	}
	return 1 / math.Sqrt(2*float64(nLayers))
}

func normalInit(std float64) func(*rand.Rand, []float64) {
	return func(r *rand.Rand, dst []float64) {
		for i := range dst {
			dst[i] = std * r.NormFloat64()
		}
	}
}

func constInit(v float64) func(*rand.Rand, []float64) {
	return func(_ *rand.Rand, dst []float64) {
		for i := range dst {
			dst[i] = v
		}
	}
}

func uniformInit(lo, hi float64) func(*rand.Rand, []float64) {
	return func(r *rand.Rand, dst []float64) {
		for i := range dst {
			dst[i] = lo + (hi-lo)*r.Float64()
		}
	}
}

// NewParam is a parameter of shape drawn by init (Normal, or any function
// that fills a float64 buffer of the parameter's size), with AdamW's weight
// decay when decay is set: for a layer defined outside this package.
func NewParam(name string, decay bool, init func(r *rand.Rand, dst []float64), shape ...int) *Param {
	return &Param{Name: name, Shape: tensor.Shape(append([]int{}, shape...)), Decay: decay, init: init}
}

// Normal draws every element from N(0, std²): InitStd for a weight (SPEC
// §3), InitStd·OutScale for an output projection.
func Normal(std float64) func(r *rand.Rand, dst []float64) { return normalInit(std) }

// NormWeight is an RMSNorm weight of size n, initialised to ones, without
// weight decay.
func NormWeight(name string, n int) *Param {
	return &Param{Name: name, Shape: tensor.Shape{n}, init: constInit(1)}
}

// EmbeddingTable is a token embedding [vocab, d] drawn from N(0, InitStd).
func EmbeddingTable(name string, vocab, d int) *Param {
	return &Param{Name: name, Shape: tensor.Shape{vocab, d}, Decay: true, init: normalInit(InitStd)}
}

// LinearWeight is a weight [din, dout] drawn from N(0, InitStd·scale).
func LinearWeight(name string, scale float64, din, dout int) *Param {
	return &Param{Name: name, Shape: tensor.Shape{din, dout}, Decay: true, init: normalInit(InitStd * scale)}
}
