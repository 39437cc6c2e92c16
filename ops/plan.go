package ops

import (
	"reflect"
	"sort"
	"sync"
	"sync/atomic"

	"github.com/pkg/errors"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// Buffer planning. Every fused op keeps its output buffer from one run of a
// graph to the next (reusedBuffer), so a run touches as many buffers as the
// graph has nodes: hundreds of megabytes at d_model 256, each written once
// and read soon after, then left until the next step. Every write lands in
// memory the step has not touched since the step before, out of every cache.
// PlanBuffers lets nodes whose values are never needed at the same time write
// into one buffer instead, in the spirit of a compiler's register allocation
// over the run's order: a node's value lives from the op that writes it to
// the last op that reads it, and a buffer freed by one node is the next
// same-sized node's, while it is still in cache.
//
// Only a fused op's output whose every reader is a fused op (forward or
// backward) takes part, and a backward op's packed gradients when every
// reader of at least one gradient in them is: a Gorgonia op may work in
// place on its input or view it, and the caller reads some values after
// the run (loss, gradients: the keep nodes). The packed vector's other
// gradients (a weight's, which the caller keeps; one that Gorgonia's sum
// for a value read twice reads) move to buffers of their own
// (sideGradients), so that a linear layer's large input gradient no longer
// holds its vector for the whole run because its small weight gradient is
// kept. Planning changes where values are
// written, not how they are computed, so results are the same to the bit
// (TestPlanBuffersSameBits, and the trainer's same-seed tests). A kernel that keeps its inputs for its
// backward (forwardSave) is safe: its backward reads the same inputs, so they
// live until it has run.

// BufferPlan is what PlanBuffers did for one graph.
type BufferPlan struct {
	// Planned is the number of fused ops' outputs that now share buffers,
	// Buffers the number of buffers they share.
	Planned, Buffers int
	// BytesBefore is the size of those outputs together; BytesAfter the
	// size of the buffers they share.
	BytesBefore, BytesAfter int64
}

// ErrPlanBusy is PlanBuffers' error when another plan is being recorded: it
// did not call run, and the caller may run unplanned and plan later.
var ErrPlanBusy = errors.New("plan buffers: another plan is being recorded")

// execTrace is the trace PlanBuffers records, nil when none is.
var execTrace atomic.Pointer[traceLog]

// traceLog records the order in which fused ops run: each op is known by its
// output buffer, which is its own. In a dry trace (PlanBuffersDry) the ops
// of the graphs being planned (dryOps, written before the trace starts and
// only read after) skip their kernels and all write into the few buffers of
// dryOut, one per dtype and size; another graph's ops, which may run at the
// same time, run as usual.
type traceLog struct {
	mu     sync.Mutex
	order  map[*reusedBuffer]int
	runs   map[*reusedBuffer]int
	next   int
	dryOps map[*reusedBuffer]bool
	dryOut map[dryKey]any
}

// dry says whether the op that owns r skips its kernel in this trace.
func (t *traceLog) dry(r *reusedBuffer) bool { return t.dryOps[r] }

// dryKey names one of a dry trace's buffers.
type dryKey struct {
	dt tensor.Dtype
	n  int
}

// dryBuffer is the dry trace's buffer of n elements of dt, which every op
// of that size writes into (and none reads for anything that matters).
func (t *traceLog) dryBuffer(dt tensor.Dtype, n int) any {
	t.mu.Lock()
	defer t.mu.Unlock()
	k := dryKey{dt, n}
	if b, ok := t.dryOut[k]; ok {
		return b
	}
	if t.dryOut == nil {
		t.dryOut = map[dryKey]any{}
	}
	b := newBuffer(dt, n)
	t.dryOut[k] = b
	return b
}

func (t *traceLog) record(r *reusedBuffer) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if _, ok := t.order[r]; !ok {
		t.order[r] = t.next
	}
	t.runs[r]++
	t.next++
}

