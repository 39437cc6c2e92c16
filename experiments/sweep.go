package experiments

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/pkg/errors"
)

// Sweep is an experiment spread over Slurm job arrays into storage all
// nodes share. Without a learning-rate grid, one array has a task per arm
// and seed, each running `wm run NAME --preset P --out OUT --arms ARM
// --seed S --lr-grid none --resume`. With a grid, a first array searches it,
// one task per arm (`--seed 0 --lr-grid G`: the arm's trials one after the
// other, the extensions past an edge, the choice); a second array, after
// the first, runs the other seeds at the chosen rate (`--seed S --lr-grid
// G`, which reuses the finished search). A last job, once the arrays have
// ended, runs `wm report OUT` to aggregate.
type Sweep struct {
	Name, Preset string
	// Out is the results folder, on storage shared by the nodes.
	Out   string
	Seeds int
	// LRGrid is the learning-rate grid each arm searches (none when empty).
	LRGrid []float64
	// Arms, when non-empty, limits the sweep to these arms.
	Arms []string
	// WM is the wm binary the tasks run (a path every node can reach).
	WM string
	// CPUs per task (default 2: the ops run in parallel over batch × heads).
	CPUs int
	// Shards, when above 1, splits each training batch over that many
	// graphs run at once (wm run --shards): give it CPUs to match.
	Shards int
	// ShardThreads, with Shards, caps each shard's loops at that many
	// goroutines (wm run --shard-threads; the same results).
	ShardThreads int
	// Time limit per task in Slurm's format ("" for the partition's).
	Time string
	// Extra lines of #SBATCH options ("--partition=gpu", "--mem=8G").
	Extra []string
}

// SweepTask is one arm at one seed.
type SweepTask struct {
	Arm  string
	Seed int
}

// SweepArray is one job array of a sweep: its sbatch script and its tasks.
type SweepArray struct {
	// Name is "search" or "seeds" (file SWEEP-NAME.sh in LogDir).
	Name   string
	Script string
	Tasks  []SweepTask
}

// Tasks expands the sweep into its tasks, checking the experiment, the
// preset and the arm names.
func (s Sweep) Tasks() ([]SweepTask, error) {
	def, err := Lookup(s.Name)
	if err != nil {
		return nil, err
	}
	if s.Seeds < 1 {
		return nil, errors.Errorf("seeds: must be >= 1, got %d", s.Seeds)
	}
	arms, err := def.Expand(s.Preset)
	if err != nil {
		return nil, err
	}
	if arms, err = selectArms(arms, s.Arms); err != nil {
		return nil, errors.Wrap(err, s.Name)
	}
	var tasks []SweepTask
	for _, a := range arms {
		for seed := 0; seed < s.Seeds; seed++ {
			tasks = append(tasks, SweepTask{a.Name, seed})
		}
	}
	return tasks, nil
}

// LogDir is where the tasks' Slurm output goes.
func (s Sweep) LogDir() string { return filepath.Join(PresetDir(s.Out, s.Name, s.Preset), "slurm") }

// shellQuote quotes a word for bash.
func shellQuote(w string) string {
	if w != "" && !strings.ContainsAny(w, " \t\n\"'$`\\;&|<>()*?[]{}!#~") {
		return w
	}
	return "'" + strings.ReplaceAll(w, "'", `'\''`) + "'"
}

// Arrays are the sweep's job arrays in submission order (each after the
// one before): with a grid, the search (seed 0 of each arm) then the other
// seeds; without, one array of every arm and seed.
func (s Sweep) Arrays() ([]SweepArray, error) {
	tasks, err := s.Tasks()
	if err != nil {
		return nil, err
	}
	if s.WM == "" || !filepath.IsAbs(s.WM) || !filepath.IsAbs(s.Out) {
		return nil, errors.Errorf("sweep: the wm binary (%q) and the results folder (%q) must be absolute paths that every node can reach", s.WM, s.Out)
	}
	if len(s.LRGrid) == 0 {
		return []SweepArray{{Name: "seeds", Tasks: tasks, Script: s.script("seeds", tasks, "none")}}, nil
	}
	grid, err := checkLRGrid(s.LRGrid)
	if err != nil {
		return nil, err
	}
	var words []string
	for _, g := range grid {
		words = append(words, strconv.FormatFloat(g, 'g', -1, 64))
	}
	g := strings.Join(words, ",")
	var search, seeds []SweepTask
	for _, t := range tasks {
		if t.Seed == 0 {
			search = append(search, t)
		} else {
			seeds = append(seeds, t)
		}
	}
	out := []SweepArray{{Name: "search", Tasks: search, Script: s.script("search", search, g)}}
	if len(seeds) > 0 {
		out = append(out, SweepArray{Name: "seeds", Tasks: seeds, Script: s.script("seeds", seeds, g)})
	}
	return out, nil
}

// script is the sbatch script of one array: task i runs tasks[i] with the
// learning-rate grid flag value grid.
func (s Sweep) script(name string, tasks []SweepTask, grid string) string {
	cpus := s.CPUs
	if cpus <= 0 {
		cpus = 2
	}
	var b strings.Builder
	what := "one per arm and seed"
	if name == "search" {
		what = "one per arm: its learning-rate search, seed 0 at each rate"
	} else if grid != "none" {
		what = "one per arm and seed, at the rate its search chose"
	}
	fmt.Fprintf(&b, "#!/usr/bin/env bash\n# %s at %s, %s: %d task(s), %s; written by wm sweep.\n", s.Name, s.Preset, name, len(tasks), what)
	fmt.Fprintf(&b, "#SBATCH --job-name=wm-%s-%s-%s\n#SBATCH --array=0-%d\n#SBATCH --cpus-per-task=%d\n", s.Name, s.Preset, name, len(tasks)-1, cpus)
	fmt.Fprintf(&b, "#SBATCH --output=%s/%%A_%%a.out\n", s.LogDir())
	if s.Time != "" {
		fmt.Fprintf(&b, "#SBATCH --time=%s\n", s.Time)
	}
	for _, e := range s.Extra {
		fmt.Fprintf(&b, "#SBATCH %s\n", e)
	}
	b.WriteString("set -euo pipefail\ntasks=(\n")
	for _, t := range tasks {
		fmt.Fprintf(&b, "  %s\n", shellQuote(fmt.Sprintf("%s %d", t.Arm, t.Seed)))
	}
	b.WriteString(")\nread -r arm seed <<< \"${tasks[$SLURM_ARRAY_TASK_ID]}\"\n")
	b.WriteString("export GOMAXPROCS=\"${SLURM_CPUS_PER_TASK:-1}\"\n")
	shards := ""
	if s.Shards > 1 {
		shards = fmt.Sprintf(" --shards %d", s.Shards)
		if s.ShardThreads > 0 {
			shards += fmt.Sprintf(" --shard-threads %d", s.ShardThreads)
		}
	}
	fmt.Fprintf(&b, "exec %s run %s --preset %s --out %s --arms \"$arm\" --seed \"$seed\" --lr-grid %s%s --resume\n",
		shellQuote(s.WM), shellQuote(s.Name), shellQuote(s.Preset), shellQuote(s.Out), shellQuote(grid), shards)
	return b.String()
}

// ReportCommand is the command of the job that aggregates the sweep.
func (s Sweep) ReportCommand() string {
	return shellQuote(s.WM) + " report " + shellQuote(s.Out)
}
