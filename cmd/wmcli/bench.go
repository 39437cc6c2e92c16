package wmcli

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/pkg/errors"

	"github.com/wonderful-matrices/wonderful-matrices-go/experiments/data"
	"github.com/wonderful-matrices/wonderful-matrices-go/experiments/train"
	"github.com/wonderful-matrices/wonderful-matrices-go/graph"
	"github.com/wonderful-matrices/wonderful-matrices-go/internal/atomicfile"
	"github.com/wonderful-matrices/wonderful-matrices-go/internal/rss"
	"github.com/wonderful-matrices/wonderful-matrices-go/layers"
	"github.com/wonderful-matrices/wonderful-matrices-go/ops"
)

// torchPeer is the PyTorch implementation of the same layers that `wm
// bench` runs beside its own measurement (peer/torch_peer.py).
//
//go:embed peer/torch_peer.py
var torchPeer []byte

// benchSize is one model and batch size of `wm bench`.
type benchSize struct{ D, T, B int }

func parseSizes(s string) ([]benchSize, error) {
	var out []benchSize
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		var z benchSize
		if n, err := fmt.Sscanf(f, "%dx%dx%d", &z.D, &z.T, &z.B); n != 3 || err != nil || z.D < 1 || z.T < 1 || z.B < 1 {
			return nil, errors.Errorf("size %q: want d_model x seq_len x batch, e.g. 64x256x8", f)
		}
		out = append(out, z)
	}
	return out, nil
}

// benchResult is what one measurement prints (both sides).
type benchResult struct {
	Train  float64 `json:"train"`
	Eval   float64 `json:"eval"`
	RSSMB  float64 `json:"rss_mb"`
	Params int64   `json:"params"`
	Torch  string  `json:"torch,omitempty"`
	// BLASCore is the kernels OpenBLAS ran ("Cooperlake"; ops.BLASCore on
	// wm's side, openblas_get_corename on the peer's), "" for another BLAS.
	BLASCore string `json:"blas_core,omitempty"`
	// ATen is the instruction set of the ATen kernels the peer ran
	// ("AVX2", "AVX512"; its torch.__config__.show()), "" on wm's side.
	ATen string `json:"aten,omitempty"`
	// EvalForm is the form of the peer's evaluation figure: "eager" or
	// "optimized" (traced, frozen and torch.jit.optimize_for_inference'd),
	// whichever was faster; "" on wm's side and from older peers.
	EvalForm string `json:"eval_form,omitempty"`
	// Sched is the scheduling policy the side's process ran under
	// ("batch", "normal"; ops.SchedulingPolicy, os.sched_getscheduler on the
	// peer's), "" where the system does not say.
	Sched string `json:"sched,omitempty"`
	// Cores is how many CPUs the side's process could run on
	// (sched_getaffinity; len(os.sched_getaffinity(0)) on the peer's), 0
	// where the system does not say.
	Cores int `json:"cores,omitempty"`
	// GC is wm's garbage collector setting during the measurement
	// ("GOGC=25", "GOGC=off"; gcSetting), "" on the peer's side and in
	// results from before wm reported it.
	GC string `json:"gc,omitempty"`
	// wm only: matrix-product work per step (GFLOP), and the BLAS's
	// measured rate (GFLOP/s) for `bench-one --gemm-rate`.
	TrainGFLOP float64 `json:"train_gflop,omitempty"`
	EvalGFLOP  float64 `json:"eval_gflop,omitempty"`
	GemmRate   float64 `json:"gemm_gflops,omitempty"`
	// wm only, with GemmRate: the cores' float32 multiply-add peak on
	// the same threads (ops.FMAPeak), GFLOP/s; 0 where it could not be
	// measured (the pure-Go build).
	FMAPeak float64 `json:"fma_peak_gflops,omitempty"`
	// wm only: the time one step's own products take replayed alone
	// (ops.ReplayGemmShapes on GOMAXPROCS goroutines), in milliseconds.
	TrainGemmMS float64 `json:"train_gemm_ms,omitempty"`
	EvalGemmMS  float64 `json:"eval_gemm_ms,omitempty"`
	// wm only: the core time the same step's products took where they
	// ran, in the step (ops.GemmRecording.BLASTime ÷ GOMAXPROCS:
	// milliseconds of each core), that step's own time, and its products
	// replayed (TrainGemmMS and EvalGemmMS of this measurement alone), in
	// milliseconds, from the measurement of the best training (Train…) and
	// the best evaluation figure (Eval…).
	TrainBLASMS     float64 `json:"train_blas_ms,omitempty"`
	TrainRecordedMS float64 `json:"train_recorded_ms,omitempty"`
	TrainOwnGemmMS  float64 `json:"train_own_gemm_ms,omitempty"`
	EvalBLASMS      float64 `json:"eval_blas_ms,omitempty"`
	EvalRecordedMS  float64 `json:"eval_recorded_ms,omitempty"`
	EvalOwnGemmMS   float64 `json:"eval_own_gemm_ms,omitempty"`
	// wm only: the same products replayed with every operand out of
	// cache (ops.ReplayGemmShapesCold over ops.ColdSpan), in
	// milliseconds, from the same measurements as TrainOwnGemmMS and
	// EvalOwnGemmMS.
	TrainColdGemmMS float64 `json:"train_cold_gemm_ms,omitempty"`
	EvalColdGemmMS  float64 `json:"eval_cold_gemm_ms,omitempty"`
}

