package train

import (
	"math"
	"math/rand"
	"runtime"
	"strings"
	"testing"

	"gorgonia.org/tensor"

	"github.com/wonderful-matrices/wonderful-matrices-go/experiments/data"
	"github.com/wonderful-matrices/wonderful-matrices-go/graph"
	"github.com/wonderful-matrices/wonderful-matrices-go/layers"
	"github.com/wonderful-matrices/wonderful-matrices-go/ops"
)

// shardBatch draws ids and targets [bs][seqLen]; with ignore set, row i
// labels only its last i+1 targets, so that the shards hold different
// numbers of labelled targets (as MQAR's batches do).
func shardBatch(seed int64, bs, seqLen, vocab int, ignore bool) (ids, targets [][]int) {
	r := rand.New(rand.NewSource(seed))
	ids, targets = make([][]int, bs), make([][]int, bs)
	for i := range ids {
		ids[i], targets[i] = make([]int, seqLen), make([]int, seqLen)
		for j := range ids[i] {
			ids[i][j], targets[i][j] = r.Intn(vocab), r.Intn(vocab)
			if ignore && j < seqLen-i-1 {
				targets[i][j] = data.Ignore
			}
		}
	}
	return ids, targets
}

// sameGradients fails the test at the first value where got (from a program
// named gotName) and want (wantName) differ in any bit; p names the
// parameters.
func sameGradients(t *testing.T, p *program, got, want [][]float64, gotName, wantName string) {
	t.Helper()
	for i := range want {
		for j := range want[i] {
			if got[i][j] != want[i][j] {
				t.Fatalf("gradient of %s[%d]: %s %v, %s %v", p.params[i].Name, j, gotName, got[i][j], wantName, want[i][j])
			}
		}
	}
}

// runProgram runs p once and returns its loss, cross-entropy and a copy of
// its gradients.
func runProgram(t *testing.T, p *program, ids, targets [][]int) (loss, ce float64, grads [][]float64) {
	t.Helper()
	loss, ce, err := p.run(ids, targets)
	if err != nil {
		t.Fatalf("%+v", err)
	}
	for _, g := range p.gradients() {
		grads = append(grads, toF64(g))
	}
	p.reset()
	return loss, ce, grads
}

// Split over 2 or 4 shards, a batch gives the loss and the gradients of the
// whole batch in one graph (float64, to 1e-12 relative), for every layer
// kind without an auxiliary loss (routed MoE and MoE-SEI have one: see
// below), with targets partly ignored and unevenly so across the shards.
// Both programs run two batches, so stale buffers would show too.
func TestShardsMatchOneGraph(t *testing.T) {
	const bs, seqLen = 4, 12
	cfg := graph.Config{Pattern: "S M A E I K B M", Vocab: 50, DModel: 16, Heads: 2, MaxPosition: 32,
		CDMoE: layers.CDMoEConfig{Experts: 64}}
	m := float64Model(t, cfg)
	one, err := compile(m, bs, seqLen, true)
	if err != nil {
		t.Fatalf("%+v", err)
	}
	for _, n := range []int{2, 4} {
		sharded, err := compileShards(m, bs, seqLen, true, Layout{Shards: n})
		if err != nil {
			t.Fatalf("%+v", err)
		}
		for _, ignore := range []bool{false, true} {
			for seed := int64(1); seed <= 2; seed++ {
				ids, targets := shardBatch(seed, bs, seqLen, cfg.Vocab, ignore)
				wantLoss, wantCE, want := runProgram(t, one, ids, targets)
				loss, ce, got := runProgram(t, sharded, ids, targets)
				if !close12(loss, wantLoss) || !close12(ce, wantCE) {
					t.Fatalf("%d shards, ignore %v: loss %v ce %v, one graph %v %v", n, ignore, loss, ce, wantLoss, wantCE)
				}
				for i := range want {
					for j := range want[i] {
						if !close12(got[i][j], want[i][j]) {
							t.Fatalf("%d shards, ignore %v: gradient of %s[%d] %v, one graph %v",
								n, ignore, one.params[i].Name, j, got[i][j], want[i][j])
						}
					}
				}
			}
		}
	}
}

