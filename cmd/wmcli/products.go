package wmcli

import (
	"flag"
	"fmt"
	"io"
	"runtime"

	"github.com/pkg/errors"

	"github.com/wonderful-matrices/wonderful-matrices-go/experiments/train"
	"github.com/wonderful-matrices/wonderful-matrices-go/graph"
)

// runProducts is `wm products`: one step of a benchmark pattern, its
// matrix products listed by the op that asked for them, each timed where
// it ran against its replay alone with operands warm and out of cache
// (train.MeasureProductSites), as a Markdown table on stdout.
func runProducts(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("wm products", flag.ContinueOnError)
	fs.SetOutput(stderr)
	step := benchStepFlags(fs)
	pattern, d, t, b, experts, shards := step.pattern, step.d, step.t, step.b, step.experts, step.shards
	eval := fs.Bool("eval", false, "record evaluation forwards instead of training steps")
	warm := fs.Int("warm", 3, "untimed steps first")
	steps := fs.Int("steps", 4, "steps recorded")
	top := fs.Int("top", 30, "rows printed, the largest losses first (0: all)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *pattern == "" || fs.NArg() > 0 {
		fmt.Fprintln(stderr, "wm products: give --pattern and no other arguments, e.g. wm products --pattern '(SM)3 AM' --d-model 256 --seq-len 1024 --batch 4 --shards 2")
		return 2
	}
	for _, c := range []struct {
		flag string
		v    int
		ok   bool
		want string
	}{
		{"--steps", *steps, *steps >= 1, "at least 1"},
		{"--warm", *warm, *warm >= 0, "at least 0"},
		{"--top", *top, *top >= 0, "at least 0 (0: every row)"},
		{"--batch", *b, *b >= 1, "at least 1"},
		{"--seq-len", *t, *t >= 1, "at least 1"},
		{"--shards", *shards, *shards >= 1 && *b%max(*shards, 1) == 0, fmt.Sprintf("at least 1 and a divisor of --batch %d", *b)},
		{"--shard-threads", *step.shardThreads, *step.shardThreads >= 0 && (*step.shardThreads == 0 || *shards > 1), "at least 0, and 0 unless --shards is above 1"},
	} {
		if !c.ok {
			fmt.Fprintf(stderr, "wm products: %s %d: want %s\n", c.flag, c.v, c.want)
			return 2
		}
	}
	cfg := benchConfig(*pattern, *d, *t, *experts)
	if _, err := graph.New(cfg); err != nil {
		fmt.Fprintf(stderr, "wm products: %v\n", err)
		return 2
	}
	path := "training"
	if *eval {
		path = "evaluation"
	}
	fmt.Fprintf(stderr, "wm products: %s d_model %d, seq_len %d, batch %d, %s, GOMAXPROCS %d: %d %s steps, then %d recorded and their products replayed\n",
		*pattern, *d, *t, *b, layoutWords(step.layout()), runtime.GOMAXPROCS(0), *warm, path, *steps)
	res, err := train.MeasureProductSites(cfg, *b, *t, step.layout(), !*eval, *warm, *steps, 1)
	if err != nil {
		fmt.Fprintf(stderr, "wm products: %v\n", errors.Wrapf(err, "%s d_model %d", *pattern, *d))
		return 1
	}
	writeProductSites(stdout, fmt.Sprintf("%s d_model %d, seq_len %d, batch %d, %s, GOMAXPROCS %d, %s (BLAS: %s)",
		*pattern, *d, *t, *b, layoutWords(step.layout()), runtime.GOMAXPROCS(0), path, blasDescription()), res, *top)
	return 0
}

// layoutWords names a layout in a sentence: "2 shard(s)", and "of 1
// thread each" when the shards' loops are capped.
func layoutWords(l train.Layout) string {
	if l.ShardThreads > 0 {
		return fmt.Sprintf("%d shard(s) of %d thread(s) each", l.Shards, l.ShardThreads)
	}
	return fmt.Sprintf("%d shard(s)", l.Shards)
}

// writeProductSites prints res as Markdown: a summary line, then one row a
// site, at most top rows (0: all) and a row for the rest.
func writeProductSites(w io.Writer, title string, res train.ProductSites, top int) {
	var in, warm, cold float64
	for _, s := range res.Sites {
		in, warm, cold = in+ms(s.InStep), warm+ms(s.Warm), cold+ms(s.Cold)
	}
	fmt.Fprintf(w, "# Matrix products of one step: %s\n\n", title)
	fmt.Fprintf(w, "Mean of %d recorded steps: a step took %.1f ms; its products %.1f ms of core time (%.1f ms with more products in flight than cores, whose calls' own times then include waiting for a core). Summed over the sites below, in core ms a step: %.1f where they ran, %.1f replayed warm, %.1f replayed cold.\n\n",
		res.Steps, ms(res.Step), ms(res.BLAS), ms(res.Oversubscribed), in, warm, cold)
	fmt.Fprintln(w, "| asked for by | m × n × k | op(a), op(b) | lda, ldb, ldc | β | float | calls a step | in the step ms | warm ms | cold ms | in ÷ warm | GFLOP/s in the step |")
	fmt.Fprintln(w, "| --- | --- | --- | --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |")
	var rest []train.ProductSite
	for i, s := range res.Sites {
		if top > 0 && i >= top {
			rest = append(rest, s)
			continue
		}
		sh := s.Shape
		float, beta := "32", "0"
		if sh.Float64 {
			float = "64"
		}
		if sh.Width64 {
			float = "32, 64-wide kernel"
		}
		if sh.Accumulate {
			beta = "1"
		}
		fmt.Fprintf(w, "| %s | %d × %d × %d | %s, %s | %d, %d, %d | %s | %s | %.4g | %.2f | %.2f | %.2f | %s | %s |\n",
			s.Caller, sh.M, sh.N, sh.K, transName("a", sh.TransA), transName("b", sh.TransB), sh.LDA, sh.LDB, sh.LDC, beta, float,
			s.Calls, ms(s.InStep), ms(s.Warm), ms(s.Cold), ratioOf(ms(s.InStep), ms(s.Warm)), rateOf(float64(sh.FLOPs())*s.Calls, s.InStep.Seconds()))
	}
	if len(rest) > 0 {
		var rin, rwarm, rcold, calls float64
		for _, s := range rest {
			rin, rwarm, rcold, calls = rin+ms(s.InStep), rwarm+ms(s.Warm), rcold+ms(s.Cold), calls+s.Calls
		}
		fmt.Fprintf(w, "| %d other sites | | | | | | %.4g | %.2f | %.2f | %.2f | %s | |\n", len(rest), calls, rin, rwarm, rcold, ratioOf(rin, rwarm))
	}
}

// transName is how the table names an operand's form: "a" as stored, "aᵀ"
// transposed.
func transName(name string, t bool) string {
	if t {
		return name + "ᵀ"
	}
	return name
}

// ratioOf is a ÷ b with two decimals and a ×, or "–" when b is 0.
func ratioOf(a, b float64) string {
	if b <= 0 {
		return "–"
	}
	return fmt.Sprintf("%.2f×", a/b)
}

// rateOf is flops ÷ seconds in GFLOP/s, or "–" when no time was taken.
func rateOf(flops, seconds float64) string {
	if seconds <= 0 {
		return "–"
	}
	return fmt.Sprintf("%.1f", flops/seconds/1e9)
}