// evalFigures are the fields of a measurement that go with its evaluation
// figure: the figure, and its step's products in the step and replayed.
type evalFigures struct {
	eval, blasMS, recordedMS, ownGemmMS, coldGemmMS float64
	form                                            string // the peer's EvalForm
}

// evalFigures reads r's evaluation fields.
func (r *benchResult) evalFigures() evalFigures {
	return evalFigures{r.Eval, r.EvalBLASMS, r.EvalRecordedMS, r.EvalOwnGemmMS, r.EvalColdGemmMS, r.EvalForm}
}

// setEvalFigures writes r's evaluation fields.
func (r *benchResult) setEvalFigures(e evalFigures) {
	r.Eval, r.EvalBLASMS, r.EvalRecordedMS, r.EvalOwnGemmMS, r.EvalColdGemmMS, r.EvalForm = e.eval, e.blasMS, e.recordedMS, e.ownGemmMS, e.coldGemmMS, e.form
}

// benchConfig is the model of a measurement: the pattern at d_model with 4
// heads, the byte vocabulary, and `experts` CDMoE experts.
func benchConfig(pattern string, d, t, experts int) graph.Config {
	return graph.Config{Pattern: pattern, Vocab: data.ByteVocab, DModel: d, Heads: 4, MaxPosition: t,
		CDMoE: layers.CDMoEConfig{Experts: experts}}
}

// stepFlags are the flags of one benchmark step: the model (a pattern at a
// width, with bench's other settings) and its batch.
type stepFlags struct {
	pattern                                *string
	d, t, b, experts, shards, shardThreads *int
}

// layout is the step's use of the cores (--shards, --shard-threads).
func (f stepFlags) layout() train.Layout {
	return train.Layout{Shards: *f.shards, ShardThreads: *f.shardThreads}
}

// benchStepFlags registers stepFlags on fs (wm bench-one and wm products).
func benchStepFlags(fs *flag.FlagSet) stepFlags {
	return stepFlags{
		pattern:      fs.String("pattern", "", "layer pattern to measure, e.g. \"(SM)3 AM\""),
		d:            fs.Int("d-model", 64, "model width"),
		t:            fs.Int("seq-len", 256, "tokens per sequence"),
		b:            fs.Int("batch", 8, "sequences per step"),
		experts:      fs.Int("experts", 1024, "CDMoE experts (patterns with E)"),
		shards:       fs.Int("shards", 1, "graphs the batch is split over, run at once (data parallelism)"),
		shardThreads: fs.Int("shard-threads", 0, "with --shards above 1, goroutines each op's loops run on inside a shard (0: GOMAXPROCS; 1: each shard on its own core)"),
	}
}

// runBenchOne is the hidden `wm bench-one`: one measurement in this
// process (so that its peak RSS is the measurement's), as a JSON line.
func runBenchOne(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("wm bench-one", flag.ContinueOnError)
	fs.SetOutput(stderr)
	step := benchStepFlags(fs)
	pattern, d, t, b, experts := step.pattern, step.d, step.t, step.b, step.experts
	reps := fs.Int("reps", 3, "timed steps after the warm-up")
	gemmRate := fs.Bool("gemm-rate", false, "measure only the BLAS's float32 product rate and the cores' multiply-add peak (GFLOP/s)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *gemmRate {
		res := benchResult{GemmRate: ops.GemmRate(2*time.Second) / 1e9}
		// The peak is context for the report, not a target: where it
		// cannot be had (the pure-Go build) the reading goes without it.
		if peak, err := ops.FMAPeak(runtime.GOMAXPROCS(0), 300*time.Millisecond); err == nil {
			res.FMAPeak = peak / 1e9
		}
		j, _ := json.Marshal(res)
		fmt.Fprintln(stdout, string(j))
		return 0
	}
	cfg := benchConfig(*pattern, *d, *t, *experts)
	tp, err := train.MeasureThroughputLayout(cfg, *b, *t, *reps, step.layout(), 1)
	if err != nil {
		fmt.Fprintf(stderr, "wm bench-one: %v\n", err)
		return 1
	}
	total, _, _ := graph.CountConfig(cfg)
	sched, _ := ops.SchedulingPolicy() // "" where the system has no policies to name
	procs := float64(runtime.GOMAXPROCS(0))
	res := benchResult{Train: tp.Train, Eval: tp.Eval, RSSMB: rss.PeakMB(), Params: total, BLASCore: ops.BLASCore(), Sched: sched, Cores: cpuCount(), GC: gcSetting(),
		TrainGFLOP: tp.TrainGemmFLOPs / 1e9, EvalGFLOP: tp.EvalGemmFLOPs / 1e9,
		TrainBLASMS: ms(tp.TrainBLASTime) / procs, EvalBLASMS: ms(tp.EvalBLASTime) / procs,
		TrainRecordedMS: ms(tp.TrainRecorded), EvalRecordedMS: ms(tp.EvalRecorded)}
	// The replays' operands come after the peak RSS is read, so that they
	// are not counted as the measurement's memory.
	// One cold replay for both paths, so that its buffers are filled once.
	coldReplay, err := ops.NewColdReplay(ops.ColdSpan(runtime.GOMAXPROCS(0)))
	if err != nil {
		fmt.Fprintf(stderr, "wm bench-one: %v\n", err)
		return 1
	}
	for _, r := range []struct {
		shapes   ops.GemmShapes
		ms, cold *float64
	}{{tp.TrainGemmShapes, &res.TrainGemmMS, &res.TrainColdGemmMS}, {tp.EvalGemmShapes, &res.EvalGemmMS, &res.EvalColdGemmMS}} {
		warm, err := ops.ReplayGemmShapes(r.shapes, runtime.GOMAXPROCS(0), 2)
		if err != nil {
			fmt.Fprintf(stderr, "wm bench-one: %v\n", err)
			return 1
		}
		cold, err := coldReplay.Replay(r.shapes, runtime.GOMAXPROCS(0), 2)
		if err != nil {
			fmt.Fprintf(stderr, "wm bench-one: %v\n", err)
			return 1
		}
		*r.ms, *r.cold = ms(warm), ms(cold)
	}
	res.TrainOwnGemmMS, res.EvalOwnGemmMS = res.TrainGemmMS, res.EvalGemmMS
	j, _ := json.Marshal(res)
	fmt.Fprintln(stdout, string(j))
	return 0
}

