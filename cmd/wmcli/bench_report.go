package wmcli

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/wonderful-matrices/wonderful-matrices-go/experiments/train"
)

// benchTableHeader is the first line of wm bench's table of rows.
const benchTableHeader = "| pattern | d_model | seq_len | batch | threads | wm shards | peer threads (OpenMP×BLAS) | wm train tok/s | peer train tok/s | train ratio | wm eval tok/s | peer eval tok/s | eval ratio | wm peak RSS MB | peer peak RSS MB | RSS ratio |"

// benchTableDelimiter is the table's second line: one cell per column
// (Markdown reads no table where the counts differ), the pattern
// left-aligned, wm's shard count centred, numbers right-aligned.
const benchTableDelimiter = "| --- | ---: | ---: | ---: | ---: | :---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"

// benchCeilingHeader is the first line of the matrix-product ceiling table.
const benchCeilingHeader = "| row | BLAS GFLOP/s | GFLOP per train step | train ceiling tok/s | wm ÷ ceiling | ceiling ÷ peer | GFLOP per eval step | eval ceiling tok/s | wm ÷ ceiling | ceiling ÷ peer |"

// benchRow is one measurement of `wm bench`: wm and the peer on one
// pattern, size and thread count, and the BLAS's rate at that thread count.
type benchRow struct {
	Pattern  string
	Size     benchSize
	Threads  int
	WM, Peer benchResult
	GemmRate float64 // GFLOP/s
	// FMAPeak is the cores' float32 multiply-add peak on the row's threads
	// (ops.FMAPeak, the best reading), GFLOP/s; 0 where unknown.
	FMAPeak float64
	// WMLayout is how wm's best training figure used the cores: the number
	// of graphs a batch was split over (1: one graph) and the cap on each
	// shard's loops (0: none).
	WMLayout train.Layout
	// PeerLayout is the peer's thread layout of its best training figure
	// ("2×1"), "—" without a peer.
	PeerLayout string
	// RoundTrain and RoundEval are wm ÷ peer within each round of wm
	// bench --rounds, each side at its best layout in that round (empty
	// without a peer).
	RoundTrain, RoundEval []float64
}

func (r benchRow) label() string {
	return fmt.Sprintf("%s d%d t%d b%d ×%d", r.Pattern, r.Size.D, r.Size.T, r.Size.B, r.Threads)
}

// ceiling is the tokens/s of a step made of its matrix products alone at
// the BLAS's measured rate (0 when either is unknown).
func (r benchRow) ceiling(gflop float64) float64 {
	if gflop <= 0 || r.GemmRate <= 0 {
		return 0
	}
	return float64(r.Size.T*r.Size.B) * r.GemmRate / gflop
}

// productCeiling is the tokens/s of a step made of its own products, as
// replayed alone in ms per step (0 when unknown).
func (r benchRow) productCeiling(ms float64) float64 {
	if ms <= 0 {
		return 0
	}
	return float64(r.Size.T*r.Size.B) / (ms / 1000)
}

// productRate is the rate, in GFLOP/s, at which a step's own products ran
// when replayed alone (0 when unknown).
func productRate(gflop, ms float64) float64 {
	if ms <= 0 {
		return 0
	}
	return gflop / (ms / 1000)
}

// The performance targets: speed against the peer, and SSD's speed at a
// long context against a short one.
const (
	speedTarget    = 2.0 // wm tokens/s ÷ peer's, training and evaluation
	longSeqTarget  = 0.8 // SSD stacks: tokens/s at the longest ÷ at the shortest context
	benchLongSeq   = 4096
	benchShortSeqs = 512
)

