package train

import (
	"fmt"
	"runtime"
	"sort"
	"time"

	"github.com/pkg/errors"

	"github.com/wonderful-matrices/wonderful-matrices-go/graph"
	"github.com/wonderful-matrices/wonderful-matrices-go/ops"
)

// ProductSites is what MeasureProductSites found: a step's matrix products
// by where they were asked for, timed where they ran and replayed alone.
// Times are per step and in core time (a replay's wall time on g
// goroutines counts g cores).
type ProductSites struct {
	// Steps is how many steps were recorded; Step is their mean wall time.
	Steps int
	Step  time.Duration
	// BLAS is the products' core time in the step (ops.GemmRecording's
	// BLASTime), and Oversubscribed the wall time during which more
	// products were in flight than the process has cores (their own wall
	// times then count time spent waiting for a core).
	BLAS, Oversubscribed time.Duration
	// Sites, the largest loss against the warm replay first.
	Sites []ProductSite
}

// ProductSite is one kind of product asked for from one place in the ops.
type ProductSite struct {
	ops.GemmSite
	// Calls is the mean number of calls a step.
	Calls float64
	// InStep is the calls' own wall times summed: from just before each
	// BLAS call to just after it, among the step's other passes.
	InStep time.Duration
	// Warm and Cold are the same products replayed alone on as many
	// goroutines as GOMAXPROCS: operands warm in cache
	// (ops.ReplayGemmShapes), and every operand out of cache
	// (ops.ReplayGemmShapesCold).
	Warm, Cold time.Duration
}

// Loss is how much longer the site's products took in the step than
// replayed warm.
func (s ProductSite) Loss() time.Duration { return s.InStep - s.Warm }

// MeasureProductSites builds the model of cfg with float32 parameters
// from seed, runs warm steps of it on random tokens of [batch, seqLen]
// (training steps with the AdamW update when withGrad, evaluation
// forwards otherwise; in layout l, as Config.Shards and ShardThreads), records
// steps more with ops.RecordGemmSites, and replays each site's products
// alone, warm and cold. It answers which products lose time inside a
// step, and to what: near the cold replay, to the distance of their
// operands; beyond it, to the step's other work on the other cores.
func MeasureProductSites(cfg graph.Config, batch, seqLen int, l Layout, withGrad bool, warm, steps int, seed int64) (ProductSites, error) {
	if batch < 1 || seqLen < 1 || steps < 1 || warm < 0 {
		return ProductSites{}, errors.Errorf("product sites: batch %d, seq_len %d and steps %d must be >= 1, warm-up %d >= 0", batch, seqLen, steps, warm)
	}
	m, ids, targets, err := benchModel(cfg, batch, seqLen, l.Shards, seed)
	if err != nil {
		return ProductSites{}, errors.Wrap(err, "product sites")
	}
	s, err := newTimedStep(m, batch, seqLen, l, withGrad)
	if err != nil {
		return ProductSites{}, err
	}
	for i := range warm {
		if err := s.run(ids, targets); err != nil {
			return ProductSites{}, errors.Wrapf(err, "product sites: warm-up step %d", i+1)
		}
	}
	out := ProductSites{Steps: steps}
	type sum struct {
		calls int
		wall  time.Duration
	}
	sites := map[ops.GemmSite]sum{}
	for i := range steps {
		rec, err := ops.RecordGemmSites(func() error { return s.run(ids, targets) })
		if err != nil {
			return ProductSites{}, errors.Wrapf(err, "product sites: recorded step %d", i+1)
		}
		out.Step += rec.Wall
		out.BLAS += rec.BLASTime
		out.Oversubscribed += rec.Oversubscribed
		for site, t := range rec.Sites {
			v := sites[site]
			v.calls += t.Calls
			v.wall += t.Wall
			sites[site] = v
		}
	}
	per := func(d time.Duration) time.Duration { return d / time.Duration(steps) }
	out.Step, out.BLAS, out.Oversubscribed = per(out.Step), per(out.BLAS), per(out.Oversubscribed)
	g := runtime.GOMAXPROCS(0)
	// One cold replay for every site, so that its buffers (twice the
	// last-level cache per operand and goroutine) are filled once.
	cold, err := ops.NewColdReplay(ops.ColdSpan(g))
	if err != nil {
		return ProductSites{}, errors.Wrap(err, "product sites")
	}
	for site, v := range sites {
		// All the recorded steps' calls are replayed at once, so that a
		// site called less than once a step (an expert's varying rows)
		// is still timed.
		shapes := ops.GemmShapes{site.Shape: v.calls}
		warmTime, err := ops.ReplayGemmShapes(shapes, g, 2)
		if err != nil {
			return ProductSites{}, errors.Wrapf(err, "product sites: replaying %s", site.Caller)
		}
		coldTime, err := cold.Replay(shapes, g, 2)
		if err != nil {
			return ProductSites{}, errors.Wrapf(err, "product sites: replaying %s cold", site.Caller)
		}
		// A replay on g goroutines splits the calls between them; its
		// wall time times g is their core time, when g ≤ the calls.
		cores := time.Duration(min(g, v.calls))
		out.Sites = append(out.Sites, ProductSite{GemmSite: site, Calls: float64(v.calls) / float64(steps),
			InStep: per(v.wall), Warm: per(warmTime * cores), Cold: per(coldTime * cores)})
	}
	sort.Slice(out.Sites, func(i, j int) bool {
		a, b := out.Sites[i], out.Sites[j]
		if a.Loss() != b.Loss() {
			return a.Loss() > b.Loss()
		}
		if a.Caller != b.Caller {
			return a.Caller < b.Caller
		}
		return fmt.Sprint(a.Shape) < fmt.Sprint(b.Shape)
	})
	return out, nil
}