// runBench is `wm bench`: training and evaluation tokens/s and peak memory
// of named patterns at several sizes and thread counts, each measured in a
// fresh process, beside a PyTorch implementation of the same layers where
// python3 has torch; prints a Markdown table with the ratios.
func runBench(args []string, stdout, stderr io.Writer) int {
	fail := func(code int, err error) int { fmt.Fprintf(stderr, "wm bench: %v\n", err); return code }
	cfg, err := parseBenchArgs(args, stderr)
	if err != nil {
		if errors.Is(err, errBadFlags) {
			return 2
		}
		return fail(2, err)
	}
	self, err := os.Executable()
	if err != nil {
		return fail(1, err)
	}
	peerScript, torchVersion, cleanup, err := preparePeer(cfg.peer, stderr)
	if err != nil {
		return fail(1, err)
	}
	defer cleanup()
	peerMalloc := "none"
	if peerScript != "" {
		if cfg.peerEnv, peerMalloc, err = peerAllocator(cfg.peerMalloc, jemallocDirs); err != nil {
			return fail(2, err)
		}
		cfg.peerEnv = append(cfg.peerEnv, peerBLASEnv()...)
	}
	var journal *benchJournal
	if cfg.out != "" {
		if journal, err = cfg.openJournal(self, peerScript, torchVersion); err != nil {
			return fail(2, err)
		}
		defer journal.finish(false)
		switch {
		case journal.extends > 0:
			added := fmt.Sprintf("round %d", cfg.rounds)
			if journal.extends+1 < cfg.rounds {
				added = fmt.Sprintf("rounds %d to %d", journal.extends+1, cfg.rounds)
			}
			fmt.Fprintf(stderr, "wm bench: adding %s to the finished run of %s (%d rounds measured, copied to %s)\n",
				added, cfg.out+roundsSuffix, len(journal.rounds), journal.path)
		case len(journal.rounds) > 0:
			fmt.Fprintf(stderr, "wm bench: resuming from %s (%d rounds measured)\n", journal.path, len(journal.rounds))
		}
	}
	var b strings.Builder
	b.WriteString(benchTableHeader + "\n")
	b.WriteString(benchTableDelimiter + "\n")
	fmt.Fprint(stdout, b.String())
	rows, err := cfg.measure(self, peerScript, journal, &b, stdout, stderr)
	if err != nil {
		var unlike *hostCheckError
		isUnlike := errors.As(err, &unlike)
		switch {
		case isUnlike && journal.hasNoRounds():
			if derr := journal.discard(); derr != nil {
				err = errors.Errorf("%v (%v)", err, derr)
			}
		case journal != nil:
			err = errors.Errorf("%v (the finished rounds are kept in %s: the same command with --resume continues the run)", err, journal.path)
		}
		if isUnlike {
			return fail(exitHostUnlike, err)
		}
		return fail(1, err)
	}
	analysis := benchAnalysis(rows)
	notes := benchNotes(rows, cfg.pin)
	if a := atenNote(rows, cfg.peerATen); a != "" {
		notes += " " + a
	}
	if e := evalFormNote(rows); e != "" {
		notes += " " + e
	}
	fmt.Fprint(stdout, "\n"+analysis+"\n"+notes+"\n")
	if cfg.out != "" {
		cpu := cpuModel()
		head := fmt.Sprintf("# wm bench\n\n%s: %d cores (%s), Go %s, BLAS %s, float32 kernels %s; peer: PyTorch %s (CPU, float32), allocator %s. %s. %s\n\n"+
			"Ratios are wm ÷ peer (above 1 is faster for tokens/s; below 1 is less memory for RSS), measured in one run, each side in a fresh process, %d timed steps after a warm-up, best of %d rounds in which wm and the peer take turns, spread over the run (round 1 of every row, then round 2, …). Training steps include the AdamW update. threads is GOMAXPROCS for wm. wm runs each batch as one graph and, when threads divides the batch, split over that many graphs run at once (data parallelism, train.Config.Shards), with each op's loops on up to threads goroutines and with each shard's loops on one (train.Config.ShardThreads 1), and keeps its best training and best evaluation figure; wm shards names the layout of the best training figure (2×1: two shards of one thread each). The peer runs each of its thread layouts for that many cores, OpenMP threads × OpenBLAS threads (p×1 and 1×p; p×p oversubscribes Debian's torch, 3× slower at 2), on a CPU with AVX-512 each with ATen's AVX2 and its AVX-512 kernels (ATEN_CPU_CAPABILITY; Debian's torch picks AVX2 by itself), and the table keeps its best training and its best evaluation figure; the column names the layout of the best training figure (with its ATen kernels where two sets ran).\n\n",
			time.Now().UTC().Format("2006-01-02"), runtime.NumCPU(), cpu, runtime.Version(), ops.BLASName, ops.KernelISA(), orNone(torchVersion), peerMalloc, "Command: wm bench "+strings.Join(args, " "), notes, cfg.reps, cfg.rounds)
		if err := atomicfile.WriteBytes(cfg.out, []byte(head+b.String()+"\n"+analysis)); err != nil {
			return fail(1, err)
		}
		if err := journal.finish(true); err != nil {
			return fail(1, err)
		}
		fmt.Fprintf(stdout, "\nwrote %s\n", cfg.out)
	}
	return 0
}