// benchAnalysis is the part of `wm bench`'s report computed from its rows:
// the matrix-product ceiling of each row, then each performance target
// (speed ≥ 2× the peer, peak memory ≤ the peer's, SSD at t 4096 ≥ 0.8× its
// t 512 speed, scaling to 2 threads) with the rows that meet it and those
// that do not.
func benchAnalysis(rows []benchRow) string {
	var b strings.Builder
	b.WriteString("## Matrix-product ceiling\n\n")
	b.WriteString("A step's matrix products (counted by ops.GemmFLOPs) at the rate this machine's BLAS reaches on a linear layer's products (ops.GemmRate at the row's thread count: the products split across the threads, on the BLAS or as a linear layer's op runs them, or one product per thread at once as the shards run them, whichever is fastest) take a fixed time; if everything else in the step took none, wm would run at the ceiling. Where the ceiling is below twice the peer, a 2× lead is out of reach on this machine whatever the rest of the step costs.\n\n")
	b.WriteString(benchCeilingHeader + "\n")
	b.WriteString("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n")
	for _, r := range rows {
		ct, ce := r.ceiling(r.WM.TrainGFLOP), r.ceiling(r.WM.EvalGFLOP)
		fmt.Fprintf(&b, "| %s | %.0f | %.2f | %s | %s | %s | %.2f | %s | %s | %s |\n", r.label(), r.GemmRate,
			r.WM.TrainGFLOP, num(ct), ratio(r.WM.Train, ct), ratio(ct, r.Peer.Train),
			r.WM.EvalGFLOP, num(ce), ratio(r.WM.Eval, ce), ratio(ce, r.Peer.Eval))
	}
	peakNote(&b, rows)
	productCeilings(&b, rows)
	productsInStep(&b, rows)
	ceilingCheck(&b, rows)
	b.WriteString("\n## Performance targets, computed from the rows above\n\n")
	speedTargets(&b, rows, "Training", func(r benchRow) speedFigures {
		return speedFigures{r.WM.Train, r.Peer.Train, r.ceiling(r.WM.TrainGFLOP), r.productCeiling(r.WM.TrainGemmMS), r.RoundTrain}
	})
	speedTargets(&b, rows, "Evaluation", func(r benchRow) speedFigures {
		return speedFigures{r.WM.Eval, r.Peer.Eval, r.ceiling(r.WM.EvalGFLOP), r.productCeiling(r.WM.EvalGemmMS), r.RoundEval}
	})
	ceilingShareTargets(&b, rows)
	memoryTarget(&b, rows)
	longSeqTargets(&b, rows)
	scaling(&b, rows)
	return b.String()
}

// peakNote says, under the ceiling table, the cores' multiply-add peak at
// each thread count and the BLAS rate's share of it: how far a step's
// products could run past the ceiling's rate (nothing where no row has a
// peak, as in reports from before wm measured it).
func peakNote(b *strings.Builder, rows []benchRow) {
	type pair struct{ rate, peak float64 }
	at := map[int]pair{}
	var threads []int
	for _, r := range rows {
		if r.FMAPeak <= 0 {
			continue
		}
		if _, seen := at[r.Threads]; !seen {
			threads = append(threads, r.Threads)
		}
		at[r.Threads] = pair{r.GemmRate, r.FMAPeak}
	}
	if len(threads) == 0 {
		return
	}
	sort.Ints(threads)
	var parts []string
	for _, p := range threads {
		v := at[p]
		part := fmt.Sprintf("%.0f GFLOP/s on %s", v.peak, plural(p, "thread"))
		if v.rate > 0 {
			part += fmt.Sprintf(" (the BLAS rate above is %.2f× of it)", v.rate/v.peak)
		}
		parts = append(parts, part)
	}
	fmt.Fprintf(b, "\nThe cores' float32 multiply-add peak (ops.FMAPeak: independent multiply-adds at the widest vectors, measured beside each BLAS reading, the best kept): %s. A step's products can run faster than the ceiling's rate, up to this peak: that is how a row can run above its ceiling (the ceiling check below).\n", strings.Join(parts, "; "))
}

