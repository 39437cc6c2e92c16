package graph_test

import (
	"testing"

	"github.com/wonderful-matrices/wonderful-matrices-go/graph"
	"github.com/wonderful-matrices/wonderful-matrices-go/layers"
)

// TestParamCountsClosedForm checks every letter's count against the shapes
// of SPEC §3 written out here, for tinyConfig: d = 16, V = 32, 2 heads.
func TestParamCountsClosedForm(t *testing.T) {
	const (
		d, V, h    = 16, 32, 2
		n, g, k    = 8, 1, 4  // SSD/Mamba2 d_state, groups, conv kernel
		di, hm     = 2 * d, 2 // Mamba2 d_inner and heads
		nv, ret    = 8, 8     // IFA inner values, retrieval dim
		maxPos     = 64
		ff         = 32        // MLP width
		cf, N, ch  = 16, 16, 2 // CDMoE d_ff, experts, heads
		ck, cr, nk = 2, 8, 4   // CDMoE top-k, ret dim, sqrt(N)
		mN, mk, mf = 4, 2, 16  // MoE experts, top-k, width
	)
	frame := V*d + d + d*V // embedding, final norm, head
	ssdRope := d*d + 2*d*g*n + d*h + 3*h + d*d
	moe := d*mN + 3*mN*d*mf
	moeActive := d*mN + 3*mk*d*mf
	cdmoe := 2*d*cf + d*ch*cr + ch*nk*cr + 2*N*d
	for _, c := range []struct {
		letter        string
		layer, active int
	}{
		{"S", ssdRope, ssdRope},
		{"B", 2*d*di + 2*d*g*n + d*hm + (di+2*g*n)*k + 3*hm + di + di*d, -1},
		{"A", 4 * d * d, -1},
		{"I", 2*d*d + d*ret + nv*ret + nv*d + h*maxPos + d*d, -1},
		{"K", d*d + d*d/2 + d*d + d*d, -1},
		{"M", 3 * d * ff, -1},
		{"E", cdmoe, cdmoe - 2*N*d + 2*ch*ck*d},
		{"R", moe, moeActive},
		{"H", moe + 3*d*mf, moeActive + 3*d*mf},
	} {
		if c.active < 0 {
			c.active = c.layer
		}
		total, active, err := graph.CountConfig(tinyConfig("", c.letter))
		if err != nil {
			t.Fatal(err)
		}
		wantT, wantA := int64(frame+d+c.layer), int64(frame+d+c.active)
		if total != wantT || active != wantA {
			t.Errorf("%s: %d total, %d active; want %d, %d", c.letter, total, active, wantT, wantA)
		}
	}
	// The SSD variants differ only by D and the convs.
	for variant, extra := range map[string]int{"conv1d+D": (d + 2*g*n) * k, "a_t": -h} {
		cfg := tinyConfig("", "S")
		cfg.SSD.Variant = variant
		total, _, _ := graph.CountConfig(cfg)
		if want := int64(frame + d + ssdRope + extra); total != want {
			t.Errorf("ssd %s: %d, want %d", variant, total, want)
		}
	}
}

func TestBreakdownSumsToCount(t *testing.T) {
	m, err := graph.New(tinyConfig("jamba", ""))
	if err != nil {
		t.Fatal(err)
	}
	rows := m.Breakdown()
	var sum int64
	for _, r := range rows {
		sum += r.Total
	}
	if got := m.Params().Count(); got != sum {
		t.Errorf("breakdown sums to %d, the parameters to %d", sum, got)
	}
	if rows[1].Kind != "mamba2" || rows[1].Layers != 7 {
		t.Errorf("second row %+v, want 7 mamba2 layers", rows[1])
	}
}

// matchConfig is a model of d_model 128 (where one step of a knob is well
// under 1% of the total).
func matchConfig(arch, pattern string) graph.Config {
	c := tinyConfig(arch, pattern)
	c.DModel, c.Heads, c.MLP.DFF, c.CDMoE.DFF, c.CDMoE.Experts = 128, 4, 256, 128, 256
	return c
}

// TestMatch sizes one knob of several stacks to a cheems-like model's total
// count, within 1%, and reports a knob that cannot get there.
func TestMatch(t *testing.T) {
	ref, _, err := graph.CountConfig(matchConfig("cheems", ""))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		pattern string
		knob    graph.Knob
	}{
		{"(SM)7 AM", graph.KnobMLPWidth},
		{"(SE)7 AE", graph.KnobCDMoEWidth},
		{"(SR)7 IR", graph.KnobMoEExperts},
		{"(SE)7 IE", graph.KnobCDMoEWidth},
		{"(SR)7 IR", graph.KnobMoEWidth},
	} {
		got, err := graph.Match(matchConfig("", c.pattern), c.knob, ref, false)
		if err != nil {
			t.Errorf("%s by %s: %+v", c.pattern, c.knob, err)
			continue
		}
		total, _, _ := graph.CountConfig(got)
		if off := float64(total-ref) / float64(ref); off > 0.01 || off < -0.01 {
			t.Errorf("%s by %s: %d vs %d (%.2f%%)", c.pattern, c.knob, total, ref, 100*off)
		}
	}
	if _, err := graph.Match(matchConfig("", "S"), graph.KnobMLPWidth, ref, false); err == nil {
		t.Error("a knob the stack does not use matched")
	}
	if _, err := graph.Match(matchConfig("", "(SE)7 AE"), graph.KnobCDMoEExperts, 1000, false); err == nil {
		t.Error("a target below the smallest model matched")
	}
	if _, err := graph.Match(tinyConfig("", "M"), "mlp.width", ref, false); err == nil {
		t.Error("an unknown knob matched")
	}
}

// Checkpoints and the optimiser find parameters by name, so every name in
// every architecture is unique (Mamba2's gated norm once shared its block
// norm's name); New refuses a model where two collide.
func TestParamNamesUnique(t *testing.T) {
	for _, arch := range graph.ArchNames() {
		m, err := graph.New(graph.Config{Arch: arch, NBlocks: 2, Vocab: 16, DModel: 16, Heads: 2, CDMoE: layers.CDMoEConfig{Experts: 16, TopK: 2, RetDim: 8}})
		if err != nil {
			t.Fatalf("%s: %v", arch, err)
		}
		seen := map[string]bool{}
		for _, p := range m.Params() {
			if seen[p.Name] {
				t.Errorf("%s: %s twice", arch, p.Name)
			}
			seen[p.Name] = true
		}
	}
}