// errBadFlags is a flag error that the flag package has already printed.
var errBadFlags = errors.New("bad flags")

// benchSettings is what wm bench measures.
type benchSettings struct {
	pats        []string
	base, extra []benchSize
	procs       []int
	experts     int
	reps        int
	rounds      int
	peer, out   string
	// peerMalloc is the peer's allocator, "jemalloc" or "glibc"
	// (peerAllocator).
	peerMalloc string
	// resume continues the run whose journal is beside out.
	resume bool
	// pin confines each measurement of a row on p threads, both sides'
	// and the BLAS rate's, to the first p of allowed, the CPUs wm bench
	// may run on (fewer than p allowed: not confined).
	pin     bool
	allowed []int
	// peerEnv is the environment that gives the peer its allocator and,
	// where wm chose OpenBLAS's kernels, wm's (peerBLASEnv).
	peerEnv []string
	// peerATen are the ATen kernel sets each peer layout runs with
	// (peerATenKernels; "" for torch's own choice).
	peerATen []string
	// hostLike is the report --host-like names ("" for none), hostRates
	// its BLAS rates by thread count, and hostSlack how far below or
	// above them this run's may be (checkHost).
	hostLike  string
	hostRates map[int]float64
	hostSlack float64
}

// cpusFor is the CPUs a measurement on p threads is confined to: the first
// p that wm bench may run on, or nil (not confined) without --pin or when
// p takes them all. Left free, a one-thread wm measurement used 1.07 CPUs
// (Go's runtime threads ran on the other core) and was moved between the
// cores about 50 times a second, each time to a core whose caches held
// none of its data; the peer's used 0.99 and hardly moved. Confined, both
// sides run on the same p cores and no more, which is what a row on p
// threads names (docs/performance.md, "One thread on one core").
func (cfg benchSettings) cpusFor(p int) []int {
	if !cfg.pin || p >= len(cfg.allowed) {
		return nil
	}
	return cfg.allowed[:p]
}

// openJournal opens the journal beside cfg.out for these settings, this
// wm binary and this peer.
func (cfg benchSettings) openJournal(self, peerScript, torchVersion string) (*benchJournal, error) {
	hash, err := executableHash(self)
	if err != nil {
		return nil, err
	}
	peer, malloc, aten := cfg.peer, cfg.peerMalloc, cfg.peerATen
	if peerScript == "" {
		peer, malloc, aten = "", "", nil
	}
	return openBenchJournal(cfg.out, journalSettings{Binary: hash, Patterns: cfg.pats, Sizes: cfg.base, SSDSizes: cfg.extra, Procs: cfg.procs,
		Experts: cfg.experts, Reps: cfg.reps, Rounds: cfg.rounds, Peer: peer, PeerMalloc: malloc, PeerATen: aten, Torch: torchVersion, Pin: cfg.pin}, cfg.resume)
}

