package layers

import (
	"fmt"
	"sort"

	"github.com/pkg/errors"
	G "gorgonia.org/gorgonia"

	"github.com/wonderful-matrices/wonderful-matrices-go/ops"
)

// SSDConfig configures the SSD mixer (letter S) of listing 4 of Wonderful
// Matrices. The zero value of a field means its default.
type SSDConfig struct {
	// Variant is one of the named positional variants of Table 1 ("rope",
	// the default; "conv1d+D"; "a_t") or "custom" to use Conv, D and Rope.
	Variant string `json:"variant,omitempty"`
	// Conv, D and Rope are the independent positional switches, read only
	// when Variant is "custom".
	Conv bool `json:"conv,omitempty"`
	D    bool `json:"d,omitempty"`
	Rope bool `json:"rope,omitempty"`
	// Heads is h (0: the model's heads); the head dim is d_model/h.
	Heads int `json:"heads,omitempty"`
	// DState is n (default 16).
	DState int `json:"d_state,omitempty"`
	// Groups of B and C (default 1), each shared by heads/groups heads.
	Groups int `json:"groups,omitempty"`
	// ChunkLen of the chunked scan (default 64).
	ChunkLen int `json:"chunk_len,omitempty"`
	// ConvKernel of the conv switch (default 4).
	ConvKernel int `json:"conv_kernel,omitempty"`
}

// SSDVariants maps the variant names of Wonderful Matrices Table 1 to the
// switches (conv, D, rope) of SPEC §3.
var SSDVariants = map[string][3]bool{
	"conv1d+D": {true, true, false},
	"a_t":      {false, false, false},
	"rope":     {false, true, true},
}