// productCeilings is the table of each row's own products replayed alone
// (rows without a replay are left out; no table when none has one).
func productCeilings(b *strings.Builder, rows []benchRow) {
	var lines []string
	for _, r := range rows {
		if r.WM.TrainGemmMS <= 0 && r.WM.EvalGemmMS <= 0 {
			continue
		}
		ct, ce := r.productCeiling(r.WM.TrainGemmMS), r.productCeiling(r.WM.EvalGemmMS)
		lines = append(lines, fmt.Sprintf("| %s | %.1f | %s | %s | %s | %s | %.1f | %s | %s | %s | %s |\n", r.label(),
			r.WM.TrainGemmMS, num(productRate(r.WM.TrainGFLOP, r.WM.TrainGemmMS)), num(ct), ratio(r.WM.Train, ct), ratio(ct, r.Peer.Train),
			r.WM.EvalGemmMS, num(productRate(r.WM.EvalGFLOP, r.WM.EvalGemmMS)), num(ce), ratio(r.WM.Eval, ce), ratio(ce, r.Peer.Eval)))
	}
	writeSection(b, "The step's own products, replayed alone", "The ceiling above prices every product at a large linear layer's rate, but a step's products include smaller and thinner ones (the SSD's chunk products, attention's products per head, the narrow B, C and dt projections) that no BLAS runs as fast. So each wm measurement also records the products of one more step, each with its shape, transposes and leading dimensions, and times them alone through the same BLAS on as many threads (ops.ReplayGemmShapes: each shape's count split between the threads, operands warm in cache, the faster of two replays, the fastest of the rounds and layouts). A step cannot run faster than its own products; where this product ceiling is below twice the peer, 2× is out of reach with these products whatever the rest of the step costs.\n\n", "| row | train products ms | their GFLOP/s | train product ceiling tok/s | wm ÷ it | it ÷ peer | eval products ms | their GFLOP/s | eval product ceiling tok/s | wm ÷ it | it ÷ peer |\n", lines)
}

// writeSection writes a report section: its heading, an introduction and a
// table of the given header row and lines, its first column left-aligned
// and the rest right-aligned; nothing when there are no lines.
func writeSection(b *strings.Builder, heading, intro, header string, lines []string) {
	if len(lines) == 0 {
		return
	}
	fmt.Fprintf(b, "\n## %s\n\n%s", heading, intro)
	b.WriteString(header)
	b.WriteString("| --- |" + strings.Repeat(" ---: |", strings.Count(header, "|")-2) + "\n")
	for _, l := range lines {
		b.WriteString(l)
	}
}

// productsInStep is the table of where each row's step went: the time its
// products took inside a step (the BLAS calls of the recorded step, per
// core), against the same products replayed alone and against that step,
// and the share of the ceiling the row would reach if nothing outside its
// products took any time (rows without the timing are left out; no table
// when none has it).
func productsInStep(b *strings.Builder, rows []benchRow) {
	var lines []string
	for _, r := range rows {
		if r.WM.TrainBLASMS <= 0 && r.WM.EvalBLASMS <= 0 {
			continue
		}
		cells := func(stepMS, gflop, blasMS, replayMS, coldMS float64) string {
			if blasMS <= 0 || stepMS <= 0 {
				return "— | — | — | — | — | — | —"
			}
			return fmt.Sprintf("%.1f | %.1f | %s | %s | %s | %s | %s", stepMS, blasMS, num(productRate(gflop, blasMS)),
				ratio(blasMS, replayMS), ratio(blasMS, coldMS), percent(1-blasMS/stepMS), ratio(r.productCeiling(blasMS), r.ceiling(gflop)))
		}
		lines = append(lines, fmt.Sprintf("| %s | %s | %s |\n", r.label(),
			cells(r.WM.TrainRecordedMS, r.WM.TrainGFLOP, r.WM.TrainBLASMS, r.WM.TrainOwnGemmMS, r.WM.TrainColdGemmMS),
			cells(r.WM.EvalRecordedMS, r.WM.EvalGFLOP, r.WM.EvalBLASMS, r.WM.EvalOwnGemmMS, r.WM.EvalColdGemmMS)))
	}
	writeSection(b, "The step's products where they ran, and the rest of the step", "The same recorded step also times its BLAS calls where they ran, among the step's other passes, from just before each call to just after it, so OpenBLAS's packing copies and its clearing of the output count as the product's (ops.GemmRecording.BLASTime: while n calls are in flight, min(n, cores) cores count as busy in them; divided by the threads: milliseconds of each core). From the measurement of wm's best figure of each path: the recorded step's time, the products' time in it, their rate there, that time against the same step's products replayed alone (how much slower they ran in the step than with their operands warm; the replay of this measurement, where the table above keeps the fastest of the layouts), that time against the same products replayed with every operand out of cache (ops.ReplayGemmShapesCold: each product's operands taken from the next place along buffers of twice the last-level cache; a step keeps some operands warm, so its products should take between the two replays, and near the cold one they lose to the memory their operands come from, not to the step's other work), the share of the step's core time outside the products (the passes between them, Go's runtime, and cores left idle), and the share of the ceiling above the row would reach if that outside share were nothing: a share target above it cannot be met by work outside the products. One step, untimed by the figures above, so its time can differ from theirs by the host's few percent.\n\n", "| row | train step ms | products in it ms | their GFLOP/s | ÷ replayed | ÷ replayed cold | outside the products | ceiling share without the outside | eval step ms | products in it ms | their GFLOP/s | ÷ replayed | ÷ replayed cold | outside the products | ceiling share without the outside |\n", lines)
}