// parseBenchArgs reads wm bench's flags and checks them.
func parseBenchArgs(args []string, stderr io.Writer) (benchSettings, error) {
	fs := flag.NewFlagSet("wm bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		patterns = fs.String("patterns", "(SM)4;(SM)3 AM;(SE)3 IE;(SR)3 AR;(SH)3 AH;(AM)4", "patterns, separated by ';'")
		sizes    = fs.String("sizes", "64x256x8,256x1024x4", "d_model x seq_len x batch, separated by ','")
		ssdSizes = fs.String("ssd-sizes", "256x512x8,256x4096x1", "extra sizes for the patterns of SSD and MLP alone")
		procs    = fs.String("procs", "1,"+strconv.Itoa(runtime.NumCPU()), "GOMAXPROCS (and torch threads) to measure, separated by ','")
		experts  = fs.Int("experts", 1024, "CDMoE experts")
		reps     = fs.Int("reps", 8, "timed steps after one warm-up (wm needs several steps in a fresh process to reach its steady speed)")
		rounds   = fs.Int("rounds", 2, "times each configuration is measured, wm and the peer taking turns; each keeps its best figure")
		peer     = fs.String("peer", "/usr/bin/python3", "python with torch for the peer (\"\" for none)")
		aten     = fs.String("peer-aten", "auto", "the peer's ATen kernels (ATEN_CPU_CAPABILITY), each thread layout run with each and the best kept: auto (avx2 and avx512 on a CPU with AVX-512, torch's own choice elsewhere), torch (its own choice), or a list of default, avx2, avx512")
		malloc   = fs.String("peer-malloc", "jemalloc", "the peer's allocator: jemalloc (libjemalloc.so.2 preloaded, memory kept for reuse, as PyTorch's CPU guides recommend) or glibc (the C library's malloc)")
		out      = fs.String("out", "", "also write the table to this Markdown file (each finished round is kept in FILE.journal until it is written, then in FILE.rounds.jsonl)")
		resume   = fs.Bool("resume", false, "continue the run whose journal is beside --out, measuring only the rounds it lacks; with no journal, a finished run beside --out (FILE.rounds.jsonl) with the same flags and wm binary but fewer --rounds gets the rounds it lacks added")
		pin      = fs.Bool("pin", runtime.GOOS == "linux", "run each measurement on p threads (both sides, and the BLAS rate) confined to the first p cores wm bench may use (Linux)")
		hostLike = fs.String("host-like", "", "a report of wm bench --out (e.g. docs/bench.md) whose host this run must match: stop (exit 3; finished rounds kept for --resume) when the BLAS rate at a thread count both measure is more than --host-slack below or above the report's twice running, at the start or after a row")
		slack    = fs.Float64("host-slack", 0.1, "with --host-like, the fraction of the report's BLAS rate by which this run's may fall below or rise above it")
	)
	if err := fs.Parse(args); err != nil {
		return benchSettings{}, errBadFlags
	}
	cfg := benchSettings{experts: *experts, reps: *reps, rounds: *rounds, peer: *peer, peerMalloc: *malloc, out: *out, resume: *resume, pin: *pin,
		hostLike: *hostLike, hostSlack: *slack}
	if err := checkPeerMalloc(cfg.peerMalloc); err != nil {
		return cfg, err
	}
	var err error
	if cfg.peerATen, err = peerATenKernels(*aten, cpuFlags()); err != nil {
		return cfg, err
	}
	if cfg.resume && cfg.out == "" {
		return cfg, errors.New("--resume: needs --out (the journal of the run to continue is kept beside it)")
	}
	if cfg.reps < 1 {
		return cfg, errors.Errorf("--reps: must be >= 1, got %d", cfg.reps)
	}
	if cfg.rounds < 1 {
		return cfg, errors.Errorf("--rounds: must be >= 1, got %d", cfg.rounds)
	}
	if cfg.hostRates, err = readHostRates(cfg.hostLike, cfg.hostSlack); err != nil {
		return cfg, err
	}
	if cfg.base, err = parseSizes(*sizes); err != nil {
		return cfg, err
	}
	if cfg.extra, err = parseSizes(*ssdSizes); err != nil {
		return cfg, err
	}
	for _, p := range strings.Split(*procs, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(p))
		if err != nil || n < 1 {
			return cfg, errors.Errorf("--procs: %q is not a positive count", p)
		}
		cfg.procs = append(cfg.procs, n)
	}
	if cfg.pin {
		var err error
		if cfg.allowed, err = allowedCPUs(); err != nil {
			return cfg, errors.Wrap(err, "--pin (--pin=false measures without confining each side to its cores)")
		}
	}
	for _, p := range strings.Split(*patterns, ";") {
		if p = strings.TrimSpace(p); p == "" {
			continue
		}
		if err := benchConfig(p, 64, 256, *experts).Resolved().Validate(); err != nil {
			return cfg, err
		}
		cfg.pats = append(cfg.pats, p)
	}
	return cfg, nil
}

// preparePeer writes the embedded PyTorch peer where python can run it;
// script is "" when python cannot import torch (wm is measured alone).
func preparePeer(python string, stderr io.Writer) (script, torchVersion string, cleanup func(), err error) {
	cleanup = func() {}
	if python == "" {
		return "", "", cleanup, nil
	}
	out, err := exec.Command(python, "-c", "import torch; print(torch.__version__)").Output()
	if err != nil {
		fmt.Fprintf(stderr, "wm bench: no PyTorch peer (%s cannot import torch: apt-get install python3-torch); measuring wm alone\n", python)
		return "", "", cleanup, nil
	}
	dir, err := os.MkdirTemp("", "wm-bench-")
	if err != nil {
		return "", "", cleanup, err
	}
	cleanup = func() { os.RemoveAll(dir) }
	script = filepath.Join(dir, "torch_peer.py")
	return script, strings.TrimSpace(string(out)), cleanup, os.WriteFile(script, torchPeer, 0o644)
}