// SSDVariantNames lists the valid values of SSDConfig.Variant.
func SSDVariantNames() []string {
	names := []string{"custom"}
	for n := range SSDVariants {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Resolved returns c with defaults filled in (modelHeads for Heads) and the
// switches set from the variant.
func (c SSDConfig) Resolved(modelHeads int) SSDConfig {
	if c.Variant == "" {
		c.Variant = "rope"
	}
	if sw, ok := SSDVariants[c.Variant]; ok {
		c.Conv, c.D, c.Rope = sw[0], sw[1], sw[2]
	}
	if c.Heads == 0 {
		c.Heads = modelHeads
	}
	resolveScan(&c.DState, &c.Groups, &c.ChunkLen, &c.ConvKernel)
	return c
}

// Validate checks a resolved config against d_model; field names in errors
// are prefixed by field (e.g. "ssd").
func (c SSDConfig) Validate(field string, dModel int) error {
	if _, ok := SSDVariants[c.Variant]; !ok && c.Variant != "custom" {
		return errors.Errorf("%s.variant: %q is not one of %v", field, c.Variant, SSDVariantNames())
	}
	switch {
	case c.Heads < 1 || dModel%c.Heads != 0:
		return errors.Errorf("%s.heads: %d does not divide d_model %d", field, c.Heads, dModel)
	case c.DState < 1:
		return errors.Errorf("%s.d_state: must be >= 1, got %d", field, c.DState)
	case c.Rope && c.DState%2 != 0:
		return errors.Errorf("%s.d_state: RoPE on B and C needs an even d_state, got %d", field, c.DState)
	case c.Groups < 1 || c.Heads%c.Groups != 0:
		return errors.Errorf("%s.groups: %d does not divide heads %d", field, c.Groups, c.Heads)
	case c.ChunkLen < 1:
		return errors.Errorf("%s.chunk_len: must be >= 1, got %d", field, c.ChunkLen)
	case c.Conv && c.ConvKernel < 2:
		return errors.Errorf("%s.conv_kernel: must be >= 2, got %d", field, c.ConvKernel)
	}
	return nil
}

// SSD is the state-space-duality mixer of listing 4 of Wonderful Matrices
// with the positional switches of Table 1 (SPEC §3):
//
//	X = x W_X [h·p], B = x W_B, C = x W_C [g·n → h heads], dt = softplus(x W_dt + dt_bias)
//	(conv: X, B, C ← silu(conv1d(·)));  (rope: B, C ← RoPE(B), RoPE(C))
//	y = ssd(X, dt, A = -exp(A_log), B, C, D if on) W_out
type SSD struct {
	cfg                   SSDConfig
	shape                 Shape
	rope                  ops.RopeConfig
	p                     int
	params                paramSet
	wx, wb, wc, wdt, wout *Param
	dtBias, aLog, d       *Param
	convX, convB, convC   *Param
}

// NewSSD makes the layer; cfg must be resolved and valid. rope is the
// model's RoPE (base, no NTK by default).
func NewSSD(name string, cfg SSDConfig, shape Shape, rope ops.RopeConfig) *SSD {
	l := &SSD{cfg: cfg, shape: shape, rope: rope, p: shape.DModel / cfg.Heads, params: paramSet{prefix: name + "."}}
	d, h, gn := shape.DModel, cfg.Heads, cfg.Groups*cfg.DState
	ps := &l.params
	l.wx = ps.linear("x_proj", 1, d, h*l.p)
	l.wb = ps.linear("B_proj", 1, d, gn)
	l.wc = ps.linear("C_proj", 1, d, gn)
	l.wdt = ps.linear("dt_proj", 1, d, h)
	l.dtBias = ps.add("dt_bias", []int{h}, false, dtBiasInit)
	l.aLog = ps.add("A_log", []int{h}, false, aLogRange)
	if cfg.D {
		l.d = ps.add("D", []int{h}, false, constInit(1))
	}
	if cfg.Conv {
		k := cfg.ConvKernel
		l.convX = ps.add("conv_x", []int{h * l.p, k}, true, convInit(k))
		l.convB = ps.add("conv_B", []int{gn, k}, true, convInit(k))
		l.convC = ps.add("conv_C", []int{gn, k}, true, convInit(k))
	}
	l.wout = ps.linear("out_proj", OutScale(shape.NLayers), h*l.p, d)
	return l
}

// Kind names the layer and its variant, e.g. "ssd(rope)".
func (l *SSD) Kind() string { return fmt.Sprintf("ssd(%s)", l.cfg.Variant) }

// Params lists the layer's parameters.
func (l *SSD) Params() Params { return l.params.list }

// Forward builds y [b,t,d_model] for x [b,t,d_model].
func (l *SSD) Forward(b *Builder, x *G.Node, st *State) *G.Node {
	return linear(b, l.heads(b, x, st), l.wout)
}

// ForwardClosing builds the block's output x + Forward(b, h, st), the
// residual added by the output projection's op (ops.Residual.Linear;
// Closer).
func (l *SSD) ForwardClosing(b *Builder, h *G.Node, r *ops.Residual, st *State) *G.Node {
	return b.Must(r.Linear(l.heads(b, h, st), b.Node(l.wout)))
}

// heads is the scan's output [b,t,h·p], the output projection's input.
func (l *SSD) heads(b *Builder, x *G.Node, st *State) *G.Node {
	bs, t := dims(b, x, l.Kind(), l.shape.DModel)
	c := l.cfg
	h, g, n := c.Heads, c.Groups, c.DState
	X := linear(b, x, l.wx)
	in := ops.SSDInputs{A: decay(b, l.aLog)}
	if c.D {
		in.D = b.Node(l.d)
	}
	if !c.Conv && st == nil {
		// Training and evaluation: B, C and dt taken apart, rotated and
		// made positive in one node (ops.SSDNarrow), the same values.
		var rope *ops.RopeConfig
		if c.Rope {
			rope = &l.rope
		}
		all := b.Must(ops.LinearCat(x, b.Node(l.wb), b.Node(l.wc), b.Node(l.wdt)))
		in.Narrow = b.Must(ops.SSDNarrow(all, b.Node(l.dtBias), g, n, rope))
	} else {
		B, C, dt := narrowProjections(b, x, l.wb, l.wc, l.wdt, l.dtBias)
		if c.Conv {
			X = causalConv(b, st, "conv_x", X, l.convX, c.ConvKernel)
			B = causalConv(b, st, "conv_B", B, l.convB, c.ConvKernel)
			C = causalConv(b, st, "conv_C", C, l.convC, c.ConvKernel)
		}
		B, C = b.Reshape(B, bs, t, g, n), b.Reshape(C, bs, t, g, n) // [b,t,g,n]
		if c.Rope {
			r := ropeAt(l.rope, st)
			B, C = b.Must(ops.Rope(B, r)), b.Must(ops.Rope(C, r))
		}
		in.DT = dt        // [b,t,h]
		in.B, in.C = B, C // [b,t,g,n]: the scan reads head i's group i/(h/g)
	}
	in.X = b.Reshape(X, bs, t, h, l.p) // [b,t,h,p]
	y := ssdScan(b, st, in, c.ChunkLen, bs, h, l.p, n)
	return b.Reshape(y, bs, t, h*l.p)
}

// ssdScan runs the chunked scan; when decoding it starts from the state's
// "ssm" tensor [b,h,p,n] and keeps the final state.
func ssdScan(b *Builder, st *State, in ops.SSDInputs, chunk, bs, h, p, n int) *G.Node {
	if st != nil {
		in.H0 = st.Get(b, "ssm", bs, h, p, n)
		st.Set("ssm", b.Must(ops.SSDFinalState(in, chunk)))
	}
	return b.Must(ops.SSD(in, chunk))
}
