package webui

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// writeFile writes name under dir, making its folders.
func writeFile(t *testing.T, dir, name, body string) {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

func metricsLines(from, to int) string {
	var b strings.Builder
	for s := from; s <= to; s++ {
		fmt.Fprintf(&b, `{"step":%d,"loss":%g,"ce":%g,"ppl":1,"lr":0.001,"grad_norm":1,"tokens_per_s":1000`, s, 5.0/float64(s), 5.0/float64(s))
		if s%10 == 0 {
			fmt.Fprintf(&b, `,"val_loss":1,"val_ppl":%g`, 10.0/float64(s))
		}
		b.WriteString("}\n")
	}
	return b.String()
}

// fixture is a results folder as wm run leaves it, mid-sweep: table3 at
// tiny with a finished arm, a search with a chosen rate, a diverged rate
// and a run in progress (its last metrics line cut); findings.md and a
// plot; and, outside the folder, a secret that a symlink inside points to.
func fixture(t *testing.T) (root, secret string) {
	t.Helper()
	base := t.TempDir()
	root = filepath.Join(base, "results")
	secret = filepath.Join(base, "secret.md")
	writeFile(t, base, "secret.md", "# the secret\n")
	cfg := `{"model":{},"train":{"steps":40,"batch":2,"seq_len":8,"lr":0.003},"data":"kjv/byte"}`
	moe := "table3/tiny/moe/seed-0"
	writeFile(t, root, moe+"/config.json", cfg)
	writeFile(t, root, moe+"/metrics.jsonl", metricsLines(1, 40))
	writeFile(t, root, moe+"/result.json", `{"steps":40,"val_ppl":3.5,"test_ppl":3.7,"params":10}`)
	sei := "table3/tiny/moe-sei"
	writeFile(t, root, sei+"/lr-choice.json", `{"grid":[0.001,0.01],"select":"val_loss","trials":[],"chosen":0.001,"edge":true}`)
	writeFile(t, root, sei+"/lr-0.001/seed-0/config.json", cfg)
	writeFile(t, root, sei+"/lr-0.001/seed-0/metrics.jsonl", metricsLines(1, 40))
	writeFile(t, root, sei+"/lr-0.001/seed-0/result.json", `{"steps":40,"val_ppl":3.1,"test_ppl":3.2}`)
	writeFile(t, root, sei+"/lr-0.01/diverged.txt", "step 3: the loss is NaN\n")
	writeFile(t, root, sei+"/lr-0.01/seed-0/config.json", cfg)
	writeFile(t, root, sei+"/lr-0.01/seed-0/metrics.jsonl", metricsLines(1, 2))
	host, _ := os.Hostname()
	run := sei + "/lr-0.001/seed-1"
	writeFile(t, root, run+"/config.json", cfg)
	writeFile(t, root, run+"/metrics.jsonl", metricsLines(1, 12)+`{"step":13,"loss":0.4,"c`)
	writeFile(t, root, run+"/run.lock", fmt.Sprintf("pid %d on %s since now\n", os.Getpid(), host))
	failed := "table3/tiny/cdmoe/seed-1"
	writeFile(t, root, failed+"/config.json", cfg)
	writeFile(t, root, failed+"/metrics.jsonl", metricsLines(1, 5))
	writeFile(t, root, failed+"/failed.txt", "step 6: the loss is NaN\n")
	writeFile(t, root, "table3/tiny/table.md", "# table3\n\n| arm | ppl |\n| --- | --- |\n| moe | 3.7 <script>alert(1)</script> |\n\n![curves](plots/val.png)\n")
	writeFile(t, root, "table3/tiny/plots/val.png", "\x89PNG fake")
	writeFile(t, root, "findings.md", "# Findings\n\n> **Control failed**\n\n- a [link](javascript:alert(1)) and `code <b>`\n")
	if err := os.Symlink(secret, filepath.Join(root, "table3", "tiny", "leak.md")); err != nil {
		t.Fatal(err)
	}
	return root, secret
}

func get(t *testing.T, h http.Handler, target string) (int, string) {
	t.Helper()
	req := httptest.NewRequest(http.MethodGet, target, nil)
	req.Host = "127.0.0.1:8080"
	w := httptest.NewRecorder()
	h.ServeHTTP(w, req)
	b, _ := io.ReadAll(w.Result().Body)
	return w.Code, string(b)
}

func newServer(t *testing.T, root string) *Server {
	t.Helper()
	s, err := New(root, "127.0.0.1:8080")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestAPIRuns(t *testing.T) {
	root, _ := fixture(t)
	s := newServer(t, root)
	code, body := get(t, s, "/api/runs")
	if code != 200 {
		t.Fatalf("%d %s", code, body)
	}
	var l Listing
	if err := json.Unmarshal([]byte(body), &l); err != nil {
		t.Fatal(err)
	}
	if len(l.Experiments) != 1 || l.Experiments[0].Name != "table3" || l.Experiments[0].Title == "" || !l.Experiments[0].HasTable || !l.HasFindings {
		t.Fatalf("listing: %+v", l)
	}
	runs := map[string]Run{}
	for _, a := range l.Experiments[0].Arms {
		for _, r := range a.Runs {
			runs[r.ID] = r
		}
		if a.Name == "moe-sei" && (a.LR != 0.001 || !a.LREdge) {
			t.Errorf("moe-sei: chosen rate %v edge %v", a.LR, a.LREdge)
		}
	}
	for id, want := range map[string]struct {
		status string
		step   int
		search bool
	}{
		"table3/tiny/moe/seed-0":              {StatusDone, 40, false},
		"table3/tiny/moe-sei/lr-0.001/seed-0": {StatusDone, 40, true},
		"table3/tiny/moe-sei/lr-0.01/seed-0":  {StatusDiverged, 2, true},
		"table3/tiny/moe-sei/lr-0.001/seed-1": {StatusRunning, 12, false},
		"table3/tiny/cdmoe/seed-1":            {StatusFailed, 5, false},
	} {
		r, ok := runs[id]
		if !ok || r.Status != want.status || r.Step != want.step || r.Search != want.search {
			t.Errorf("%s: %+v, want %+v", id, r, want)
		}
	}
	if r := runs["table3/tiny/moe-sei/lr-0.001/seed-1"]; r.ETASeconds <= 0 || r.Steps != 40 {
		t.Errorf("running run: ETA %v of %d steps", r.ETASeconds, r.Steps)
	}
	if r := runs["table3/tiny/cdmoe/seed-1"]; r.Note != "step 6: the loss is NaN" {
		t.Errorf("failed run's note %q", r.Note)
	}
	if r := runs["table3/tiny/moe/seed-0"]; r.TestPPL != 3.7 {
		t.Errorf("done run: test ppl %v", r.TestPPL)
	}
}

func TestAPICurves(t *testing.T) {
	root, _ := fixture(t)
	// A long run: 5000 steps thin to at most 2·MaxPoints points.
	writeFile(t, root, "table3/tiny/cdmoe/seed-0/metrics.jsonl", metricsLines(1, 5000))
	s := newServer(t, root)
	code, body := get(t, s, "/api/curves?id=table3/tiny/moe-sei/lr-0.001/seed-1&id=table3/tiny/cdmoe/seed-0&id=table3/tiny/none/seed-0")
	if code != 200 {
		t.Fatalf("%d %s", code, body)
	}
	var cs []RunCurves
	if err := json.Unmarshal([]byte(body), &cs); err != nil || len(cs) != 3 {
		t.Fatalf("%v: %s", err, body)
	}
	if cs[0].Points != 12 || len(cs[0].Loss.Step) != 12 || len(cs[0].ValPPL.Step) != 1 {
		t.Errorf("a run mid-write: %d points, %d loss, %d val (the cut last line must be skipped)", cs[0].Points, len(cs[0].Loss.Step), len(cs[0].ValPPL.Step))
	}
	long := cs[1]
	if long.Points != 5000 || len(long.Loss.Step) > 2*MaxPoints || len(long.Loss.Step) < MaxPoints/2 || long.Loss.Stride < 2 || long.Loss.Step[0] != 1 {
		t.Errorf("5000 steps: %d points kept, stride %d, first step %v", len(long.Loss.Step), long.Loss.Stride, long.Loss.Step[:1])
	}
	for i := 1; i < len(long.Loss.Step); i++ {
		if long.Loss.Step[i]-long.Loss.Step[i-1] != long.Loss.Stride {
			t.Fatalf("thinned steps not evenly spaced at %d: %v", i, long.Loss.Step[i-1:i+1])
		}
	}
	if cs[2].Points != 0 {
		t.Errorf("a run with no metrics: %+v", cs[2])
	}
	var many []string
	for i := 0; i <= MaxCurvesPerRequest; i++ {
		many = append(many, "id=x")
	}
	if code, _ := get(t, s, "/api/curves?"+strings.Join(many, "&")); code != http.StatusBadRequest {
		t.Errorf("%d ids: %d, want 400", len(many), code)
	}
}

// Nothing outside the folder is reachable: not by .., not by an absolute
// path, not through a symlink; only GET/HEAD; a Host other than loopback
// is refused; files of other types are not served.
func TestAPIRefusesEscapes(t *testing.T) {
	root, secret := fixture(t)
	s := newServer(t, root)
	for _, target := range []string{
		"/files/%2e%2e/secret.md", "/files/table3/..%2f..%2fsecret.md", "/api/doc?path=../secret.md", "/api/doc?path=" + secret,
		"/api/doc?path=table3/tiny/leak.md", "/files/table3/tiny/leak.md", "/api/curves?id=../results", "/api/doc?path=table3/tiny/moe/seed-0/config.json",
		"/files/table3/tiny/moe/seed-0/run.lock",
	} {
		code, body := get(t, s, target)
		if code == 200 || strings.Contains(body, "the secret") {
			t.Errorf("%s: %d %q", target, code, body)
		}
	}
	for _, m := range []string{http.MethodPost, http.MethodPut, http.MethodDelete} {
		req := httptest.NewRequest(m, "/api/runs", nil)
		req.Host = "127.0.0.1:8080"
		w := httptest.NewRecorder()
		s.ServeHTTP(w, req)
		if w.Code != http.StatusMethodNotAllowed {
			t.Errorf("%s: %d", m, w.Code)
		}
	}
	req := httptest.NewRequest(http.MethodGet, "/api/runs", nil)
	req.Host = "attacker.example:8080"
	w := httptest.NewRecorder()
	s.ServeHTTP(w, req)
	if w.Code != http.StatusForbidden {
		t.Errorf("foreign Host: %d", w.Code)
	}
	if code, body := get(t, s, "/files/table3/tiny/plots/val.png"); code != 200 || body != "\x89PNG fake" {
		t.Errorf("a plot: %d %q", code, body)
	}
	// The server wrote nothing under the folder.
	var files int
	filepath.Walk(root, func(string, os.FileInfo, error) error { files++; return nil })
	before := files
	get(t, s, "/api/runs")
	files = 0
	filepath.Walk(root, func(string, os.FileInfo, error) error { files++; return nil })
	if files != before {
		t.Errorf("%d entries under the folder before a request, %d after", before, files)
	}
}

func TestAPIDocEscapes(t *testing.T) {
	root, _ := fixture(t)
	s := newServer(t, root)
	code, body := get(t, s, "/api/doc?path=table3/tiny/table.md")
	var d Doc
	if code != 200 || json.Unmarshal([]byte(body), &d) != nil {
		t.Fatalf("%d %s", code, body)
	}
	for _, want := range []string{"<th>arm</th>", "3.7 &lt;script&gt;", `<img alt="curves" src="/files/table3/tiny/plots/val.png">`} {
		if !strings.Contains(d.HTML, want) {
			t.Errorf("table.md as HTML lacks %q:\n%s", want, d.HTML)
		}
	}
	if strings.Contains(d.HTML, "<script>") {
		t.Errorf("a script tag got through:\n%s", d.HTML)
	}
	_, body = get(t, s, "/api/doc?path=findings.md")
	json.Unmarshal([]byte(body), &d)
	if strings.Contains(d.HTML, "javascript:") || !strings.Contains(d.HTML, "<code>code &lt;b&gt;</code>") || !strings.Contains(d.HTML, "<blockquote><strong>Control failed</strong></blockquote>") {
		t.Errorf("findings.md as HTML:\n%s", d.HTML)
	}
}

func TestNewRefusesBadFolders(t *testing.T) {
	if _, err := New(filepath.Join(t.TempDir(), "nope"), "127.0.0.1:0"); err == nil {
		t.Error("a missing folder was served")
	}
	f := filepath.Join(t.TempDir(), "file")
	os.WriteFile(f, nil, 0o644)
	if _, err := New(f, "127.0.0.1:0"); err == nil || !strings.Contains(err.Error(), "not a folder") {
		t.Errorf("a file: %v", err)
	}
}

func TestStoppedRunOnAnotherHost(t *testing.T) {
	root, _ := fixture(t)
	run := filepath.Join(root, "table3/tiny/moe-sei/lr-0.001/seed-1")
	writeFile(t, run, "run.lock", "pid 1 on some-slurm-node since then\n")
	s := newServer(t, root)
	old := time.Now().Add(-time.Hour)
	os.Chtimes(filepath.Join(run, "metrics.jsonl"), old, old)
	_, body := get(t, s, "/api/runs")
	if !strings.Contains(body, `"id":"table3/tiny/moe-sei/lr-0.001/seed-1","seed":1,"lr":0.001,"search":false,"status":"stopped"`) {
		t.Errorf("an hour-old run of another machine should be stopped:\n%s", body)
	}
	s.now = func() time.Time { return old.Add(time.Minute) }
	_, body = get(t, s, "/api/runs")
	if !strings.Contains(body, `"status":"running","step":12`) {
		t.Errorf("a run of another machine written a minute ago should be running:\n%s", body)
	}
}
