package wmcli

import (
	"strings"
	"testing"

	"github.com/wonderful-matrices/wonderful-matrices-go/ops"
)

// The report's verdicts follow from the rows: a row at 2.5× meets the speed
// target, one at 1.2× whose matrix products alone allow 1.5× is named as out
// of reach, memory over the peer's is listed, the long-context ratio and the
// thread scaling are computed per pattern. A row whose rounds fall on both
// sides of 2× is marked unsettled with each round's ratio; one whose rounds
// agree is not.
func TestBenchAnalysis(t *testing.T) {
	row := func(pat string, d, seq, threads int, wmTrain, peerTrain, rss float64) benchRow {
		return benchRow{Pattern: pat, Size: benchSize{D: d, T: seq, B: 2}, Threads: threads, GemmRate: 100,
			WM:   benchResult{Train: wmTrain, Eval: 3 * wmTrain, RSSMB: rss, TrainGFLOP: 1, EvalGFLOP: 1.0 / 3},
			Peer: benchResult{Train: peerTrain, Eval: 3 * peerTrain, RSSMB: 100}}
	}
	noPeer := row("(SM)4", 64, 4096, 2, 72, 0, 90) // 0.9× of t512
	noPeer.Peer = benchResult{}
	rows := []benchRow{
		row("(SM)4", 64, 512, 1, 50, 20, 90),  // 2.5×, ceiling 102400 tok/s
		row("(SM)4", 64, 512, 2, 80, 100, 90), // 0.8×, ceiling 1024×
		noPeer,
		row("(AM)4", 64, 512, 2, 48000, 40000, 120), // 1.2×; ceiling 102400 = 2.56×
		row("(AM)4", 64, 512, 1, 30000, 68267, 80),  // ceiling 1.5×: out of reach
	}
	rows[0].RoundTrain = []float64{2.5, 1.9}  // best 2.5×: met, but not in every round
	rows[3].RoundTrain = []float64{1.2, 1.1}  // both below: settled
	rows[3].RoundEval = []float64{1.95, 2.05} // evaluation's best is 1.2× here, rounds aside
	got := benchAnalysis(rows)
	reportHas(t, got,
		"**Training ≥ 2× the peer:** met in 1 of 4 rows; 1 of the 4 rows unsettled (one round above 2×, another below).",
		"(SM)4 d64 t512 b2 ×1 2.50× (unsettled: rounds 2.50×, 1.90×)",
		"(AM)4 d64 t512 b2 ×2 1.20×, ceiling 2.56× (unsettled: rounds 1.95×, 2.05×)",
		// A row not met counts among the unsettled too.
		"**Evaluation ≥ 2× the peer:** met in 1 of 4 rows; 1 of the 4 rows unsettled (one round above 2×, another below).",
		"(AM)4 d64 t512 b2 ×2 1.20×, ceiling 2.56×",
		"(AM)4 d64 t512 b2 ×1 0.44×, out of reach: ceiling 1.50×",
		"**Peak RSS ≤ the peer's:** met in 3 of 4 rows. Not met: (AM)4 d64 t512 b2 ×2 1.20×.",
		"(SM)4 d64 ×2 0.90× (met)",
		"(SM)4 d64 t512: wm 1.60×, peer 5.00×",
		"| (SM)4 d64 t512 b2 ×1 | 100 | 1.00 | 102400 |",
	)
	if strings.Contains(got, "rounds 1.20×") {
		t.Errorf("rounds on one side of 2× are marked unsettled:\n%s", got)
	}
}

// A row where wm ran faster than its ceiling fails the ceiling check, by
// name, and its speed verdict claims no ceiling; the rows of
// TestBenchAnalysis, all below their ceilings, pass it.
func TestBenchCeilingCheck(t *testing.T) {
	r := benchRow{Pattern: "(SM)4", Size: benchSize{D: 256, T: 1024, B: 4}, Threads: 1, GemmRate: 62,
		WM:   benchResult{Train: 3600 * 1.17, Eval: 100, TrainGFLOP: 70.25, EvalGFLOP: 23.3},
		Peer: benchResult{Train: 3500, Eval: 90}}
	got := benchAnalysis([]benchRow{r})
	reportHas(t, got,
		"**Ceiling check failed** in 1 rows ((SM)4 d256 t1024 b4 ×1)",
		"(SM)4 d256 t1024 b4 ×1 1.20×, ceiling not valid (wm above it)",
	)
	r.GemmRate = 91
	if got := benchAnalysis([]benchRow{r}); strings.Contains(got, "Ceiling check failed") || strings.Contains(got, "not valid") {
		t.Errorf("a row below its ceiling failed the check:\n%s", got)
	}
}

