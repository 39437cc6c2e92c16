package experiments

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/pkg/errors"
)

// Sweep is an experiment spread over a Slurm job array: one task per arm
// and seed, each running `wm run NAME --preset P --out OUT --arms ARM
// --seed S --resume` into storage all nodes share; a last job, once the
// array has ended, runs `wm report OUT` to aggregate.
type Sweep struct {
	Name, Preset string
	// Out is the results folder, on storage shared by the nodes.
	Out   string
	Seeds int
	// Arms, when non-empty, limits the sweep to these arms.
	Arms []string
	// WM is the wm binary the tasks run (a path every node can reach).
	WM string
	// CPUs per task (default 2: the ops run in parallel over batch × heads).
	CPUs int
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

// Script is the sbatch script of the job array: task i runs tasks[i].
func (s Sweep) Script() (string, error) {
	tasks, err := s.Tasks()
	if err != nil {
		return "", err
	}
	if s.WM == "" || !filepath.IsAbs(s.WM) || !filepath.IsAbs(s.Out) {
		return "", errors.Errorf("sweep: the wm binary (%q) and the results folder (%q) must be absolute paths that every node can reach", s.WM, s.Out)
	}
	cpus := s.CPUs
	if cpus <= 0 {
		cpus = 2
	}
	var b strings.Builder
	fmt.Fprintf(&b, "#!/usr/bin/env bash\n# %s at %s: %d task(s), one per arm and seed; written by wm sweep.\n", s.Name, s.Preset, len(tasks))
	fmt.Fprintf(&b, "#SBATCH --job-name=wm-%s-%s\n#SBATCH --array=0-%d\n#SBATCH --cpus-per-task=%d\n", s.Name, s.Preset, len(tasks)-1, cpus)
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
	fmt.Fprintf(&b, "exec %s run %s --preset %s --out %s --arms \"$arm\" --seed \"$seed\" --resume\n",
		shellQuote(s.WM), shellQuote(s.Name), shellQuote(s.Preset), shellQuote(s.Out))
	return b.String(), nil
}

// ReportCommand is the command of the job that aggregates the sweep.
func (s Sweep) ReportCommand() string {
	return shellQuote(s.WM) + " report " + shellQuote(s.Out)
}