// PlanBuffers runs run once (one run of each graph, which may run at once on
// several goroutines), recording the order in which their fused ops execute,
// and then lets the outputs of each graph's fused ops share buffers where
// their lives do not overlap (see above). keep lists the nodes whose values
// the caller reads after a run; they keep buffers of their own. A graph's
// run order must be the same from one run to the next, as a tape machine's
// is. While one PlanBuffers records, another returns ErrPlanBusy without
// calling run. It replaces any earlier plan of the same graphs; run's
// results are those of an unplanned run.
func PlanBuffers(run func() error, keep G.Nodes, graphs ...*G.ExprGraph) ([]BufferPlan, error) {
	return planBuffers(run, false, keep, graphs)
}

// PlanBuffersDry is PlanBuffers with a dry run: while run runs, every fused
// op records its place and returns a buffer it shares with every other op
// of its size, without running its kernel. The graphs' values after run are
// meaningless, so the caller runs them again for its results. What it
// spares is memory: a recorded run that computes holds every op's own
// buffer at once, before the plan lets them share, and that first run set
// the peak of a training process (docs/performance.md, "Go's collector and
// the peak"). After a dry plan of graphs that never ran, no fused op holds
// a buffer; the next run allocates only the planned ones. The graphs must not run on several
// goroutines at once during run (the shared buffers would be written by
// two), and Gorgonia's own ops still compute, on meaningless values.
func PlanBuffersDry(run func() error, keep G.Nodes, graphs ...*G.ExprGraph) ([]BufferPlan, error) {
	return planBuffers(run, true, keep, graphs)
}

func planBuffers(run func() error, dry bool, keep G.Nodes, graphs []*G.ExprGraph) ([]BufferPlan, error) {
	t := &traceLog{order: map[*reusedBuffer]int{}, runs: map[*reusedBuffer]int{}}
	if dry {
		t.dryOps = map[*reusedBuffer]bool{}
		for _, g := range graphs {
			for _, n := range g.AllNodes() {
				if r := ownBuffer(n.Op()); r != nil {
					t.dryOps[r] = true
				}
			}
		}
	}
	if !execTrace.CompareAndSwap(nil, t) {
		return nil, ErrPlanBusy
	}
	defer execTrace.CompareAndSwap(t, nil) // when run panics
	for _, g := range graphs {
		unplan(g)
	}
	err := run()
	execTrace.Store(nil)
	// An op of another graph may still be recording into t.
	t.mu.Lock()
	defer t.mu.Unlock()
	if err != nil {
		return nil, errors.Wrap(err, "plan buffers: the recorded run")
	}
	kept := map[*G.Node]bool{}
	for _, n := range keep {
		kept[n] = true
	}
	plans := make([]BufferPlan, len(graphs))
	for i, g := range graphs {
		plans[i] = planGraph(g, t, kept)
	}
	return plans, nil
}

// unplan gives every fused op of g its own buffer again, and puts every
// backward op's gradients back in its packed vector. The ops' caches
// (opCalls) forget the buffers they refer to, so that the recorded run
// does not keep the earlier plan's memory alive beside its own.
func unplan(g *G.ExprGraph) {
	for _, n := range g.AllNodes() {
		if r := ownBuffer(n.Op()); r != nil {
			r.shared = nil
		}
		switch op := n.Op().(type) {
		case fusedOp:
			op.calls.forget()
		case fusedDiffOp:
			if op.side != nil {
				op.side.by = nil
			}
			op.calls.forget()
		case unpackOp:
			op.out.forget()
		}
	}
}

// ownBuffer is the buffer a fused op writes its result into (a forward
// op's output, a backward op's packed gradients), nil for any other op.
func ownBuffer(op G.Op) *reusedBuffer {
	switch o := op.(type) {
	case fusedOp:
		return o.out
	case fusedDiffOp:
		return o.packed
	}
	return nil
}

// isReshape says whether op is Gorgonia's reshape, which returns a view of
// its input's memory (ShallowClone in Do, the input itself in UnsafeDo) and
// writes none of it. Gorgonia does not export the type; should its name
// change, reshaped values are merely left out of plans.
func isReshape(op G.Op) bool {
	return reflect.TypeOf(op).String() == "gorgonia.reshapeOp"
}

// liveRange is one plannable node's value: written by the op run at first,
// last read by the op run at last.
type liveRange struct {
	out         *reusedBuffer
	dt          tensor.Dtype
	size        int
	first, last int
}