// percent is x as a percentage with no decimals.
func percent(x float64) string { return fmt.Sprintf("%.0f%%", 100*x) }

// ceilingCheck names the rows where wm ran faster than one of its
// ceilings: the BLAS rate measured is then below what the step's own
// products reached (or the replay is slower than the products inside the
// step), and those rows' ceilings (and "out of reach") mean nothing. A
// control, not a finding: it should name no row.
func ceilingCheck(b *strings.Builder, rows []benchRow) {
	var bad []string
	for _, r := range rows {
		above := func(wm, ceil float64) bool { return ceil > 0 && wm > ceil }
		if above(r.WM.Train, r.ceiling(r.WM.TrainGFLOP)) || above(r.WM.Eval, r.ceiling(r.WM.EvalGFLOP)) ||
			above(r.WM.Train, r.productCeiling(r.WM.TrainGemmMS)) || above(r.WM.Eval, r.productCeiling(r.WM.EvalGemmMS)) {
			bad = append(bad, r.label())
		}
	}
	if len(bad) > 0 {
		fmt.Fprintf(b, "\n**Ceiling check failed** in %d rows (%s): wm ran faster than a ceiling, so the BLAS rate measured (or the replay of the step's products) is below what those steps' products reached, and their ceilings are not valid.\n", len(bad), strings.Join(bad, "; "))
	}
}

// ceilingShareTarget is the share of its matrix-product ceiling (wm ÷
// ceiling, the ceiling table's column) a row of each d_model should reach:
// at d_model 64 a step is mostly the passes between its products, at 256
// mostly the products.
var ceilingShareTarget = map[int]float64{64: 0.6, 256: 0.9}

// ceilingShareTargets lists, for training and for evaluation, the rows of a
// d_model with a share target that reach it and those that do not (rows of
// other widths are left out). A row faster than its ceiling has no valid
// share (ceilingCheck names it) and is listed as such, not met.
func ceilingShareTargets(b *strings.Builder, rows []benchRow) {
	for _, path := range []struct {
		name string
		get  func(benchRow) (wm, ceiling float64)
	}{
		{"Training", func(r benchRow) (float64, float64) { return r.WM.Train, r.ceiling(r.WM.TrainGFLOP) }},
		{"Evaluation", func(r benchRow) (float64, float64) { return r.WM.Eval, r.ceiling(r.WM.EvalGFLOP) }},
	} {
		var met, missed []string
		n := 0
		for _, r := range rows {
			target, ok := ceilingShareTarget[r.Size.D]
			wm, ceil := path.get(r)
			if !ok || wm <= 0 || ceil <= 0 {
				continue
			}
			n++
			switch share := wm / ceil; {
			case share > 1:
				missed = append(missed, r.label()+" ceiling not valid (wm above it)")
			case share >= target:
				met = append(met, fmt.Sprintf("%s %.3f", r.label(), share))
			default:
				missed = append(missed, fmt.Sprintf("%s %.3f (target %.1f)", r.label(), share, target))
			}
		}
		if n == 0 {
			continue
		}
		fmt.Fprintf(b, "- **%s at its share of the matrix-product ceiling (wm ÷ ceiling ≥ 0.6 at d_model 64, ≥ 0.9 at d_model 256):** met in %d of %d rows.", path.name, len(met), n)
		if len(met) > 0 {
			fmt.Fprintf(b, " Met: %s.", strings.Join(met, "; "))
		}
		if len(missed) > 0 {
			fmt.Fprintf(b, " Not met: %s.", strings.Join(missed, "; "))
		}
		b.WriteString("\n")
	}
}

