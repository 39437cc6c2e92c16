package graph

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/pkg/errors"

	"github.com/wonderful-matrices/wonderful-matrices-go/layers"
)

// KindCount is one row of a parameter breakdown: the layers of one kind
// (or the embedding, norms, LM head) and their parameters.
type KindCount struct {
	Kind   string
	Layers int
	// Total parameters, and Active per token (less than Total for MoE).
	Total, Active int64
}

// Breakdown counts the model's parameters by layer kind, in the order the
// kinds first appear: embedding, the sublayer kinds, norms, LM head. This is
// the data of Wonderful Matrices Figure 8.
func (m *Model) Breakdown() []KindCount {
	rows := []KindCount{{Kind: "embedding", Layers: 1, Total: int64(m.Embed.Size()), Active: int64(m.Embed.Size())}}
	index := map[string]int{}
	norms := KindCount{Kind: "rmsnorm"}
	for _, blk := range m.Blocks {
		k := blk.Layer.Kind()
		i, ok := index[k]
		if !ok {
			i = len(rows)
			index[k] = i
			rows = append(rows, KindCount{Kind: k})
		}
		rows[i].Layers++
		rows[i].Total += blk.Layer.Params().Count()
		rows[i].Active += layers.ActiveParams(blk.Layer)
		norms.Layers++
		norms.Total += int64(blk.Norm.Size())
	}
	norms.Layers++
	norms.Total += int64(m.FinalNorm.Size())
	norms.Active = norms.Total
	rows = append(rows, norms)
	if m.Head != nil {
		rows = append(rows, KindCount{Kind: "lm_head", Layers: 1, Total: int64(m.Head.Size()), Active: int64(m.Head.Size())})
	}
	return rows
}

// Count is the model's total and active parameter counts.
func (m *Model) Count() (total, active int64) {
	for _, r := range m.Breakdown() {
		total += r.Total
		active += r.Active
	}
	return total, active
}

// CountConfig counts the parameters of cfg without allocating them.
func CountConfig(cfg Config) (total, active int64, err error) {
	m, err := New(cfg)
	if err != nil {
		return 0, 0, err
	}
	total, active = m.Count()
	return total, active, nil
}

// FormatBreakdown renders rows as a Markdown table with a total line.
func FormatBreakdown(rows []KindCount) string {
	var sb strings.Builder
	sb.WriteString("| kind | layers | parameters | active per token |\n|---|---:|---:|---:|\n")
	var total, active int64
	for _, r := range rows {
		fmt.Fprintf(&sb, "| %s | %d | %d | %d |\n", r.Kind, r.Layers, r.Total, r.Active)
		total += r.Total
		active += r.Active
	}
	fmt.Fprintf(&sb, "| **total** | | %d | %d |\n", total, active)
	return sb.String()
}

// Knob is a size the matcher may change to equalise parameter counts.
type Knob string

// The knobs of Match.
const (
	KnobMLPWidth     Knob = "mlp.d_ff"
	KnobCDMoEWidth   Knob = "cdmoe.d_ff"
	KnobCDMoEExperts Knob = "cdmoe.experts"
	KnobMoEWidth     Knob = "moe.d_ff"
	KnobMoEExperts   Knob = "moe.experts"
)

// knobs maps each knob to its setter and its smallest value. For
// cdmoe.experts the value is sqrt(experts), so only squares are tried.
var knobs = map[Knob]struct {
	set func(c *Config, v int)
	min func(c Config) int
}{
	KnobMLPWidth:     {func(c *Config, v int) { c.MLP.DFF = v }, func(Config) int { return 1 }},
	KnobCDMoEWidth:   {func(c *Config, v int) { c.CDMoE.DFF = v }, func(Config) int { return 1 }},
	KnobCDMoEExperts: {func(c *Config, v int) { c.CDMoE.Experts = v * v }, func(c Config) int { return c.Resolved().CDMoE.TopK }},
	KnobMoEWidth:     {func(c *Config, v int) { c.MoE.DFF = v }, func(Config) int { return 1 }},
	KnobMoEExperts:   {func(c *Config, v int) { c.MoE.Experts = v }, func(c Config) int { return c.Resolved().MoE.TopK }},
}

// KnobNames lists the knobs, sorted.
func KnobNames() []string {
	var out []string
	for k := range knobs {
		out = append(out, string(k))
	}
	sort.Strings(out)
	return out
}

// MatchTolerance is how close Match must get: 1% (SPEC §4).
const MatchTolerance = 0.01

// Match returns arm with knob sized so that its parameter count (total, or
// active per token when active is set) is as close as possible to target,
// and an error when the closest is more than 1% away: "we strictly
// construct different models with the same number of parameters"
// (Wonderful Matrices §4.2).
func Match(arm Config, knob Knob, target int64, active bool) (Config, error) {
	k, ok := knobs[knob]
	if !ok {
		return Config{}, errors.Errorf("match: knob %q is not one of %v", knob, KnobNames())
	}
	count := func(v int) (int64, error) {
		c := arm
		k.set(&c, v)
		t, a, err := CountConfig(c)
		if active {
			t = a
		}
		return t, err
	}
	lo := k.min(arm)
	cl, err := count(lo)
	if err != nil {
		return Config{}, errors.Wrapf(err, "match %s", knob)
	}
	if cl >= target {
		return finishMatch(arm, knob, k.set, lo, cl, target)
	}
	// Grow hi until it passes the target, then bisect: counts grow with the knob.
	hi := lo * 2
	var ch int64
	for {
		ch, err = count(hi)
		if err != nil {
			return Config{}, errors.Wrapf(err, "match %s", knob)
		}
		if ch >= target {
			break
		}
		if ch == cl || hi > 1<<24 {
			return Config{}, errors.Errorf("match %s: the count stays at %d (knob %d), below the target %d: this knob cannot reach it", knob, ch, hi, target)
		}
		lo, cl, hi = hi, ch, hi*2
	}
	for hi-lo > 1 {
		mid := (lo + hi) / 2
		c, err := count(mid)
		if err != nil {
			return Config{}, errors.Wrapf(err, "match %s", knob)
		}
		if c >= target {
			hi, ch = mid, c
		} else {
			lo, cl = mid, c
		}
	}
	if target-cl < ch-target {
		return finishMatch(arm, knob, k.set, lo, cl, target)
	}
	return finishMatch(arm, knob, k.set, hi, ch, target)
}

func finishMatch(arm Config, knob Knob, set func(*Config, int), v int, got, target int64) (Config, error) {
	set(&arm, v)
	if off := math.Abs(float64(got-target)) / float64(target); off > MatchTolerance {
		return Config{}, errors.Errorf("match %s: the closest count is %d (value %d), %.1f%% from the target %d (tolerance %.0f%%)",
			knob, got, v, 100*off, target, 100*MatchTolerance)
	}
	return arm, nil
}