// sharedBuffer is one buffer of a plan and the last op that reads the value
// now in it.
type sharedBuffer struct {
	buf   *reusedBuffer
	dt    tensor.Dtype
	size  int
	until int
}

// planGraph assigns g's plannable outputs to shared buffers, first fit in
// the order the ops ran.
func planGraph(g *G.ExprGraph, t *traceLog, kept map[*G.Node]bool) BufferPlan {
	readers := map[*G.Node][]*G.Node{}
	for _, n := range g.AllNodes() {
		for it := g.From(n.ID()); it.Next(); {
			c := it.Node().(*G.Node)
			readers[c] = append(readers[c], n)
		}
	}
	// ranOnce is the position of the op that owns r in the run, when it ran
	// exactly once.
	ranOnce := func(r *reusedBuffer) (int, bool) {
		i, ok := t.order[r]
		return i, ok && t.runs[r] == 1
	}
	// lastRead is the position of the last op to read n's value, when every
	// reader is a fused op that ran once after first, or a reshape whose
	// every reader is, and neither n nor a reshape of it is kept.
	var lastRead func(n *G.Node, first int) (int, bool)
	lastRead = func(n *G.Node, first int) (int, bool) {
		if kept[n] || len(readers[n]) == 0 {
			return 0, false
		}
		last := -1
		for _, c := range readers[n] {
			r := ownBuffer(c.Op())
			if r == nil {
				if !isReshape(c.Op()) {
					return 0, false
				}
				l, ok := lastRead(c, first)
				if !ok {
					return 0, false
				}
				last = max(last, l)
				continue
			}
			i, ok := ranOnce(r)
			if !ok || i <= first {
				return 0, false
			}
			last = max(last, i)
		}
		return last, true
	}
	var ranges []liveRange
	for _, n := range g.AllNodes() {
		out := ownBuffer(n.Op())
		if out == nil {
			continue
		}
		first, ok := ranOnce(out)
		if !ok {
			continue
		}
		size := n.Shape().TotalSize()
		last, ok := -1, true
		var side []int
		if d, diff := n.Op().(fusedDiffOp); !diff {
			last, ok = lastRead(n, first)
		} else {
			// The packed gradients are read through unpack nodes, views
			// of them: their readers are the buffer's. A gradient that
			// is kept, or that something other than a fused op reads,
			// moves to a buffer of its own (side), and the rest of the
			// vector can still be shared.
			for _, u := range readers[n] {
				view, isView := u.Op().(unpackOp)
				if !isView || d.side == nil || view.side != d.side {
					ok = false
					break
				}
				l, lok := lastRead(u, first)
				if !lok {
					side = append(side, view.index)
					continue
				}
				last = max(last, l)
			}
			ok = ok && last >= 0
			if ok && len(side) > 0 {
				d.side.by = map[int]*reusedBuffer{}
				for _, i := range side {
					d.side.by[i] = new(reusedBuffer)
				}
			}
		}
		if !ok {
			continue
		}
		ranges = append(ranges, liveRange{out: out, dt: n.Dtype(), size: size, first: first, last: last})
	}
	sort.Slice(ranges, func(i, j int) bool { return ranges[i].first < ranges[j].first })
	var plan BufferPlan
	var buffers []*sharedBuffer
	for _, lr := range ranges {
		var b *sharedBuffer
		for _, s := range buffers {
			if s.dt == lr.dt && s.size == lr.size && s.until < lr.first {
				b = s
				break
			}
		}
		if b == nil {
			// A new shared buffer starts as the recorded run's buffer of
			// its first value, so that planning allocates nothing.
			b = &sharedBuffer{buf: &reusedBuffer{buf: lr.out.buf}, dt: lr.dt, size: lr.size}
			buffers = append(buffers, b)
			plan.BytesAfter += int64(lr.size) * int64(lr.dt.Size())
		}
		b.until = lr.last
		lr.out.buf, lr.out.shared = nil, b.buf
		plan.Planned++
		plan.BytesBefore += int64(lr.size) * int64(lr.dt.Size())
	}
	plan.Buffers = len(buffers)
	return plan
}