// measure runs every pattern, size and thread count, wm and the peer each
// in a fresh process, appending a table row to b and stdout per
// configuration.
func (cfg benchSettings) measure(self, peerScript string, j *benchJournal, b *strings.Builder, stdout, stderr io.Writer) ([]benchRow, error) {
	// The BLAS's rate at each thread count, for the matrix-product ceiling:
	// measured at the start and again after every row, the best kept, as
	// the rows keep their best rounds (one measurement at a slow moment
	// once put the 1-thread rate at 62 GFLOP/s against 91, and wm above
	// its own "ceiling").
	rates, peaks := map[int]float64{}, map[int]float64{}
	if j != nil {
		for _, r := range j.rates {
			rates[r.Threads] = max(rates[r.Threads], r.GFLOPs)
			peaks[r.Threads] = max(peaks[r.Threads], r.FMAPeak)
		}
	}
	// With --host-like, every reading is also checked against the report's
	// (hostGuard.reading): this start's, not the best of a resumed
	// journal's, and the later ones, so that a host that slows down stops
	// the run with its finished rounds kept for --resume.
	guard := hostGuard{cfg: cfg, rates: rates, measure: func(p int) (float64, error) {
		r, err := measureGemmRate(self, p, cfg.cpusFor(p), j)
		peaks[p] = max(peaks[p], r.FMAPeak)
		return r.GemmRate, err
	}}
	for _, p := range cfg.procs {
		if err := guard.reading(p); err != nil {
			return nil, err
		}
	}
	// The rows, in the table's order. Their rounds are spread over the
	// run, round 1 of every row before round 2 of any: a slow spell of the
	// shared machine, which can last minutes, then costs a row one round
	// rather than all of them.
	var rows []benchRow
	for _, pat := range cfg.pats {
		sz := cfg.base
		if !strings.ContainsAny(pat, "AIEKBRH") {
			sz = append(append([]benchSize{}, cfg.base...), cfg.extra...)
		}
		for _, z := range sz {
			for _, p := range cfg.procs {
				rows = append(rows, benchRow{Pattern: pat, Size: z, Threads: p, PeerLayout: "—"})
			}
		}
	}
	like := make([]string, len(rows))
	for i, r := range rows {
		like[i] = benchLike(r.Size, r.Threads)
	}
	progress := newBenchProgress(like, cfg.rounds)
	for round := 1; round <= cfg.rounds; round++ {
		if round > 1 {
			for _, p := range cfg.procs {
				if err := guard.reading(p); err != nil {
					return nil, err
				}
			}
		}
		for i := range rows {
			row := &rows[i]
			_, fromJournal := j.round(row.Pattern, row.Size, row.Threads, round)
			start := time.Now()
			if err := cfg.measureRoundOf(row, self, peerScript, round, progress.String(), j, stderr); err != nil {
				return nil, err
			}
			// After every row of round 1, and with --host-like after every
			// row measured now, which then notices a slow spell within a
			// row or two.
			if round == 1 || cfg.hostRates != nil && !fromJournal {
				if err := guard.reading(row.Threads); err != nil {
					return nil, err
				}
			}
			// A round's time includes the BLAS reading after it: the run
			// spends it too.
			progress.finished(i, fromJournal, time.Since(start))
			if round < cfg.rounds {
				continue
			}
			if peerScript != "" && row.Peer.Params != row.WM.Params {
				fmt.Fprintf(stderr, "wm bench: %s d=%d: the peer has %d parameters, wm %d: the comparison is not like for like\n", row.Pattern, row.Size.D, row.Peer.Params, row.WM.Params)
			}
			line := row.markdown()
			b.WriteString(line)
			fmt.Fprint(stdout, line)
		}
	}
	for i := range rows {
		rows[i].GemmRate = rates[rows[i].Threads]
		rows[i].FMAPeak = peaks[rows[i].Threads]
	}
	return rows, nil
}

// measureGemmRate measures the BLAS's float32 product rate on p threads,
// and the cores' multiply-add peak on as many, in a fresh process
// (confined to cpus; nil: not confined) and records them in the journal j
// (nil: none).
func measureGemmRate(self string, p int, cpus []int, j *benchJournal) (benchResult, error) {
	r, err := measureChild([]string{self, "bench-one", "--gemm-rate"}, cpus, "GOMAXPROCS="+fmt.Sprint(p))
	if err != nil {
		return benchResult{}, errors.Wrapf(err, "BLAS rate on %d threads", p)
	}
	return r, j.addRate(p, r.GemmRate, r.FMAPeak)
}

