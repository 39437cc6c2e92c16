package train

import (
	"os"
	"path/filepath"
	"testing"
)

// FuzzReadMetrics: any bytes as metrics.jsonl read without a panic (a line
// cut by a crash or garbage is skipped), and truncating to a step keeps
// exactly the lines of steps up to it.
func FuzzReadMetrics(f *testing.F) {
	f.Add([]byte(`{"step":1,"loss":5.5,"ce":5.5,"ppl":245,"lr":0.001,"grad_norm":1,"tokens_per_s":1000}`+"\n"+
		`{"step":2,"loss":5.1,"ce":5.1,"ppl":164,"lr":0.001,"grad_norm":1,"tokens_per_s":1000,"val_loss":5,"val_ppl":148}`+"\n"), 1)
	f.Add([]byte(`{"step":1,"loss":5.5}`+"\n"+`{"step":2,"lo`), 2)
	f.Add([]byte("\n\n{}\n[]\nnull\n"), 0)
	f.Add([]byte(`{"step":-1,"val_ppl":"x"}`+"\n"), 5)
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, raw []byte, last int) {
		path := filepath.Join(dir, MetricsFile)
		if err := os.WriteFile(path, raw, 0o644); err != nil {
			t.Fatal(err)
		}
		before, err := ReadMetrics(dir)
		if err != nil {
			t.Fatal(err)
		}
		if err := truncateMetrics(path, last); err != nil {
			t.Fatal(err)
		}
		after, err := ReadMetrics(dir)
		if err != nil {
			t.Fatal(err)
		}
		want := 0
		for _, m := range before {
			if m.Step <= last {
				want++
			}
		}
		if len(after) != want {
			t.Fatalf("truncating to %d kept %d of %d lines, want %d", last, len(after), len(before), want)
		}
	})
}