// A row's own products, replayed alone, give a second ceiling: a row the
// linear-layer ceiling allows (2.56×) but whose products alone allow only
// 1.50× is named out of reach with both figures, the table shows the
// products' time and rate, the count of rows out of reach is given, and wm
// faster than its products alone fails the ceiling check.
func TestBenchProductCeiling(t *testing.T) {
	r := benchRow{Pattern: "(AM)4", Size: benchSize{D: 64, T: 512, B: 2}, Threads: 2, GemmRate: 100,
		WM:   benchResult{Train: 48000, Eval: 3 * 48000, TrainGFLOP: 1, EvalGFLOP: 1.0 / 3, TrainGemmMS: 1024.0 / 60, EvalGemmMS: 1024.0 / 600},
		Peer: benchResult{Train: 40000, Eval: 3 * 40000}}
	// Train: ceiling 102400 tok/s = 2.56× the peer; products alone 60000 = 1.50×.
	// Eval: products alone 600000 tok/s = 5.00×, reachable.
	got := benchAnalysis([]benchRow{r})
	reportHas(t, got,
		"(AM)4 d64 t512 b2 ×2 1.20×, out of reach: ceiling 2.56×, its own products alone 1.50×",
		"(AM)4 d64 t512 b2 ×2 1.20×, ceiling 2.56×, its own products alone 5.00×", // evaluation
		"| (AM)4 d64 t512 b2 ×2 | 17.1 | 59 | 60000 | 0.80× | 1.50× | 1.7 | 195 | 600000 | 0.24× | 5.00× |",
		"Out of reach on this machine: 1 of the 1 not met.",
	)
	if strings.Contains(got, "Ceiling check failed") {
		t.Errorf("a row below both ceilings failed the check:\n%s", got)
	}
	r.WM.TrainGemmMS = 1024.0 / 40 // products alone 40000 tok/s, below wm's 48000
	if got := benchAnalysis([]benchRow{r}); !strings.Contains(got, "**Ceiling check failed** in 1 rows ((AM)4 d64 t512 b2 ×2)") {
		t.Errorf("wm above its products alone passed the check:\n%s", got)
	}
}

// The products' time inside the step gives the row's step, that time and
// its rate, its ratios to the warm and the cold replay, the share of the
// step outside the products and the ceiling share without it; a path
// without the timing shows dashes, and rows without it leave the table
// out.
func TestBenchProductsInStep(t *testing.T) {
	r := benchRow{Pattern: "(AM)4", Size: benchSize{D: 64, T: 512, B: 2}, Threads: 2, GemmRate: 100,
		WM: benchResult{Train: 48000, Eval: 3 * 48000, TrainGFLOP: 1, EvalGFLOP: 1.0 / 3,
			TrainGemmMS: 1024.0 / 60, EvalGemmMS: 1024.0 / 600, TrainBLASMS: 20, TrainRecordedMS: 64.0 / 3, TrainOwnGemmMS: 1024.0 / 60, TrainColdGemmMS: 25},
		Peer: benchResult{Train: 40000, Eval: 3 * 40000}}
	// Train: step 21.3 ms, 20 ms of it in products (1 GFLOP: 50 GFLOP/s),
	// 1.17× their replay of 17.07 ms and 0.80× the cold one of 25 ms, 6%
	// outside them; without that 6%, 51200 tok/s against the ceiling's
	// 102400: 0.50×.
	reportHas(t, benchAnalysis([]benchRow{r}),
		"## The step's products where they ran, and the rest of the step",
		"| (AM)4 d64 t512 b2 ×2 | 21.3 | 20.0 | 50 | 1.17× | 0.80× | 6% | 0.50× | — | — | — | — | — | — | — |")
	r.WM.TrainBLASMS = 0
	if got := benchAnalysis([]benchRow{r}); strings.Contains(got, "where they ran") {
		t.Errorf("a row without the products' time in its step made the table:\n%s", got)
	}
}