// measureRoundOf adds round `round` of row's configuration to row: wm's
// and the peer's measurements (the two taking turns), each side keeping
// its best training and best evaluation figure over the rounds, so that a
// slow spell of a shared machine costs both sides a round rather than one
// side the row. A round the journal j holds is taken from it; otherwise it
// is measured and added to it. The line it prints first names the round,
// and at, the run's place (benchProgress).
func (cfg benchSettings) measureRoundOf(row *benchRow, self, peerScript string, round int, at string, j *benchJournal, stderr io.Writer) error {
	pat, z, p := row.Pattern, row.Size, row.Threads
	r, ok := j.round(pat, z, p, round)
	if ok {
		fmt.Fprintf(stderr, "measuring %s d=%d t=%d b=%d threads=%d, round %d of %d: from the journal (%s)\n", pat, z.D, z.T, z.B, p, round, cfg.rounds, at)
	} else {
		fmt.Fprintf(stderr, "measuring %s d=%d t=%d b=%d threads=%d, round %d of %d (%s) …\n", pat, z.D, z.T, z.B, p, round, cfg.rounds, at)
		var err error
		if r, err = cfg.measureRound(self, peerScript, pat, z, p, round); err != nil {
			return err
		}
		if err := j.addRound(r); err != nil {
			return err
		}
	}
	if row.WM.keep(r.WM) {
		row.WMLayout = train.Layout{Shards: r.WMShards, ShardThreads: r.WMShardThreads}
	}
	if r.Peer == nil {
		return nil
	}
	if row.Peer.keep(*r.Peer) {
		row.PeerLayout = r.PeerLayout
	}
	if r.Peer.Train > 0 && r.Peer.Eval > 0 {
		row.RoundTrain = append(row.RoundTrain, r.WM.Train/r.Peer.Train)
		row.RoundEval = append(row.RoundEval, r.WM.Eval/r.Peer.Eval)
	}
	return nil
}

// measureRound measures one round of a configuration: wm, then the peer
// (when there is one).
func (cfg benchSettings) measureRound(self, peerScript, pat string, z benchSize, p, round int) (journalRound, error) {
	args := []string{"--pattern", pat, "--d-model", fmt.Sprint(z.D), "--seq-len", fmt.Sprint(z.T), "--batch", fmt.Sprint(z.B), "--experts", fmt.Sprint(cfg.experts), "--reps", fmt.Sprint(cfg.reps)}
	r := journalRound{Pattern: pat, Size: z, Threads: p, Round: round}
	var err error
	cpus := cfg.cpusFor(p)
	var wmLayout train.Layout
	if r.WM, wmLayout, err = measureWM(self, args, z.B, p, cpus); err != nil {
		return r, errors.Wrapf(err, "%s d=%d t=%d", pat, z.D, z.T)
	}
	r.WMShards, r.WMShardThreads = wmLayout.Shards, wmLayout.ShardThreads
	if peerScript == "" {
		return r, nil
	}
	peer, layout, err := measurePeer(cfg.peer, peerScript, p, cpus, args, cfg.peerEnv, cfg.peerATen)
	if err != nil {
		return r, errors.Wrapf(err, "peer %s d=%d t=%d", pat, z.D, z.T)
	}
	r.Peer, r.PeerLayout = &peer, layout
	return r, nil
}

// markdown is the row of the table.
func (r benchRow) markdown() string {
	wm, pr, z := r.WM, r.Peer, r.Size
	return fmt.Sprintf("| %s | %d | %d | %d | %d | %s | %s | %.0f | %s | %s | %.0f | %s | %s | %.0f | %s | %s |\n", r.Pattern, z.D, z.T, z.B, r.Threads, r.WMLayout, r.PeerLayout,
		wm.Train, num(pr.Train), ratio(wm.Train, pr.Train), wm.Eval, num(pr.Eval), ratio(wm.Eval, pr.Eval), wm.RSSMB, num(pr.RSSMB), ratio(wm.RSSMB, pr.RSSMB))
}

// measureWM runs wm on p threads (confined to cpus; nil: not confined)
// with the batch as one graph and, when p > 1 divides the batch, split over
// p graphs at once (train.Config.Shards), both with every op's loops on up
// to p goroutines and with each shard's on one (train.Config.ShardThreads
// 1: faster for small models, slower for large ones), the counterpart of
// the peer's thread layouts. It returns the best training and the best
// evaluation figure, the peak RSS of the run with the best training, and
// that run's layout.
func measureWM(self string, args []string, batch, p int, cpus []int) (benchResult, train.Layout, error) {
	layouts := []train.Layout{{Shards: 1}}
	if p > 1 && batch%p == 0 {
		layouts = append(layouts, train.Layout{Shards: p}, train.Layout{Shards: p, ShardThreads: 1})
	}
	var best benchResult
	var bestLayout train.Layout
	for _, l := range layouts {
		r, err := measureChild(append([]string{self, "bench-one", "--shards", fmt.Sprint(l.Shards), "--shard-threads", fmt.Sprint(l.ShardThreads)}, args...), cpus, "GOMAXPROCS="+fmt.Sprint(p))
		if err != nil {
			return best, bestLayout, errors.Wrapf(err, "layout %s", l)
		}
		if best.keep(r) {
			bestLayout = l
		}
	}
	return best, bestLayout, nil
}

