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
