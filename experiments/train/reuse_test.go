package train

import (
	"math/rand"
	"testing"

	"gorgonia.org/tensor"

	"github.com/wonderful-matrices/wonderful-matrices-go/graph"
	"github.com/wonderful-matrices/wonderful-matrices-go/layers"
	"github.com/wonderful-matrices/wonderful-matrices-go/ops"
)

// The fused ops keep their output buffers from one run to the next. A
// program that has already run on another batch must then give exactly what
// a freshly compiled one gives, and both what a program that never plans its
// buffers gives: the same loss and the same gradients, for every layer
// kind, in both dtypes.
func TestReusedBuffersMatchFreshProgram(t *testing.T) {
	const bs, seqLen = 2, 12
	cfg := graph.Config{Pattern: "S M A E I R H K B M", Vocab: 50, DModel: 16, Heads: 2, MaxPosition: 32,
		CDMoE: layers.CDMoEConfig{Experts: 64}, MoE: layers.MoEConfig{Experts: 4}}
	batch := func(seed int64) (ids, targets [][]int) {
		r := rand.New(rand.NewSource(seed))
		ids, targets = make([][]int, bs), make([][]int, bs)
		for i := range ids {
			ids[i], targets[i] = make([]int, seqLen), make([]int, seqLen)
			for j := range ids[i] {
				ids[i][j], targets[i][j] = r.Intn(cfg.Vocab), r.Intn(cfg.Vocab)
			}
		}
		return ids, targets
	}
	for _, dt := range []tensor.Dtype{tensor.Float64, tensor.Float32} {
		t.Run(dt.String(), func(t *testing.T) {
			m, err := graph.New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			if err := m.Init(dt, 3); err != nil {
				t.Fatal(err)
			}
			result := func(p *program, seed int64) (float64, [][]float64) {
				ids, targets := batch(seed)
				loss, _, err := p.run(ids, targets)
				if err != nil {
					t.Fatalf("%+v", err)
				}
				var grads [][]float64
				for _, g := range p.gradients() {
					grads = append(grads, toF64(g))
				}
				p.reset()
				return loss, grads
			}
			reused, err := compile(m, bs, seqLen, true)
			if err != nil {
				t.Fatalf("%+v", err)
			}
			lossA, _ := result(reused, 1)
			lossB, gradsB := result(reused, 2)
			if len(reused.plans) != 1 || reused.plans[0].Planned == 0 || reused.plans[0].Buffers >= reused.plans[0].Planned {
				t.Fatalf("the first run planned no shared buffers: %+v", reused.plans)
			}
			t.Logf("buffer plan: %+v", reused.plans[0])
			fresh, err := compile(m, bs, seqLen, true)
			if err != nil {
				t.Fatalf("%+v", err)
			}
			wantB, wantGrads := result(fresh, 2)
			// A program that never plans (plans set, so it never records
			// one) gives what the planned ones give: the dry run that
			// planned fresh computed nothing that its first run kept.
			unplanned, err := compile(m, bs, seqLen, true)
			if err != nil {
				t.Fatalf("%+v", err)
			}
			unplanned.plans = []ops.BufferPlan{}
			if lossU, gradsU := result(unplanned, 2); lossU != wantB {
				t.Errorf("a fresh planned program's loss %v, an unplanned one's %v", wantB, lossU)
			} else {
				sameGradients(t, unplanned, wantGrads, gradsU, "fresh planned program", "unplanned program")
			}
			fresh.release()
			if again, _ := result(fresh, 2); again != wantB {
				t.Errorf("after ReleaseBuffers the loss is %v, before %v", again, wantB)
			}
			if lossA == lossB {
				t.Fatalf("two batches gave the same loss %v: the test would not see stale buffers", lossA)
			}
			if lossB != wantB {
				t.Errorf("second run's loss %v, a fresh program gives %v", lossB, wantB)
			}
			sameGradients(t, reused, gradsB, wantGrads, "second run", "fresh program")
		})
	}
}

func toF64(d any) []float64 {
	switch v := d.(type) {
	case []float32:
		out := make([]float64, len(v))
		for i, x := range v {
			out[i] = float64(x)
		}
		return out
	case []float64:
		return append([]float64(nil), v...)
	}
	panic("toF64")
}