// speedFigures is what speedTargets reads of a row for one path (training
// or evaluation): tokens/s of both sides, the two ceilings, and wm ÷ peer
// in each round.
type speedFigures struct {
	wm, peer, ceiling, productCeiling float64
	rounds                            []float64
}

// speedTargets lists the rows with a peer where wm is at least speedTarget
// times as fast (best figure against best figure), and those where it is
// not, with the ceiling's ratio. A row whose rounds fall on both sides of
// the target is marked unsettled, with each round's ratio: its verdict rests
// on the best round of each side.
func speedTargets(b *strings.Builder, rows []benchRow, what string, get func(benchRow) speedFigures) {
	var met, missed, unsettled []string
	var outOfReach int
	for _, r := range rows {
		f := get(r)
		wm, peer, ceil, rounds := f.wm, f.peer, f.ceiling, f.rounds
		if peer <= 0 {
			continue
		}
		note := ""
		if straddles(rounds, speedTarget) {
			unsettled = append(unsettled, r.label())
			parts := make([]string, len(rounds))
			for i, v := range rounds {
				parts[i] = fmt.Sprintf("%.2f×", v)
			}
			note = fmt.Sprintf(" (unsettled: rounds %s)", strings.Join(parts, ", "))
		}
		if wm/peer >= speedTarget {
			met = append(met, fmt.Sprintf("%s %.2f×%s", r.label(), wm/peer, note))
			continue
		}
		why, pc := "", f.productCeiling
		switch {
		case (ceil > 0 && wm > ceil) || (pc > 0 && wm > pc):
			why = ", ceiling not valid (wm above it)"
		case ceil > 0 && ceil/peer < speedTarget:
			why = fmt.Sprintf(", out of reach: ceiling %.2f×", ceil/peer)
			outOfReach++
		case pc > 0 && pc/peer < speedTarget:
			why = fmt.Sprintf(", out of reach: ceiling %.2f×, its own products alone %.2f×", ceil/peer, pc/peer)
			outOfReach++
		case ceil > 0 && pc > 0:
			why = fmt.Sprintf(", ceiling %.2f×, its own products alone %.2f×", ceil/peer, pc/peer)
		case ceil > 0:
			why = fmt.Sprintf(", ceiling %.2f×", ceil/peer)
		}
		missed = append(missed, fmt.Sprintf("%s %.2f×%s%s", r.label(), wm/peer, why, note))
	}
	compared := len(met) + len(missed)
	fmt.Fprintf(b, "- **%s ≥ %.0f× the peer:** met in %d of %d rows", what, speedTarget, len(met), compared)
	if len(unsettled) > 0 {
		// Unsettled counts every row, met or not: the rows whose rounds
		// straddle the target, whichever side their best figures fall on.
		fmt.Fprintf(b, "; %d of the %d rows unsettled (one round above %.0f×, another below)", len(unsettled), compared, speedTarget)
	}
	b.WriteString(".")
	if len(met) > 0 {
		fmt.Fprintf(b, " Met: %s.", strings.Join(met, "; "))
	}
	if len(missed) > 0 {
		fmt.Fprintf(b, " Not met: %s.", strings.Join(missed, "; "))
		fmt.Fprintf(b, " Out of reach on this machine: %d of the %d not met.", outOfReach, len(missed))
	}
	b.WriteString("\n")
}

// straddles says whether some of the ratios reach target and others do not.
func straddles(ratios []float64, target float64) bool {
	above, below := false, false
	for _, v := range ratios {
		if v >= target {
			above = true
		} else {
			below = true
		}
	}
	return above && below
}

