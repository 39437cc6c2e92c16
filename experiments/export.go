package experiments

import (
	"io/fs"
	"os"
	"path/filepath"

	"github.com/pkg/errors"

	"github.com/wonderful-matrices/wonderful-matrices-go/internal/atomicfile"
)

// exported are the files Export copies: what a report, the findings and a
// resumed sweep read, without the checkpoints (a run's config, metrics and
// result; an arm's learning-rate search; the tables and plots).
var exported = map[string]bool{
	"config.json": true, "metrics.jsonl": true, "result.json": true, "tokenizer.json": true,
	LRChoiceFile: true, divergedFile: true, FailedFile: true,
	"table.md": true, "table.csv": true, "seeds.csv": true,
}

// Export copies the results under out to dest without the checkpoints, so
// that a results folder can be committed or shared: dest is itself a
// results folder, which `wm report`, `wm findings` and `wm run --resume`
// read (a finished run is reused; an unfinished one has no checkpoint and
// starts again). Only the experiment folders of out (NAME/PRESET) are
// copied, each file written atomically; it returns the number of files.
func Export(out, dest string) (int, error) {
	sets, err := ResultSets(out)
	if err != nil {
		return 0, err
	}
	if len(sets) == 0 {
		return 0, errors.Errorf("%s holds no results of wm run", out)
	}
	n := 0
	for _, set := range sets {
		root := PresetDir(out, set.Def.Name, set.Preset)
		err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() {
				if isCheckpoint(d.Name()) {
					return filepath.SkipDir
				}
				return nil
			}
			rel, err := filepath.Rel(out, path)
			if err != nil {
				return err
			}
			inPlots := filepath.Base(filepath.Dir(path)) == "plots"
			if !exported[d.Name()] && !inPlots {
				return nil
			}
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			to := filepath.Join(dest, rel)
			if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
				return err
			}
			n++
			return atomicfile.WriteBytes(to, b)
		})
		if err != nil {
			return n, errors.Wrapf(err, "export %s to %s", root, dest)
		}
	}
	return n, nil
}

// isCheckpoint says whether a folder name is a run's checkpoint ("ckpt-…").
func isCheckpoint(name string) bool {
	return len(name) > 5 && name[:5] == "ckpt-"
}
