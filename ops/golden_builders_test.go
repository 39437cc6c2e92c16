package ops

import (
	"github.com/pkg/errors"
	G "gorgonia.org/gorgonia"
)

// firstOf returns the first of the named inputs the case has, or nil.
func firstOf(in map[string]*G.Node, names ...string) *G.Node {
	for _, n := range names {
		if v, ok := in[n]; ok {
			return v
		}
	}
	return nil
}

func init() {
	goldenBuilders["rmsnorm"] = func(in map[string]*G.Node, a attrReader) (outputs, error) {
		eps, err := a.float("eps", DefaultRMSNormEps)
		if err != nil {
			return nil, err
		}
		return one(RMSNorm(in["x"], in["w"], eps))
	}
	goldenBuilders["cross_entropy"] = func(in map[string]*G.Node, a attrReader) (outputs, error) {
		red, err := a.string("reduction", string(ReduceMean))
		if err != nil {
			return nil, err
		}
		return one(CrossEntropy(in["logits"], in["targets"], Reduction(red)))
	}
	goldenBuilders["conv1d_causal"] = func(in map[string]*G.Node, a attrReader) (outputs, error) {
		k, err := a.int("kernel", 0)
		if err != nil {
			return nil, err
		}
		if k != 0 && in["w"].Shape()[1] != k {
			return nil, errors.Errorf("attribute kernel=%d but w is %v", k, in["w"].Shape())
		}
		return one(Conv1DCausal(in["x"], in["w"], in["bias"]))
	}
}

func init() {
	goldenBuilders["ssd"] = func(in map[string]*G.Node, a attrReader) (outputs, error) {
		chunk, err := a.int("chunk_len", 0)
		if err != nil {
			return nil, err
		}
		h0 := firstOf(in, "H0", "h0", "initial_state", "state0")
		ssdIn := SSDInputs{X: in["x"], DT: in["dt"], A: in["A"], B: in["B"], C: in["C"], D: in["D"], H0: h0}
		y, err := SSD(ssdIn, chunk)
		if err != nil {
			return nil, err
		}
		state, err := SSDFinalState(ssdIn, chunk)
		if err != nil {
			return nil, err
		}
		return outputs{"y": y, "state": state, "final_state": state}, nil
	}
}

func init() {
	goldenBuilders["attention"] = func(in map[string]*G.Node, a attrReader) (outputs, error) {
		cfg := AttentionConfig{Mask: MaskNone}
		var err error
		// dynamic_mask is a bool (the paper's mask) or a mask kind by name.
		dm, kind := false, string(MaskPaper)
		if s, err := a.string("dynamic_mask", ""); err == nil {
			dm, kind = s != "" && s != string(MaskNone), s
		} else if dm, err = a.bool("dynamic_mask"); err != nil {
			return nil, err
		}
		if k, err := a.string("mask_kind", ""); err != nil {
			return nil, err
		} else if k != "" {
			kind = k
		}
		var mask *G.Node
		if dm {
			cfg.Mask = MaskKind(kind)
			mask = firstOf(in, "dyn", "l", "dynamic_mask", "mask")
			if cfg.Mask == MaskDoge {
				mask = firstOf(in, "bias", "dyn", "mask")
			}
		}
		if cfg.LogNTrainLen, err = a.int("logn_train_len", 0); err != nil {
			return nil, err
		}
		return one(Attention(in["q"], in["k"], in["v"], mask, cfg))
	}
}

func init() {
	goldenBuilders["inner_func_value"] = func(in map[string]*G.Node, a attrReader) (outputs, error) {
		k, err := a.int("k", 1)
		if err != nil {
			return nil, err
		}
		return one(InnerFuncValue(in["x"], in["Wq"], in["Kv"], in["E"], k))
	}
}

func init() {
	goldenBuilders["coca_scores"] = func(in map[string]*G.Node, a attrReader) (outputs, error) {
		c, err := ropeFromAttrs(a)
		if err != nil {
			return nil, err
		}
		return one(CocaScores(in["q"], in["t"], c))
	}
}

func init() {
	goldenBuilders["cdmoe"] = func(in map[string]*G.Node, a attrReader) (outputs, error) {
		var cfg CDMoEConfig
		var err error
		if cfg.Heads, err = a.int("n_heads", 1); err != nil {
			return nil, err
		}
		if cfg.K, err = a.int("k", 1); err != nil {
			return nil, err
		}
		if cfg.Act, err = a.string("act", "silu"); err != nil {
			return nil, err
		}
		return one(CDMoE(CDMoEInputs{X: in["x"], Wup: in["Wup"], Wdown: in["Wdown"], Wq: in["Wq"], Keys: in["keys"], Edown: in["Edown"], Eup: in["Eup"]}, cfg))
	}
}