// Merging the layouts of a row keeps the products' time in the step of the
// measurement each best figure came from (and the peer's evaluation form):
// training's with the faster training, evaluation's with the faster
// evaluation.
func TestBenchKeepPairsProductTimes(t *testing.T) {
	best := benchResult{Train: 100, Eval: 300, TrainBLASMS: 5, TrainRecordedMS: 6, TrainOwnGemmMS: 4, TrainColdGemmMS: 5.5,
		EvalBLASMS: 2, EvalRecordedMS: 2.2, EvalOwnGemmMS: 1.5, EvalColdGemmMS: 2.1, TrainGemmMS: 4, EvalGemmMS: 1.5, EvalForm: "eager"}
	if best.keep(benchResult{Train: 90, Eval: 350, TrainBLASMS: 6, TrainRecordedMS: 7, TrainOwnGemmMS: 3.9, TrainColdGemmMS: 5.4,
		EvalBLASMS: 1.8, EvalRecordedMS: 2, EvalOwnGemmMS: 1.6, EvalColdGemmMS: 2.3, TrainGemmMS: 3.9, EvalGemmMS: 1.6, EvalForm: "optimized"}) {
		t.Error("a slower training was kept as the faster")
	}
	if best.Train != 100 || best.TrainBLASMS != 5 || best.TrainRecordedMS != 6 || best.TrainOwnGemmMS != 4 || best.TrainColdGemmMS != 5.5 ||
		best.Eval != 350 || best.EvalBLASMS != 1.8 || best.EvalRecordedMS != 2 || best.EvalOwnGemmMS != 1.6 || best.EvalColdGemmMS != 2.3 ||
		best.TrainGemmMS != 3.9 || best.EvalGemmMS != 1.5 {
		t.Errorf("merged %+v: want training 100 with its 5 of 6 ms and its replays of 4 and 5.5 (cold), evaluation 350 with its 1.8 of 2 ms and its replays of 1.6 and 2.3, the fastest replays 3.9 and 1.5 ms", best)
	}
	if !best.keep(benchResult{Train: 120, Eval: 200, TrainBLASMS: 4.5, TrainRecordedMS: 5, EvalBLASMS: 3, EvalRecordedMS: 3.5, EvalForm: "eager"}) {
		t.Error("a faster training was not kept")
	}
	if best.Train != 120 || best.TrainBLASMS != 4.5 || best.TrainRecordedMS != 5 || best.Eval != 350 || best.EvalBLASMS != 1.8 || best.EvalRecordedMS != 2 || best.EvalForm != "optimized" {
		t.Errorf("merged %+v: want training 120 with its 4.5 of 5 ms, evaluation still 350 with its 1.8 of 2 ms, optimized", best)
	}
}

// The note counts the rows whose peer's best evaluation came from each
// form, and says nothing where no peer reported one.
func TestEvalFormNote(t *testing.T) {
	rows := []benchRow{{Peer: benchResult{EvalForm: "optimized"}}, {Peer: benchResult{EvalForm: "eager"}}, {Peer: benchResult{EvalForm: "optimized"}}, {}}
	if got := evalFormNote(rows); !strings.HasSuffix(got, ": optimized in 2, eager in 1 of its rows' best figures.") {
		t.Errorf("evalFormNote = %q", got)
	}
	if got := evalFormNote(rows[3:]); got != "" {
		t.Errorf("no forms: %q", got)
	}
}

// The header names the OpenBLAS kernels of both sides, and the rows where
// they differ, which are not like for like; rows without a peer count only
// for wm's side.
func TestBenchBLASCoreNote(t *testing.T) {
	t.Setenv("OPENBLAS_CORETYPE", "")
	row := func(pat, wm, peer string) benchRow {
		return benchRow{Pattern: pat, Size: benchSize{D: 64, T: 256, B: 8}, Threads: 1,
			WM: benchResult{Train: 2, BLASCore: wm}, Peer: benchResult{Train: 1, BLASCore: peer}}
	}
	same := []benchRow{row("(SM)4", "Cooperlake", "Cooperlake"), row("(AM)4", "Cooperlake", "Cooperlake")}
	chooser := "chosen by OpenBLAS from the CPU"
	if was := ops.BLASCoreReplaced(); was != "" {
		chooser = "chosen by wm from the CPU's features in place of OpenBLAS's " + was + " fallback"
	}
	if got, want := blasCoreNote(same), "OpenBLAS kernels: wm Cooperlake; peer Cooperlake ("+chooser+")."; got != want {
		t.Errorf("same kernels: got %q, want %q", got, want)
	}
	noPeer := row("(SE)3 IE", "Cooperlake", "")
	noPeer.Peer = benchResult{}
	mixed := append(same, row("(AM)4", "Cooperlake", "Haswell"), noPeer)
	got := blasCoreNote(mixed)
	for _, want := range []string{"wm Cooperlake; peer Cooperlake, Haswell", "**Not like for like:** the two sides ran different kernels in (AM)4 d64 t256 b8 ×1."} {
		if !strings.Contains(got, want) {
			t.Errorf("mixed kernels: %q lacks %q", got, want)
		}
	}
	t.Setenv("OPENBLAS_CORETYPE", "Haswell")
	if got := blasCoreNote(same); !strings.Contains(got, "(named by OPENBLAS_CORETYPE=Haswell)") {
		t.Errorf("forced kernels: %q does not say who named them", got)
	}
}