// float64Model makes and initialises cfg's model in float64.
func float64Model(t *testing.T, cfg graph.Config) *graph.Model {
	t.Helper()
	m, err := graph.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Init(tensor.Float64, 3); err != nil {
		t.Fatal(err)
	}
	return m
}

// A batch with no labelled target gives every shard a weight of 0; the
// sharded gradients are then the one graph's (zero), not what the previous
// batch left in the combined buffers.
func TestShardsWithNothingLabelled(t *testing.T) {
	const bs, seqLen = 4, 8
	cfg := graph.Config{Pattern: "S M A", Vocab: 50, DModel: 16, Heads: 2, MaxPosition: 16}
	m := float64Model(t, cfg)
	one, err := compile(m, bs, seqLen, true)
	if err != nil {
		t.Fatalf("%+v", err)
	}
	sharded, err := compileShards(m, bs, seqLen, true, Layout{Shards: 2})
	if err != nil {
		t.Fatalf("%+v", err)
	}
	ids, targets := shardBatch(1, bs, seqLen, cfg.Vocab, false)
	runProgram(t, sharded, ids, targets)
	for i := range targets {
		for j := range targets[i] {
			targets[i][j] = data.Ignore
		}
	}
	wantLoss, _, want := runProgram(t, one, ids, targets)
	loss, _, got := runProgram(t, sharded, ids, targets)
	if loss != wantLoss {
		t.Errorf("loss %v, one graph %v", loss, wantLoss)
	}
	sameGradients(t, one, got, want, "with nothing labelled, sharded", "one graph")
}

// With routed MoE's load-balancing loss, the sharded total loss is the
// mean of the shards' total losses, each as one graph on its half of the
// batch computes it, while the cross-entropy is still the whole batch's.
func TestShardsAverageTheAuxiliaryLoss(t *testing.T) {
	const bs, seqLen = 4, 12
	cfg := graph.Config{Pattern: "R M", Vocab: 50, DModel: 16, Heads: 2, MaxPosition: 32, MoE: layers.MoEConfig{Experts: 4}}
	m := float64Model(t, cfg)
	progs := map[string]*program{}
	for name, shape := range map[string][2]int{"one": {bs, 1}, "half": {bs / 2, 1}, "two": {bs, 2}} {
		p, err := compileShards(m, shape[0], seqLen, true, Layout{Shards: shape[1]})
		if err != nil {
			t.Fatalf("%+v", err)
		}
		progs[name] = p
	}
	ids, targets := shardBatch(1, bs, seqLen, cfg.Vocab, false)
	_, wantCE, _ := runProgram(t, progs["one"], ids, targets)
	lossA, _, _ := runProgram(t, progs["half"], ids[:bs/2], targets[:bs/2])
	lossB, _, _ := runProgram(t, progs["half"], ids[bs/2:], targets[bs/2:])
	loss, ce, _ := runProgram(t, progs["two"], ids, targets)
	if !close12(ce, wantCE) {
		t.Errorf("cross-entropy %v with 2 shards, %v in one graph", ce, wantCE)
	}
	if want := (lossA + lossB) / 2; !close12(loss, want) {
		t.Errorf("total loss %v with 2 shards, the mean of the halves' %v", loss, want)
	}
	if loss == ce {
		t.Fatalf("no auxiliary loss: the test would check nothing")
	}
}

// close12 compares to 1e-12 relative to the larger magnitude (absolute
// below 1e-12).
func close12(a, b float64) bool {
	return math.Abs(a-b) <= 1e-12*math.Max(1, math.Max(math.Abs(a), math.Abs(b)))
}