func memoryTarget(b *strings.Builder, rows []benchRow) {
	var n int
	var over []string
	for _, r := range rows {
		if r.Peer.RSSMB <= 0 || r.WM.RSSMB <= 0 {
			continue
		}
		n++
		if r.WM.RSSMB > r.Peer.RSSMB {
			over = append(over, fmt.Sprintf("%s %.2f×", r.label(), r.WM.RSSMB/r.Peer.RSSMB))
		}
	}
	fmt.Fprintf(b, "- **Peak RSS ≤ the peer's:** met in %d of %d rows.", n-len(over), n)
	if len(over) > 0 {
		fmt.Fprintf(b, " Not met: %s.", strings.Join(over, "; "))
	}
	b.WriteString("\n")
}

// longSeqTargets compares, per pattern, d_model and thread count, training
// tokens/s at benchLongSeq with that at benchShortSeqs.
func longSeqTargets(b *strings.Builder, rows []benchRow) {
	type key struct {
		pattern    string
		d, threads int
	}
	short, long := map[key]float64{}, map[key]float64{}
	var keys []key
	for _, r := range rows {
		k := key{r.Pattern, r.Size.D, r.Threads}
		switch r.Size.T {
		case benchShortSeqs:
			short[k] = r.WM.Train
		case benchLongSeq:
			long[k] = r.WM.Train
			keys = append(keys, k)
		}
	}
	var parts []string
	for _, k := range keys {
		if s := short[k]; s > 0 {
			v := long[k] / s
			verdict := "met"
			if v < longSeqTarget {
				verdict = "not met"
			}
			parts = append(parts, fmt.Sprintf("%s d%d ×%d %.2f× (%s)", k.pattern, k.d, k.threads, v, verdict))
		}
	}
	if len(parts) == 0 {
		return
	}
	fmt.Fprintf(b, "- **SSD stacks at t %d ≥ %.1f× their t %d training tokens/s:** %s.\n", benchLongSeq, longSeqTarget, benchShortSeqs, strings.Join(parts, "; "))
}

// scaling gives, per pattern and size, tokens/s at the most threads
// measured ÷ at one thread, for wm and the peer.
func scaling(b *strings.Builder, rows []benchRow) {
	type key struct {
		pattern string
		size    benchSize
	}
	byKey := map[key]map[int]benchRow{}
	var keys []key
	maxThreads := 1
	for _, r := range rows {
		k := key{r.Pattern, r.Size}
		if byKey[k] == nil {
			byKey[k] = map[int]benchRow{}
			keys = append(keys, k)
		}
		byKey[k][r.Threads] = r
		maxThreads = max(maxThreads, r.Threads)
	}
	if maxThreads == 1 {
		return
	}
	var parts []string
	for _, k := range keys {
		one, ok1 := byKey[k][1]
		top, ok2 := byKey[k][maxThreads]
		if !ok1 || !ok2 || one.WM.Train <= 0 {
			continue
		}
		s := fmt.Sprintf("%s d%d t%d: wm %.2f×", k.pattern, k.size.D, k.size.T, top.WM.Train/one.WM.Train)
		if one.Peer.Train > 0 && top.Peer.Train > 0 {
			s += fmt.Sprintf(", peer %.2f×", top.Peer.Train/one.Peer.Train)
		}
		parts = append(parts, s)
	}
	fmt.Fprintf(b, "- **Scaling, training tokens/s at %d threads ÷ at 1:** %s.\n", maxThreads, strings.Join(parts, "; "))
}

// benchNotes are the report's notes on how each side ran: the OpenBLAS
// kernels, the scheduling policy, the cores and wm's collector.
func benchNotes(rows []benchRow, pin bool) string {
	notes := blasCoreNote(rows) + " " + schedNote(rows) + " " + coresNote(rows, pin)
	if gc := gcNote(rows); gc != "" {
		notes += " " + gc
	}
	return notes
}

// evalFormNote says in how many rows the peer's best evaluation figure came
// from each form it times (eagerly, and as PyTorch's inference path makes
// the model), "" when no row's peer reported a form.
func evalFormNote(rows []benchRow) string {
	count := map[string]int{}
	var forms []string
	for _, r := range rows {
		if f := r.Peer.EvalForm; f != "" {
			forms = appendNew(forms, f)
			count[f]++
		}
	}
	if len(forms) == 0 {
		return ""
	}
	parts := make([]string, len(forms))
	for i, f := range forms {
		parts[i] = fmt.Sprintf("%s in %d", f, count[f])
	}
	return "The peer's evaluation, timed eagerly and as torch.jit.optimize_for_inference makes the traced, frozen model, the faster kept: " + strings.Join(parts, ", ") + " of its rows' best figures."
}

