package experiments_test

import (
	"encoding/csv"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wonderful-matrices/wonderful-matrices-go/experiments"
	"github.com/wonderful-matrices/wonderful-matrices-go/experiments/train"
)

// Every experiment at tiny runs end to end: no arm fails, every arm has a
// result, training arms' loss falls, the table carries the paper's column
// where the definition has one, table.csv parses with a row per arm, and
// every plot is a PNG that decodes beside its SVG.
func TestEveryExperimentAtTiny(t *testing.T) {
	out := t.TempDir()
	for _, name := range experiments.Names() {
		def, _ := experiments.Lookup(name)
		t.Run(name, func(t *testing.T) {
			rep, err := experiments.Runner{Out: out, Preset: experiments.Tiny}.Run(def)
			if err != nil {
				t.Fatal(err)
			}
			arms, _ := def.Expand(experiments.Tiny)
			if len(rep.Missing) > 0 {
				t.Fatalf("no result for %v", rep.Missing)
			}
			for _, a := range arms {
				dir := experiments.SeedDir(out, name, experiments.Tiny, a.Name, 0)
				res, err := train.ReadResult(dir)
				if err != nil {
					t.Fatal(err)
				}
				if res.Params <= 0 {
					t.Errorf("%s: %d params", a.Name, res.Params)
				}
				if a.Train.Steps == 0 {
					continue
				}
				met, err := train.ReadMetrics(dir)
				if err != nil || len(met) != a.Train.Steps {
					t.Fatalf("%s: %d metric lines (err %v), want %d", a.Name, len(met), err, a.Train.Steps)
				}
				first, last := met[0].CE, met[len(met)-1].CE
				if !(last < first-0.1) {
					t.Errorf("%s: loss %.3f → %.3f, it should fall", a.Name, first, last)
				}
			}
			md, _ := os.ReadFile(rep.Table)
			for _, c := range def.ColumnsAt(experiments.Tiny) {
				if c.Paper != "" && !strings.Contains(string(md), "| paper "+c.Title+" |") {
					t.Errorf("table.md lacks the column paper %s", c.Title)
				}
			}
			f, _ := os.Open(rep.CSV)
			rows, err := csv.NewReader(f).ReadAll()
			f.Close()
			if err != nil || len(rows) != len(arms)+1 {
				t.Errorf("table.csv: %d rows (err %v), want %d", len(rows), err, len(arms)+1)
			}
			if len(rep.Plots) < len(def.Plots)*2 {
				t.Errorf("%d plot files for %d plots", len(rep.Plots), len(def.Plots))
			}
			for _, p := range rep.Plots {
				if filepath.Ext(p) == ".png" {
					f, _ := os.Open(p)
					_, err := png.Decode(f)
					f.Close()
					if err != nil {
						t.Errorf("%s: %v", p, err)
					}
					if _, err := os.Stat(strings.TrimSuffix(p, ".png") + ".svg"); err != nil {
						t.Errorf("no SVG beside %s", p)
					}
				}
			}
		})
	}
}