// The header names the scheduling policy of both sides (sidesNote, as for
// the kernels above), and the rows where they differ.
func TestBenchSchedNote(t *testing.T) {
	side := func(sched string) benchResult { return benchResult{Train: 1, Sched: sched} }
	z := benchSize{D: 64, T: 256, B: 8}
	rows := []benchRow{
		{Pattern: "(SM)4", Size: z, Threads: 2, WM: side("batch"), Peer: side("batch")},
		{Pattern: "(SR)3 AR", Size: z, Threads: 2, WM: side("batch"), Peer: side("normal")},
		{Pattern: "(SH)3 AH", Size: z, Threads: 2, WM: side(""), Peer: side("")},
	}
	if got, want := schedNote(rows[:1]), "Scheduling policy: wm batch (SCHED_BATCH); peer batch (SCHED_BATCH)."; got != want {
		t.Errorf("same policy: got %q, want %q", got, want)
	}
	got := schedNote(rows)
	for _, want := range []string{"wm batch (SCHED_BATCH), not reported; peer batch (SCHED_BATCH), normal (SCHED_OTHER), not reported",
		"**Not like for like:** the two sides ran under different policies in (SR)3 AR d64 t256 b8 ×2."} {
		if !strings.Contains(got, want) {
			t.Errorf("mixed policies: %q lacks %q", got, want)
		}
	}
}

// The header says how many cores each side had, whether wm bench confined
// them, and the rows where the two sides had different numbers.
func TestBenchCoresNote(t *testing.T) {
	side := func(cores int) benchResult { return benchResult{Train: 1, Cores: cores} }
	z := benchSize{D: 64, T: 256, B: 8}
	rows := []benchRow{
		{Pattern: "(SM)4", Size: z, Threads: 1, WM: side(1), Peer: side(1)},
		{Pattern: "(SM)4", Size: z, Threads: 2, WM: side(2), Peer: side(2)},
		{Pattern: "(AM)4", Size: z, Threads: 1, WM: side(1), Peer: side(0)},
	}
	if got, want := coresNote(rows[:2], true), "Cores: wm 1, 2; peer 1, 2 (each measurement of a row on p threads confined to the same p cores, both sides alike: --pin)."; got != want {
		t.Errorf("pinned: got %q, want %q", got, want)
	}
	got := coresNote(rows, false)
	for _, want := range []string{"peer 1, 2, not reported (each measurement free to run on any core: --pin=false)",
		"**Not like for like:** the two sides ran on different numbers of cores in (AM)4 d64 t256 b8 ×1."} {
		if !strings.Contains(got, want) {
			t.Errorf("unpinned, one side unreported: %q lacks %q", got, want)
		}
	}
}

// The notes name wm's collector setting as the measurements report it,
// every distinct one, and say nothing where none reports one.
func TestBenchGCNote(t *testing.T) {
	side := func(gc string) benchResult { return benchResult{Train: 1, GC: gc} }
	z := benchSize{D: 64, T: 256, B: 8}
	rows := []benchRow{
		{Pattern: "(SM)4", Size: z, Threads: 1, WM: side("GOGC=25"), Peer: side("")},
		{Pattern: "(SM)4", Size: z, Threads: 2, WM: side("GOGC=25"), Peer: side("")},
		{Pattern: "(AM)4", Size: z, Threads: 1, WM: side("GOGC=100"), Peer: side("")},
		{Pattern: "(AM)4", Size: z, Threads: 2, WM: side(""), Peer: side("")},
	}
	if got, want := gcNote(rows[:2]), "Go's collector (wm): GOGC=25."; got != want {
		t.Errorf("one setting: got %q, want %q", got, want)
	}
	if got, want := gcNote(rows), "Go's collector (wm): GOGC=25, GOGC=100."; got != want {
		t.Errorf("two settings: got %q, want %q", got, want)
	}
	if got := gcNote(rows[3:]); got != "" {
		t.Errorf("no setting reported: got %q, want none", got)
	}
	if got := benchNotes(rows[:1], true); !strings.HasSuffix(got, " Go's collector (wm): GOGC=25.") || !strings.HasPrefix(got, "OpenBLAS kernels") {
		t.Errorf("the notes %q do not end with the collector's", got)
	}
}

