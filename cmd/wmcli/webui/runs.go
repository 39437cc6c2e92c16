package webui

import (
	"bufio"
	"encoding/json"
	"io/fs"
	"os"
	"path"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/wonderful-matrices/wonderful-matrices-go/experiments"
	"github.com/wonderful-matrices/wonderful-matrices-go/experiments/train"
)

// Run statuses.
const (
	StatusDone     = "done"
	StatusRunning  = "running"
	StatusStopped  = "stopped" // unfinished and not running: killed, or waiting for --resume
	StatusFailed   = "failed"  // its last attempt ended with an error (Note says which)
	StatusDiverged = "diverged"
)

// recentWrite is how recently a run's files must have changed for a run on
// another machine (a Slurm node writing to shared storage) to count as
// running.
const recentWrite = 5 * time.Minute

// Run is one arm at one seed (and, in a learning-rate search, one rate).
type Run struct {
	// ID is the run's folder relative to the results root, with slashes.
	ID     string  `json:"id"`
	Seed   int     `json:"seed"`
	LR     float64 `json:"lr"`
	Search bool    `json:"search"` // a trial of the learning-rate search
	Status string  `json:"status"`
	Step   int     `json:"step"`
	Steps  int     `json:"steps"`
	// TokensPerS is the last step's rate; ETASeconds the remaining steps
	// at that rate (0 when done or unknown).
	TokensPerS float64   `json:"tokens_per_s"`
	ETASeconds float64   `json:"eta_s"`
	Loss       float64   `json:"loss"`
	ValPPL     float64   `json:"val_ppl,omitempty"`
	TestPPL    float64   `json:"test_ppl,omitempty"`
	Accuracy   *float64  `json:"accuracy,omitempty"`
	Updated    time.Time `json:"updated"`
	Note       string    `json:"note,omitempty"`
}

// Arm is an arm's runs.
type Arm struct {
	Name   string            `json:"name"`
	Labels map[string]string `json:"labels,omitempty"`
	// LR is the rate its search chose (0: no search finished).
	LR     float64 `json:"lr,omitempty"`
	LREdge bool    `json:"lr_edge,omitempty"`
	Runs   []Run   `json:"runs"`
}

// Experiment is one experiment at one preset under the root.
type Experiment struct {
	Name      string `json:"name"`
	Preset    string `json:"preset"`
	Title     string `json:"title,omitempty"`
	Reference string `json:"reference,omitempty"`
	HasTable  bool   `json:"has_table"`
	Arms      []Arm  `json:"arms"`
}

// Listing is what /api/runs answers.
type Listing struct {
	Root        string       `json:"root"`
	Experiments []Experiment `json:"experiments"`
	HasFindings bool         `json:"has_findings"`
	Time        time.Time    `json:"time"`
}

// scan lists every experiment, arm and run under root. It reads through
// fsys (an os.Root's, so nothing outside root is reachable) and writes
// nothing.
func scan(fsys fs.FS, rootName string, now time.Time) Listing {
	l := Listing{Root: rootName, Time: now}
	if _, err := fs.Stat(fsys, "findings.md"); err == nil {
		l.HasFindings = true
	}
	names, _ := fs.ReadDir(fsys, ".")
	for _, n := range names {
		if !n.IsDir() || strings.HasPrefix(n.Name(), ".") {
			continue
		}
		for _, p := range experiments.Presets {
			dir := path.Join(n.Name(), p)
			if st, err := fs.Stat(fsys, dir); err != nil || !st.IsDir() {
				continue
			}
			l.Experiments = append(l.Experiments, scanExperiment(fsys, n.Name(), p, now))
		}
	}
	return l
}

// scanExperiment lists the arms of one experiment folder: the definition's
// arms in its order when this binary knows it, then any other arm folder.
func scanExperiment(fsys fs.FS, name, preset string, now time.Time) Experiment {
	dir := path.Join(name, preset)
	e := Experiment{Name: name, Preset: preset}
	if _, err := fs.Stat(fsys, path.Join(dir, "table.md")); err == nil {
		e.HasTable = true
	}
	labels := map[string]map[string]string{}
	var order []string
	if def, err := experiments.Lookup(name); err == nil {
		e.Title, e.Reference = def.Title, def.Reference
		if arms, err := def.Expand(preset); err == nil {
			for _, a := range arms {
				m := map[string]string{}
				for _, lb := range a.Labels {
					m[lb.Key] = lb.Value
				}
				labels[a.Name] = m
				order = append(order, a.Name)
			}
		}
	}
	entries, _ := fs.ReadDir(fsys, dir)
	seen := map[string]bool{}
	for _, a := range order {
		seen[a] = true
	}
	for _, en := range entries {
		if en.IsDir() && !seen[en.Name()] && en.Name() != "plots" && en.Name() != "slurm" {
			order = append(order, en.Name())
			seen[en.Name()] = true
		}
	}
	for _, a := range order {
		arm := scanArm(fsys, path.Join(dir, a), now)
		if len(arm.Runs) == 0 {
			continue
		}
		arm.Name, arm.Labels = a, labels[a]
		e.Arms = append(e.Arms, arm)
	}
	return e
}

