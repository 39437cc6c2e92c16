package layers

import (
	"math"
	"math/rand"

	"github.com/pkg/errors"
	G "gorgonia.org/gorgonia"

	"github.com/wonderful-matrices/wonderful-matrices-go/ops"
)

// Mamba2Config configures the Mamba2 block (letter B), the mixer of the
// Mamba2 and Jamba baselines.
type Mamba2Config struct {
	// Expand is d_inner/d_model (default 2).
	Expand int `json:"expand,omitempty"`
	// Heads (0: the model's heads); head dim d_inner/heads.
	Heads int `json:"heads,omitempty"`
	// DState is n (default 16).
	DState int `json:"d_state,omitempty"`
	// Groups of B and C (default 1).
	Groups int `json:"groups,omitempty"`
	// ChunkLen of the scan (default 64).
	ChunkLen int `json:"chunk_len,omitempty"`
	// ConvKernel (default 4).
	ConvKernel int `json:"conv_kernel,omitempty"`
}

// Resolved fills in the defaults.
func (c Mamba2Config) Resolved(modelHeads int) Mamba2Config {
	if c.Expand == 0 {
		c.Expand = 2
	}
	if c.Heads == 0 {
		c.Heads = modelHeads
	}
	resolveScan(&c.DState, &c.Groups, &c.ChunkLen, &c.ConvKernel)
	return c
}

// Validate checks a resolved config against d_model.
func (c Mamba2Config) Validate(field string, dModel int) error {
	di := c.Expand * dModel
	switch {
	case c.Expand < 1:
		return errors.Errorf("%s.expand: must be >= 1, got %d", field, c.Expand)
	case c.Heads < 1 || di%c.Heads != 0:
		return errors.Errorf("%s.heads: %d does not divide d_inner = expand·d_model = %d", field, c.Heads, di)
	case c.DState < 1:
		return errors.Errorf("%s.d_state: must be >= 1, got %d", field, c.DState)
	case c.Groups < 1 || c.Heads%c.Groups != 0:
		return errors.Errorf("%s.groups: %d does not divide heads %d", field, c.Groups, c.Heads)
	case c.ChunkLen < 1:
		return errors.Errorf("%s.chunk_len: must be >= 1, got %d", field, c.ChunkLen)
	case c.ConvKernel < 2:
		return errors.Errorf("%s.conv_kernel: must be >= 2, got %d", field, c.ConvKernel)
	}
	return nil
}

// Mamba2 is the Mamba2 block (SPEC §3; Dao & Gu 2024, Mamba2's
// `Mamba2` module): in_proj to z, x, B, C, dt (one weight each, the same
// parameters as Mamba2's fused in_proj), depthwise causal conv + SiLU on x,
// B and C, the SSD scan with D, the gated RMSNorm norm(y)·silu(z) of SPEC §3,
// and out_proj. A_log starts as log U(1, 16), Mamba2's A_init_range.
type Mamba2 struct {
	cfg                       Mamba2Config
	shape                     Shape
	di, p                     int
	params                    paramSet
	wz, wx, wb, wc, wdt, wout *Param
	convX, convB, convC       *Param
	dtBias, aLog, d, norm     *Param
}

// NewMamba2 makes the block; cfg must be resolved and valid.
func NewMamba2(name string, cfg Mamba2Config, shape Shape) *Mamba2 {
	d := shape.DModel
	di := cfg.Expand * d
	h, gn, k := cfg.Heads, cfg.Groups*cfg.DState, cfg.ConvKernel
	l := &Mamba2{cfg: cfg, shape: shape, di: di, p: di / h, params: paramSet{prefix: name + "."}}
	ps := &l.params
	l.wz = ps.linear("z_proj", 1, d, di)
	l.wx = ps.linear("x_proj", 1, d, di)
	l.wb = ps.linear("B_proj", 1, d, gn)
	l.wc = ps.linear("C_proj", 1, d, gn)
	l.wdt = ps.linear("dt_proj", 1, d, h)
	l.convX = ps.add("conv_x", []int{di, k}, true, convInit(k))
	l.convB = ps.add("conv_B", []int{gn, k}, true, convInit(k))
	l.convC = ps.add("conv_C", []int{gn, k}, true, convInit(k))
	l.dtBias = ps.add("dt_bias", []int{h}, false, dtBiasInit)
	l.aLog = ps.add("A_log", []int{h}, false, func(r *rand.Rand, dst []float64) {
		for i := range dst {
			dst[i] = math.Log(1 + 15*r.Float64())
		}
	})
	l.d = ps.add("D", []int{h}, false, constInit(1))
	l.norm = ps.add("gate_norm", []int{di}, false, constInit(1))
	l.wout = ps.linear("out_proj", OutScale(shape.NLayers), di, d)
	return l
}

// Kind is "mamba2".
func (l *Mamba2) Kind() string { return "mamba2" }

// Params lists the layer's parameters.
func (l *Mamba2) Params() Params { return l.params.list }

// Forward builds y [b,t,d_model]; when decoding it continues from the conv
// inputs and SSD state in st.
func (l *Mamba2) Forward(b *Builder, x *G.Node, st *State) *G.Node {
	return linear(b, l.gated(b, x, st), l.wout)
}

// ForwardClosing builds the block's output x + Forward(b, h, st), the
// residual added by the output projection's op (ops.Residual.Linear;
// Closer).
func (l *Mamba2) ForwardClosing(b *Builder, h *G.Node, r *ops.Residual, st *State) *G.Node {
	return b.Must(r.Linear(l.gated(b, h, st), b.Node(l.wout)))
}

// gated is the scan's output, normed and gated by z [b,t,d_inner]: the
// output projection's input.
func (l *Mamba2) gated(b *Builder, x *G.Node, st *State) *G.Node {
	bs, t := dims(b, x, "mamba2", l.shape.DModel)
	c := l.cfg
	h, g, n, k := c.Heads, c.Groups, c.DState, c.ConvKernel
	z := linear(b, x, l.wz)
	X := causalConv(b, st, "conv_x", linear(b, x, l.wx), l.convX, k)
	B, C, dt := narrowProjections(b, x, l.wb, l.wc, l.wdt, l.dtBias)
	B = causalConv(b, st, "conv_B", B, l.convB, k)
	C = causalConv(b, st, "conv_C", C, l.convC, k)
	in := ops.SSDInputs{
		X:  b.Reshape(X, bs, t, h, l.p),
		DT: dt,
		A:  decay(b, l.aLog),
		B:  b.Reshape(B, bs, t, g, n), // [b,t,g,n]: the scan reads head i's group i/(h/g)
		C:  b.Reshape(C, bs, t, g, n),
		D:  b.Node(l.d),
	}
	y := b.Reshape(ssdScan(b, st, in, c.ChunkLen, bs, h, l.p, n), bs, t, l.di)
	y = b.Must(ops.RMSNorm(y, b.Node(l.norm), ops.DefaultRMSNormEps))
	return b.Must(ops.GatedSiLU(y, z))
}