// The share of the ceiling is judged per d_model: 0.6 at d_model 64, 0.9
// at 256; a row of another width is left out, and one faster than its
// ceiling is not counted as met.
func TestBenchCeilingShare(t *testing.T) {
	row := func(d int, train, eval float64) benchRow {
		// 1024 tokens a step, 1 GFLOP a step at 100 GFLOP/s: a ceiling of
		// 102400 tok/s for both paths.
		return benchRow{Pattern: "(SM)4", Size: benchSize{D: d, T: 512, B: 2}, Threads: 1, GemmRate: 100,
			WM: benchResult{Train: train * 102400, Eval: eval * 102400, TrainGFLOP: 1, EvalGFLOP: 1}}
	}
	got := benchAnalysis([]benchRow{row(64, 0.7, 0.599), row(256, 0.85, 0.95), row(128, 0.1, 0.1), row(64, 1.2, 0.6)})
	reportHas(t, got,
		"**Training at its share of the matrix-product ceiling (wm ÷ ceiling ≥ 0.6 at d_model 64, ≥ 0.9 at d_model 256):** met in 1 of 3 rows. Met: (SM)4 d64 t512 b2 ×1 0.700. Not met: (SM)4 d256 t512 b2 ×1 0.850 (target 0.9); (SM)4 d64 t512 b2 ×1 ceiling not valid (wm above it).",
		"**Evaluation at its share of the matrix-product ceiling (wm ÷ ceiling ≥ 0.6 at d_model 64, ≥ 0.9 at d_model 256):** met in 2 of 3 rows. Met: (SM)4 d256 t512 b2 ×1 0.950; (SM)4 d64 t512 b2 ×1 0.600. Not met: (SM)4 d64 t512 b2 ×1 0.599 (target 0.6).",
	)
	if strings.Contains(got, "d128 t512 b2 ×1 0.100") {
		t.Errorf("a d_model 128 row was judged:\n%s", got)
	}
}

// reportHas fails the test for each of wants that the report got lacks.
func reportHas(t *testing.T, got string, wants ...string) {
	t.Helper()
	for _, want := range wants {
		if !strings.Contains(got, want) {
			t.Errorf("report lacks %q:\n%s", want, got)
		}
	}
}

// The report's header names the processor with its family and model, so
// that runs on two generations of one "AMD EPYC" can be told apart.
func TestCPUModelOf(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"processor\t: 0\nvendor_id\t: AuthenticAMD\ncpu family\t: 25\nmodel\t\t: 17\nmodel name\t: AMD EPYC\n\nprocessor\t: 1\ncpu family\t: 26\nmodel\t\t: 2\nmodel name\t: other\n", "AMD EPYC, family 25, model 17"},
		{"model name\t: ARMv8 Processor\n", "ARMv8 Processor"},
		{"processor\t: 0\n", "unknown CPU"},
		{"", "unknown CPU"},
	} {
		if got := cpuModelOf(c.in); got != c.want {
			t.Errorf("cpuModelOf(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

// The cores' multiply-add peak is given under the ceiling table at each
// thread count with the BLAS rate's share of it, and left out where no
// row has one (reports from before wm measured it).
func TestBenchPeakNote(t *testing.T) {
	row := func(threads int, rate, peak float64) benchRow {
		return benchRow{Pattern: "(SM)4", Size: benchSize{D: 64, T: 512, B: 2}, Threads: threads, GemmRate: rate, FMAPeak: peak,
			WM: benchResult{Train: 100, Eval: 300, TrainGFLOP: 1, EvalGFLOP: 1.0 / 3}, Peer: benchResult{Train: 40, Eval: 90}}
	}
	got := benchAnalysis([]benchRow{row(2, 300, 400), row(1, 160, 185), row(1, 160, 185)})
	reportHas(t, got, "The cores' float32 multiply-add peak (ops.FMAPeak",
		": 185 GFLOP/s on 1 thread (the BLAS rate above is 0.86× of it); 400 GFLOP/s on 2 threads (the BLAS rate above is 0.75× of it).")
	if strings.Count(got, "multiply-add peak") != 1 {
		t.Errorf("the peak is given more than once:\n%s", got)
	}
	if got := benchAnalysis([]benchRow{row(1, 160, 0)}); strings.Contains(got, "multiply-add peak") {
		t.Errorf("a report without a peak reading names one:\n%s", got)
	}
}
