package ops

import (
	"github.com/pkg/errors"
	G "gorgonia.org/gorgonia"
)

func init() {
	goldenBuilders["rmsnorm"] = func(in map[string]*G.Node, a attrReader) (*G.Node, error) {
		eps, err := a.float("eps", DefaultRMSNormEps)
		if err != nil {
			return nil, err
		}
		return RMSNorm(in["x"], in["w"], eps)
	}
	goldenBuilders["cross_entropy"] = func(in map[string]*G.Node, a attrReader) (*G.Node, error) {
		red, err := a.string("reduction", string(ReduceMean))
		if err != nil {
			return nil, err
		}
		return CrossEntropy(in["logits"], in["targets"], Reduction(red))
	}
	goldenBuilders["conv1d_causal"] = func(in map[string]*G.Node, a attrReader) (*G.Node, error) {
		k, err := a.int("kernel", 0)
		if err != nil {
			return nil, err
		}
		if k != 0 && in["w"].Shape()[1] != k {
			return nil, errors.Errorf("attribute kernel=%d but w is %v", k, in["w"].Shape())
		}
		return Conv1DCausal(in["x"], in["w"], in["bias"])
	}
}

func init() {
	goldenBuilders["ssd"] = func(in map[string]*G.Node, a attrReader) (*G.Node, error) {
		chunk, err := a.int("chunk_len", 0)
		if err != nil {
			return nil, err
		}
		return SSD(SSDInputs{X: in["x"], DT: in["dt"], A: in["A"], B: in["B"], C: in["C"], D: in["D"], H0: in["H0"]}, chunk)
	}
}

func init() {
	goldenBuilders["attention"] = func(in map[string]*G.Node, a attrReader) (*G.Node, error) {
		cfg := AttentionConfig{Mask: MaskNone}
		dm, err := a.bool("dynamic_mask")
		if err != nil {
			return nil, err
		}
		kind, err := a.string("mask_kind", string(MaskPaper))
		if err != nil {
			return nil, err
		}
		var mask *G.Node
		if dm {
			cfg.Mask = MaskKind(kind)
			mask = in["dyn"]
			if cfg.Mask == MaskDoge {
				mask = in["bias"]
			}
		}
		if cfg.LogNTrainLen, err = a.int("logn_train_len", 0); err != nil {
			return nil, err
		}
		return Attention(in["q"], in["k"], in["v"], mask, cfg)
	}
}

func init() {
	goldenBuilders["inner_func_value"] = func(in map[string]*G.Node, a attrReader) (*G.Node, error) {
		k, err := a.int("k", 1)
		if err != nil {
			return nil, err
		}
		return InnerFuncValue(in["x"], in["Wq"], in["Kv"], in["E"], k)
	}
}

func init() {
	goldenBuilders["coca_scores"] = func(in map[string]*G.Node, a attrReader) (*G.Node, error) {
		c := DefaultRope()
		var err error
		if c.Base, err = a.float("base", c.Base); err != nil {
			return nil, err
		}
		if c.MaxPosition, err = a.int("max_position", 0); err != nil {
			return nil, err
		}
		if c.ScalingFactor, err = a.float("scaling_factor", 1); err != nil {
			return nil, err
		}
		return CocaScores(in["q"], in["t"], c)
	}
}

func init() {
	goldenBuilders["cdmoe"] = func(in map[string]*G.Node, a attrReader) (*G.Node, error) {
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
		return CDMoE(CDMoEInputs{X: in["x"], Wup: in["Wup"], Wdown: in["Wdown"], Wq: in["Wq"], Keys: in["keys"], Edown: in["Edown"], Eup: in["Eup"]}, cfg)
	}
}
