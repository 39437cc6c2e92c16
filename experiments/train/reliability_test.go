package train

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wonderful-matrices/wonderful-matrices-go/graph"
)

// A folder another process (here: another open of the lock) trains into is
// refused with the holder's pid, and nothing in it changes; once the lock
// is released the run starts.
func TestRunFolderLock(t *testing.T) {
	dir := t.TempDir()
	unlock, err := lockFolder(dir)
	if err != nil {
		t.Fatal(err)
	}
	_, err = tinyRun(t, dir, 3).Start(false)
	if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("is in use by pid %d", os.Getpid())) {
		t.Fatalf("a locked folder: %v", err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 || entries[0].Name() != LockFile {
		t.Errorf("the refused run changed the folder: %v", entries)
	}
	unlock()
	if _, err := tinyRun(t, dir, 3).Start(false); err != nil {
		t.Fatalf("after unlock: %+v", err)
	}
}

// Closing Stop ends the run after the step in progress with a checkpoint of
// that step; the resume ends with the metrics of a run never stopped.
func TestStopCheckpointsAndResumes(t *testing.T) {
	const steps = 24
	full, stopped := t.TempDir(), t.TempDir()
	if _, err := tinyRun(t, full, steps).Start(false); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	close(stop)
	r := tinyRun(t, stopped, steps)
	r.Stop = stop
	_, err := r.Start(false)
	var se *StoppedError
	if !errors.As(err, &se) || se.Step != 1 {
		t.Fatalf("stop: %v, want a StoppedError at step 1", err)
	}
	if d, err := CheckpointDir(stopped); err != nil || filepath.Base(d) != "ckpt-0000001" {
		t.Fatalf("checkpoint %s, %v", d, err)
	}
	if _, err := tinyRun(t, stopped, steps).Start(true); err != nil {
		t.Fatal(err)
	}
	a, b := readMetrics(t, full), readMetrics(t, stopped)
	if len(a) != steps || len(b) != steps || !sameStep(a[steps-1], b[steps-1]) {
		t.Fatalf("%d / %d lines; last %+v vs %+v", len(a), len(b), a[len(a)-1], b[len(b)-1])
	}
}

// On a disk that fills up (a small tmpfs), training stops with an error
// that names the folder and the cause, the last good checkpoint stays
// whole and loadable, no partial checkpoint is left, and the run resumes
// from it elsewhere to the same metrics as a run that never failed.
func TestDiskFullKeepsLastCheckpoint(t *testing.T) {
	if testing.Short() {
		t.Skip("mounts a tmpfs")
	}
	const steps = 30
	full := t.TempDir()
	if _, err := tinyRun(t, full, steps).Start(false); err != nil {
		t.Fatal(err)
	}
	ckpt, err := CheckpointDir(full)
	if err != nil {
		t.Fatal(err)
	}
	size := dirSize(t, ckpt)
	mnt := filepath.Join(t.TempDir(), "mnt")
	if err := os.Mkdir(mnt, 0o755); err != nil {
		t.Fatal(err)
	}
	// Room for one checkpoint and the small files, not for two (the next
	// is written before the previous is removed).
	limit := size*3/2 + 64<<10
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", fmt.Sprintf("size=%d", limit), "tmpfs", mnt).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a tmpfs here (needs root): %v %s", err, out)
	}
	defer exec.Command("umount", mnt).Run()
	dir := filepath.Join(mnt, "run")
	_, err = tinyRun(t, dir, steps).Start(false)
	if err == nil {
		t.Fatalf("a %d-byte disk held the run (checkpoint %d bytes)", limit, size)
	}
	if !strings.Contains(err.Error(), "no space left on device") || !strings.Contains(err.Error(), dir) {
		t.Errorf("error %q should name the folder and the cause", err)
	}
	last, err := CheckpointDir(dir)
	if err != nil {
		t.Fatalf("no checkpoint left: %v", err)
	}
	if _, _, err := graph.Load(last); err != nil {
		t.Fatalf("the last checkpoint %s does not load: %v", last, err)
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), "ckpt-") && filepath.Join(dir, e.Name()) != last {
			t.Errorf("a partial checkpoint %s was left", e.Name())
		}
	}
	moved := filepath.Join(t.TempDir(), "run")
	if out, err := exec.Command("cp", "-a", dir, moved).CombinedOutput(); err != nil {
		t.Fatalf("copy: %v %s", err, out)
	}
	if _, err := tinyRun(t, moved, steps).Start(true); err != nil {
		t.Fatalf("resume: %+v", err)
	}
	a, b := readMetrics(t, full), readMetrics(t, moved)
	if len(b) != steps || !sameStep(a[steps-1], b[steps-1]) {
		t.Errorf("resumed: %d lines, last %+v; uninterrupted %+v", len(b), b[len(b)-1], a[steps-1])
	}
}

func dirSize(t *testing.T, dir string) int64 {
	var n int64
	err := filepath.Walk(dir, func(_ string, fi os.FileInfo, err error) error {
		if err == nil && !fi.IsDir() {
			n += fi.Size()
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// sameStep says whether two metrics lines agree to the bit in everything
// but the timing.
func sameStep(a, b Metrics) bool {
	return a.Step == b.Step && a.Loss == b.Loss && a.GradNorm == b.GradNorm && a.LR == b.LR &&
		(a.ValLoss == nil) == (b.ValLoss == nil) && (a.ValLoss == nil || *a.ValLoss == *b.ValLoss)
}