// gcNote names the garbage collector settings wm's measurements report
// (the step commands run at GOGC=25 unless GOGC is set: cmd/wmcli/gc.go),
// "" when none reports one.
func gcNote(rows []benchRow) string {
	var gc []string
	for _, r := range rows {
		if r.WM.GC != "" {
			gc = appendNew(gc, r.WM.GC)
		}
	}
	if len(gc) == 0 {
		return ""
	}
	return "Go's collector (wm): " + strings.Join(gc, ", ") + "."
}

// blasCoreNote says which OpenBLAS kernels wm and the peer ran (both load
// the same libopenblas, which picks its kernels from the CPU or from
// OPENBLAS_CORETYPE, unless wm chose them in place of its SSE3 fallback:
// peerBLASChooser) and names the rows where the two differ: there the
// comparison is not like for like.
func blasCoreNote(rows []benchRow) string {
	return sidesNote(rows, "OpenBLAS kernels", " ("+peerBLASChooser()+")", "different kernels",
		func(r benchResult) string { return coreName(r.BLASCore) })
}

// schedNote says which scheduling policies wm's and the peer's processes
// ran under (wm bench sets SCHED_BATCH on itself, and both sides' processes
// inherit it; WM_SCHED=normal leaves the default) and names the rows where
// the two differ: there the comparison is not like for like.
func schedNote(rows []benchRow) string {
	return sidesNote(rows, "Scheduling policy", "", "under different policies",
		func(r benchResult) string { return policyName(r.Sched) })
}

// coresNote names how many cores each side's processes could run on, as
// they report it, and whether wm bench confined them (--pin): a row on p
// threads then ran both sides on the same p cores.
func coresNote(rows []benchRow, pin bool) string {
	after := " (each measurement free to run on any core: --pin=false)"
	if pin {
		after = " (each measurement of a row on p threads confined to the same p cores, both sides alike: --pin)"
	}
	return sidesNote(rows, "Cores", after, "on different numbers of cores",
		func(r benchResult) string {
			if r.Cores == 0 {
				return "not reported"
			}
			return strconv.Itoa(r.Cores)
		})
}

// sidesNote is "title: wm A, B; peer A" for a setting each side reports
// (name gives it from a side's result), with after appended, and the rows
// where the two sides' settings differ named as not like for like ("the
// two sides ran <differ> in ..."). Rows without a peer count only for wm.
func sidesNote(rows []benchRow, title, after, differ string, name func(benchResult) string) string {
	var wm, peer, unlike []string
	for _, r := range rows {
		wm = appendNew(wm, name(r.WM))
		if r.Peer.Train == 0 && r.Peer.Eval == 0 {
			continue // no peer ran
		}
		peer = appendNew(peer, name(r.Peer))
		if name(r.WM) != name(r.Peer) {
			unlike = append(unlike, r.label())
		}
	}
	s := title + ": wm " + strings.Join(wm, ", ")
	if len(peer) > 0 {
		s += "; peer " + strings.Join(peer, ", ")
	}
	s += after
	if len(unlike) > 0 {
		return s + ". **Not like for like:** the two sides ran " + differ + " in " + strings.Join(unlike, "; ") + "."
	}
	return s + "."
}

// policyName is a side's scheduling policy as the report names it.
func policyName(p string) string {
	switch p {
	case "":
		return "not reported"
	case "batch":
		return "batch (SCHED_BATCH)"
	case "normal":
		return "normal (SCHED_OTHER)"
	}
	return p
}

// appendNew appends s to list unless list has it.
func appendNew(list []string, s string) []string {
	for _, x := range list {
		if x == s {
			return list
		}
	}
	return append(list, s)
}

// coreName is a side's OpenBLAS kernels, or what it ran instead.
func coreName(core string) string {
	if core == "" {
		return "not OpenBLAS"
	}
	return core
}
