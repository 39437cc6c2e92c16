// Command wm is the framework's command line: `wm info` (the build and the
// ops), `wm params` (a model's parameter breakdown), `wm train` (one model on
// the embedded KJV or a user's corpus), `wm generate`, and the experiment
// runner: `wm list`, `wm run NAME --preset P --out DIR`, `wm report DIR`.
package wmcli

import (
	"fmt"
	"io"
	"os"
	"runtime"

	"github.com/wonderful-matrices/wonderful-matrices-go/ops"
)

// Main runs the command line args (without the program name) on the
// process's standard output and error and returns the exit status: 0 on
// success, 1 when the work failed, 2 for bad input.
func Main(args []string) int {
	return Run(args, os.Stdout, os.Stderr)
}

// commands are wm's subcommands with one line of help each.
var commands = []struct{ name, help string }{
	{"info", "print the build (BLAS, Go version, cores) and the ops it provides"},
	{"params", "print a model's parameters by layer kind (wm params --arch cheems --d-model 256)"},
	{"train", "train one model: wm train --arch cheems --steps 200 --out runs/mine [--corpus PATH] [--resume]"},
	{"generate", "continue a prompt: wm generate --ckpt runs/mine --prompt \"In the beginning\""},
	{"list", "list the experiments (wm list [--arms PRESET])"},
	{"run", "run an experiment: wm run table1 --preset tiny --out results [--seeds N] [--resume]"},
	{"report", "rebuild tables and plots from saved results: wm report results"},
	{"sweep", "an experiment as a Slurm job array (one task per arm and seed): wm sweep table1 --preset small --seeds 3 --out /shared/results [--slurm]"},
	{"bench", "training/eval tokens/s and peak memory of patterns beside a PyTorch peer: wm bench [--sizes 64x256x8,256x1024x4] [--out docs/bench.md]"},
	{"bench-diff", "two reports of wm bench --out side by side: targets met, rows that changed verdict, each row before → after: wm bench-diff before.md docs/bench.md [--out F]"},
	{"bench-host", "the committed report of wm bench in a folder made on a host like this one (processor, cores, OpenBLAS kernels), or the path a first one takes: wm bench-host docs"},
	{"products", "a step's matrix products by the op that asked, timed in the step and replayed alone: wm products --pattern '(SM)3 AM' --d-model 256 --seq-len 1024 --batch 4 [--shards 2] [--eval]"},
	{"findings", "judge the papers' claims against saved results: wm findings results [--out FILE]"},
	{"export", "copy results without checkpoints (to commit or share): wm export results docs/results"},
	{"serve", "watch and compare runs in a browser, live: wm serve results [--addr 127.0.0.1:8080]"},
	{"help", "print this help"},
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: wm COMMAND")
	fmt.Fprintln(w, "commands:")
	for _, c := range commands {
		fmt.Fprintf(w, "  %-8s %s\n", c.name, c.help)
	}
}

// Run executes one command, writing to stdout and stderr, and returns the
// exit status as Main does.
func Run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		usage(stderr)
		return 2
	}
	if stepCommands[args[0]] {
		setStepGC()
		if err := setStepScheduling(stderr); err != nil {
			fmt.Fprintf(stderr, "wm %s: %v\n", args[0], err)
			return 2
		}
	}
	switch args[0] {
	case "info":
		fmt.Fprintf(stdout, "wonderful-matrices-go\nBLAS: %s\nfloat32 kernels: %s\nGo: %s, GOMAXPROCS %d\nops:\n", blasDescription(), ops.KernelISA(), runtime.Version(), runtime.GOMAXPROCS(0))
		for _, o := range ops.Catalog {
			fmt.Fprintf(stdout, "  %-17s %s\n", o.Name, o.What)
		}
		return 0
	case "params":
		return runParams(args[1:], stdout, stderr)
	case "train":
		return runTrain(args[1:], stdout, stderr)
	case "generate":
		return runGenerate(args[1:], stdout, stderr)
	case "list":
		return runList(args[1:], stdout, stderr)
	case "run":
		return runExperiment(args[1:], stdout, stderr)
	case "report":
		return runReport(args[1:], stdout, stderr)
	case "sweep":
		return runSweep(args[1:], stdout, stderr)
	case "bench":
		return runBench(args[1:], stdout, stderr)
	case "bench-diff":
		return runBenchDiff(args[1:], stdout, stderr)
	case "bench-host":
		return runBenchHost(args[1:], stdout, stderr)
	case "bench-one":
		return runBenchOne(args[1:], stdout, stderr)
	case "products":
		return runProducts(args[1:], stdout, stderr)
	case "findings":
		return runFindings(args[1:], stdout, stderr)
	case "export":
		return runExport(args[1:], stdout, stderr)
	case "serve":
		return runServe(args[1:], stdout, stderr)
	case "help", "-h", "--help":
		usage(stdout)
		return 0
	}
	fmt.Fprintf(stderr, "wm: unknown command %q\n", args[0])
	usage(stderr)
	return 2
}

// blasDescription names the BLAS and, for OpenBLAS, the kernels it runs
// and who chose them, e.g. "openblas, Haswell kernels (OPENBLAS_CORETYPE)".
func blasDescription() string {
	core := ops.BLASCore()
	if core == "" {
		return ops.BLASName
	}
	return fmt.Sprintf("%s, %s kernels (%s)", ops.BLASName, core, blasChooser())
}

// blasChooser says who chose OpenBLAS's kernels in this process: OpenBLAS
// from the CPU, the environment's OPENBLAS_CORETYPE (which the processes
// wm bench starts inherit), or the ops from the CPU's features where
// OpenBLAS fell back to its SSE3 kernels (ops.BLASCoreReplaced).
func blasChooser() string {
	if v := os.Getenv("OPENBLAS_CORETYPE"); v != "" {
		return "named by OPENBLAS_CORETYPE=" + v
	}
	if was := ops.BLASCoreReplaced(); was != "" {
		return "chosen by wm from the CPU's features in place of OpenBLAS's " + was + " fallback"
	}
	return "chosen by OpenBLAS from the CPU"
}