// scanArm lists an arm folder's runs: seed-S, or lr-RATE/seed-S of a
// learning-rate search (lr-choice.json says which rate was chosen).
func scanArm(fsys fs.FS, dir string, now time.Time) Arm {
	var arm Arm
	if b, err := fs.ReadFile(fsys, path.Join(dir, experiments.LRChoiceFile)); err == nil {
		var c experiments.LRChoice
		if json.Unmarshal(b, &c) == nil {
			arm.LR, arm.LREdge = c.Chosen, c.Edge
		}
	}
	entries, _ := fs.ReadDir(fsys, dir)
	for _, en := range entries {
		switch {
		case !en.IsDir():
		case strings.HasPrefix(en.Name(), "seed-"):
			if r, ok := scanRun(fsys, path.Join(dir, en.Name()), now); ok {
				arm.Runs = append(arm.Runs, r)
			}
		case strings.HasPrefix(en.Name(), "lr-"):
			lr, err := strconv.ParseFloat(strings.TrimPrefix(en.Name(), "lr-"), 64)
			if err != nil {
				continue
			}
			_, divErr := fs.Stat(fsys, path.Join(dir, en.Name(), "diverged.txt"))
			seeds, _ := fs.ReadDir(fsys, path.Join(dir, en.Name()))
			for _, s := range seeds {
				if !s.IsDir() || !strings.HasPrefix(s.Name(), "seed-") {
					continue
				}
				r, ok := scanRun(fsys, path.Join(dir, en.Name(), s.Name()), now)
				if !ok {
					continue
				}
				r.LR, r.Search = lr, r.Seed == 0 // seed 0 of a rate is its search trial
				if divErr == nil && r.Status != StatusDone {
					r.Status = StatusDiverged
				}
				arm.Runs = append(arm.Runs, r)
			}
		}
	}
	sort.Slice(arm.Runs, func(i, j int) bool {
		if arm.Runs[i].LR != arm.Runs[j].LR {
			return arm.Runs[i].LR < arm.Runs[j].LR
		}
		return arm.Runs[i].Seed < arm.Runs[j].Seed
	})
	return arm
}

// runConfig is what scanRun reads of config.json.
type runConfig struct {
	Train struct {
		Steps  int     `json:"steps"`
		Batch  int     `json:"batch"`
		SeqLen int     `json:"seq_len"`
		LR     float64 `json:"lr"`
	} `json:"train"`
}

// scanRun reads one run folder: its config, the last line of its metrics,
// its result and whether a process is training it.
func scanRun(fsys fs.FS, dir string, now time.Time) (Run, bool) {
	seed, err := strconv.Atoi(strings.TrimPrefix(path.Base(dir), "seed-"))
	if err != nil {
		return Run{}, false
	}
	r := Run{ID: dir, Seed: seed, Status: StatusStopped}
	var cfg runConfig
	if b, err := fs.ReadFile(fsys, path.Join(dir, train.RunConfigFile)); err == nil {
		_ = json.Unmarshal(b, &cfg)
		r.Steps, r.LR = cfg.Train.Steps, cfg.Train.LR
	}
	if st, err := fs.Stat(fsys, path.Join(dir, train.MetricsFile)); err == nil {
		r.Updated = st.ModTime()
		if last, ok := lastMetrics(fsys, path.Join(dir, train.MetricsFile)); ok {
			r.Step, r.Loss, r.TokensPerS = last.Step, last.CE, last.TokensPerS
		}
	}
	if b, err := fs.ReadFile(fsys, path.Join(dir, train.ResultFile)); err == nil {
		var res train.Result
		if json.Unmarshal(b, &res) == nil {
			r.Status, r.Step = StatusDone, max(r.Step, res.Steps)
			r.ValPPL, r.TestPPL = res.ValPPL, res.TestPPL
			if acc, ok := res.Measures["accuracy"]; ok {
				r.Accuracy = &acc
			}
			return r, true
		}
	}
	if b, err := fs.ReadFile(fsys, path.Join(dir, experiments.FailedFile)); err == nil {
		r.Status, r.Note = StatusFailed, strings.TrimSpace(string(b))
	}
	if running(fsys, dir, r.Updated, now) {
		r.Status = StatusRunning
		if r.TokensPerS > 0 && r.Steps > r.Step {
			r.ETASeconds = float64((r.Steps-r.Step)*cfg.Train.Batch*cfg.Train.SeqLen) / r.TokensPerS
		}
	}
	return r, true
}

// running says whether a process trains the run: run.lock names a live
// process of this machine, or (a node elsewhere) the metrics changed in the
// last recentWrite.
func running(fsys fs.FS, dir string, updated, now time.Time) bool {
	b, err := fs.ReadFile(fsys, path.Join(dir, train.LockFile))
	if err != nil {
		return false
	}
	var pid int
	var host string
	if f := strings.Fields(string(b)); len(f) >= 4 && f[0] == "pid" && f[2] == "on" {
		pid, _ = strconv.Atoi(f[1])
		host = f[3]
	}
	if me, _ := os.Hostname(); pid > 0 && host == me {
		err := syscall.Kill(pid, 0)
		return err == nil || err == syscall.EPERM
	}
	return !updated.IsZero() && now.Sub(updated) < recentWrite
}

// lastMetrics is the last complete line of a metrics.jsonl, read from its
// tail (a line cut by a crash or still being written is skipped).
func lastMetrics(fsys fs.FS, name string) (train.Metrics, bool) {
	f, err := fsys.Open(name)
	if err != nil {
		return train.Metrics{}, false
	}
	defer f.Close()
	var tail []byte
	if st, err := f.Stat(); err == nil {
		if s, ok := f.(interface {
			ReadAt([]byte, int64) (int, error)
		}); ok && st.Size() > 0 {
			n := min(st.Size(), 8192)
			tail = make([]byte, n)
			if _, err := s.ReadAt(tail, st.Size()-n); err != nil {
				tail = nil
			}
		}
	}
	var last train.Metrics
	found := false
	sc := bufio.NewScanner(strings.NewReader(string(tail)))
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		var m train.Metrics
		if json.Unmarshal(sc.Bytes(), &m) == nil && m.Step > 0 {
			last, found = m, true
		}
	}
	return last, found
}