// A shard whose rows are all ignored (the padding of evaluateAll's last
// batch) weighs nothing: the sharded loss is the labelled shard's alone.
func TestShardWeights(t *testing.T) {
	ig := []int{data.Ignore, data.Ignore}
	w := shardWeights([][]int{{1, 2}, {3, data.Ignore}, ig, ig}, 2)
	if w[0] != 1 || w[1] != 0 {
		t.Errorf("weights %v, want [1 0]", w)
	}
	w = shardWeights([][]int{{1, 2}, {3, data.Ignore}, {4, 5}, ig}, 2)
	if w[0] != 0.6 || w[1] != 0.4 {
		t.Errorf("weights %v, want [0.6 0.4]", w)
	}
	if w := shardWeights([][]int{ig, ig}, 2); w[0] != 0 || w[1] != 0 {
		t.Errorf("nothing labelled: weights %v, want zeros", w)
	}
}

// Training with 2 shards: the loss falls, the same seed gives the same
// metrics to the bit (the shards finish in any order, the sums do not),
// also with each shard's loops on one goroutine (ShardThreads 1: the loops
// keep their split into GOMAXPROCS parts, set to 4 here so that there is
// a split to keep), and the run agrees with the unsharded run to rounding.
func TestShardedTrainingIsDeterministic(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(4))
	const steps = 30
	final := func(shards, threads int) []Metrics {
		r := tinyRun(t, t.TempDir(), steps)
		r.Config.Train.Shards, r.Config.Train.ShardThreads = shards, threads
		if _, err := r.Start(false); err != nil {
			t.Fatalf("%+v", err)
		}
		return readMetrics(t, r.Dir)
	}
	a, b, serial, one := final(2, 0), final(2, 0), final(2, 1), final(0, 0)
	if a[len(a)-1].Loss >= a[0].Loss-0.5 {
		t.Errorf("2 shards: loss %.3f at step 1, %.3f at step %d: it did not fall", a[0].Loss, a[len(a)-1].Loss, steps)
	}
	for i := range a {
		if !sameStep(a[i], b[i]) {
			t.Fatalf("step %d: two runs with 2 shards differ: loss %v vs %v, grad norm %v vs %v",
				a[i].Step, a[i].Loss, b[i].Loss, a[i].GradNorm, b[i].GradNorm)
		}
		if !sameStep(a[i], serial[i]) {
			t.Fatalf("step %d: 2 shards with their loops on one goroutine each differ from 2 shards: loss %v vs %v, grad norm %v vs %v",
				a[i].Step, serial[i].Loss, a[i].Loss, serial[i].GradNorm, a[i].GradNorm)
		}
	}
	if got := ops.SetLoopThreads(0); got != 0 {
		t.Errorf("after the runs with ShardThreads 1, ops' loops are still capped at %d goroutines", got)
	}
	// float32 training drifts apart slowly; the first step is one float32
	// evaluation of the same function summed in another order.
	if d := math.Abs(a[0].Loss - one[0].Loss); d > 1e-5*one[0].Loss {
		t.Errorf("step 1: loss %v with 2 shards, %v with one graph", a[0].Loss, one[0].Loss)
	}
}

// A shard count that does not divide the batch, and threads a shard that are
// negative or without shards, are refused by name.
func TestShardsMustDivideBatch(t *testing.T) {
	c := Config{Steps: 10, Batch: 8, Shards: 3}.Resolved()
	err := c.Validate()
	if err == nil || !strings.Contains(err.Error(), "train.shards") || !strings.Contains(err.Error(), "divide") {
		t.Errorf("batch 8, 3 shards: error %v, want one naming train.shards", err)
	}
	c.Shards = 4
	if err := c.Validate(); err != nil {
		t.Errorf("batch 8, 4 shards: %v", err)
	}
	c.ShardThreads = 1
	if err := c.Validate(); err != nil {
		t.Errorf("batch 8, 4 shards of 1 thread: %v", err)
	}
	for _, bad := range []Config{{Steps: 10, Batch: 8, Shards: 4, ShardThreads: -1}, {Steps: 10, Batch: 8, ShardThreads: 1}, {Steps: 10, Batch: 8, Shards: 1, ShardThreads: 2}} {
		err := bad.Resolved().Validate()
		if err == nil || !strings.Contains(err.Error(), "train.shard_threads") {
			t.Errorf("%d shards, %d threads a shard: error %v, want one naming train.shard_threads", bad.Shards, bad.ShardThreads, err)
		}
	}
}