// measurePeer runs the PyTorch peer on p threads (confined to cpus, as wm
// is) in each thread layout that does not oversubscribe them: p OpenMP
// threads over single-threaded OpenBLAS, and (p > 1) one OpenMP thread over
// p OpenBLAS threads. Debian's torch is fastest at d_model 256 in the
// second (its time is in sgemm) and at d_model 64 often in the first, so
// taking one layout would handicap the peer. Each layout runs with each of
// the ATen kernel sets aten ("" for torch's own choice). It returns the
// best training and the best evaluation figure, the peak RSS of the run
// with the best training, and that run's layout ("2×1", and its ATen
// kernels when there is more than one set: "2×1 AVX512").
func measurePeer(python, script string, p int, cpus []int, args, env, aten []string) (benchResult, string, error) {
	layouts := [][2]int{{p, 1}}
	if p > 1 {
		layouts = append(layouts, [2]int{1, p})
	}
	var best benchResult
	label := ""
	for _, l := range layouts {
		for _, k := range aten {
			r, err := measureChild(append([]string{python, script, "--vocab", fmt.Sprint(data.ByteVocab), "--threads", fmt.Sprint(l[0])}, args...), cpus,
				slices.Concat([]string{"OMP_NUM_THREADS=" + fmt.Sprint(l[0]), "OPENBLAS_NUM_THREADS=" + fmt.Sprint(l[1])}, atenEnv(k), env)...)
			if err == nil {
				err = checkATenRan(k, r.ATen)
			}
			if err != nil {
				return best, "", errors.Wrapf(err, "%d OpenMP × %d OpenBLAS threads%s", l[0], l[1], atenLabel(k, aten))
			}
			if best.keep(r) {
				label = fmt.Sprintf("%d×%d", l[0], l[1])
				if len(aten) > 1 {
					label += " " + r.ATen
				}
			}
		}
	}
	return best, label, nil
}

// atenLabel names the ATen kernels k in an error, where more than one set
// runs.
func atenLabel(k string, aten []string) string {
	if len(aten) < 2 {
		return ""
	}
	return ", ATEN_CPU_CAPABILITY=" + k
}

// keep merges the measurement r of another layout into best: best takes r
// whole (its RSS and its products' time in the step too) when r trains
// faster, the faster evaluation with its products' time in the step, and
// the shorter replayed product times either way (the products of the
// fastest layout bound every layout). It says whether r's training was the
// faster.
func (best *benchResult) keep(r benchResult) bool {
	eval := best.evalFigures()
	if r.Eval > eval.eval {
		eval = r.evalFigures()
	}
	trainMS, evalMS := minKnown(best.TrainGemmMS, r.TrainGemmMS), minKnown(best.EvalGemmMS, r.EvalGemmMS)
	faster := r.Train > best.Train
	if faster {
		*best = r
	}
	best.setEvalFigures(eval)
	best.TrainGemmMS, best.EvalGemmMS = trainMS, evalMS
	return faster
}

// ms is d in milliseconds.
func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// minKnown is the smaller of two times, 0 standing for unknown.
func minKnown(a, b float64) float64 {
	switch {
	case a <= 0:
		return b
	case b <= 0:
		return a
	}
	return min(a, b)
}

// measureChild runs one measurement process, confined to cpus (nil: not
// confined), and reads its JSON line.
func measureChild(argv []string, cpus []int, env ...string) (benchResult, error) {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	var r benchResult
	if err := startOnCPUs(cmd, cpus); err != nil {
		return r, errors.Wrapf(err, "starting %s", filepath.Base(argv[0]))
	}
	if err := cmd.Wait(); err != nil {
		return r, errors.Errorf("%s: %v %s", filepath.Base(argv[0]), err, strings.TrimSpace(stderr.String()))
	}
	out := stdout.Bytes()
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &r); err != nil {
		return r, errors.Errorf("%s printed %q, not a measurement", filepath.Base(argv[0]), out)
	}
	return r, nil
}

func num(v float64) string {
	if v == 0 {
		return "—"
	}
	return strconv.FormatFloat(v, 'f', 0, 64)
}

func ratio(a, b float64) string {
	if b == 0 {
		return "—"
	}
	return strconv.FormatFloat(a/b, 'f', 2, 64) + "×"
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

// cpuModel is the processor's name from /proc/cpuinfo, with its family
// and model numbers (which tell generations apart where a virtual machine
// names only "AMD EPYC"), or "unknown CPU".
func cpuModel() string { return cpuModelOf(readCPUInfo()) }

// readCPUInfo is /proc/cpuinfo's text, "" where there is none.
func readCPUInfo() string {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return ""
	}
	return string(b)
}

// firstCPUFields are the "key: value" fields of the first processor in a
// /proc/cpuinfo text (up to the blank line that ends its block), keys and
// values trimmed.
func firstCPUFields(cpuinfo string) map[string]string {
	fields := map[string]string{}
	for _, l := range strings.Split(cpuinfo, "\n") {
		k, v, ok := strings.Cut(l, ":")
		if !ok {
			if len(fields) > 0 { // the blank line after the first processor
				break
			}
			continue
		}
		fields[strings.TrimSpace(k)] = strings.TrimSpace(v)
	}
	return fields
}

// cpuModelOf is cpuModel of a /proc/cpuinfo text: the first processor's
// "model name", followed by "family F, model M" where both are given.
func cpuModelOf(cpuinfo string) string {
	f := firstCPUFields(cpuinfo)
	name, family, model := f["model name"], f["cpu family"], f["model"]
	switch {
	case name == "":
		return "unknown CPU"
	case family != "" && model != "":
		return fmt.Sprintf("%s, family %s, model %s", name, family, model)
	}
	return name
}
