package webui_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/wonderful-matrices/wonderful-matrices-go/cmd/wmcli/webui"
	"github.com/wonderful-matrices/wonderful-matrices-go/experiments/data"
	"github.com/wonderful-matrices/wonderful-matrices-go/experiments/train"
	"github.com/wonderful-matrices/wonderful-matrices-go/graph"
)

// chromium finds Debian's chromium (or WM_CHROMIUM). Without one the test
// is skipped, unless WM_BROWSER_TEST=1 (make test sets it, after
// installing chromium) makes that a failure.
func chromium(t *testing.T) string {
	t.Helper()
	for _, c := range []string{os.Getenv("WM_CHROMIUM"), "chromium", "chromium-browser", "google-chrome"} {
		if c == "" {
			continue
		}
		if p, err := exec.LookPath(c); err == nil {
			return p
		}
	}
	if os.Getenv("WM_BROWSER_TEST") == "1" {
		t.Fatal("no chromium on PATH (WM_BROWSER_TEST=1): make browser-deps installs Debian's")
	}
	t.Skip("no chromium on PATH: make browser-deps installs Debian's; make test runs this test")
	return ""
}

// trainInBackground starts a small run into dir that goes on until stop is
// closed (or its steps are done) and returns its end.
func trainInBackground(t *testing.T, dir string, stop chan struct{}) <-chan error {
	t.Helper()
	tr, va, _, err := data.KJVSplit()
	if err != nil {
		t.Fatal(err)
	}
	tok := data.ByteTokenizer{}
	const T = 32
	trs, err := data.Pack(data.Encode(tok, []string{tr[:200_000]}), T)
	if err != nil {
		t.Fatal(err)
	}
	vas, err := data.Pack(data.Encode(tok, []string{va[:8000]}), T)
	if err != nil {
		t.Fatal(err)
	}
	run := &train.Run{
		Dir: dir,
		Config: train.RunConfig{
			Model: graph.Config{Pattern: "AM", Vocab: data.ByteVocab, DModel: 32, Heads: 2, MaxPosition: T},
			Train: train.Config{Steps: 100000, Batch: 4, SeqLen: T, LR: 3e-3, EvalEvery: 5, EvalBatches: 1, CkptEvery: 100000},
			Data:  "kjv/byte (browser test)",
		},
		Train: trs, Valid: vas, Progress: io.Discard, Stop: stop,
	}
	done := make(chan error, 1)
	go func() {
		_, err := run.Start(false)
		done <- err
	}()
	return done
}

// TestPageFollowsTrainingRun is the page as a person uses it: a run
// trains into a results folder, wm serve's handler serves it on loopback,
// headless Chromium opens the page, which names the experiment and shows
// the run as running, and the loss curve gains points while the run
// trains. WM_SCREENSHOT=path saves a PNG of the page.
func TestPageFollowsTrainingRun(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a browser")
	}
	exe := chromium(t)
	root := t.TempDir()
	stop := make(chan struct{})
	done := trainInBackground(t, filepath.Join(root, "table3", "tiny", "moe", "seed-0"), stop)
	defer func() {
		close(stop)
		if err := <-done; err != nil && !strings.Contains(err.Error(), "stopped at step") {
			t.Errorf("the training run: %v", err)
		}
	}()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv, err := webui.New(root, ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	hs := &http.Server{Handler: srv}
	go hs.Serve(ln)
	defer hs.Close()

	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(exe), chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true), chromedp.Flag("disable-quic", true), chromedp.WindowSize(1400, 900))
	actx, cancel := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancel()
	bctx, cancel := chromedp.NewContext(actx)
	defer cancel()
	if err := chromedp.Do(bctx); err != nil { // starts the browser; a timeout goes on later contexts only
		t.Fatalf("chromium did not start: %v", err)
	}
	ctx, cancel := context.WithTimeout(bctx, 90*time.Second)
	defer cancel()

	url := "http://" + ln.Addr().String() + "/"
	run := "table3/tiny/moe/seed-0"
	if err := chromedp.Do(ctx,
		chromedp.Navigate(url),
		chromedp.WaitVisible(chromedp.CSS(`body[data-ready="1"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#runs-table tr[data-status="running"]`)),
	); err != nil {
		t.Fatalf("the page did not load or shows no running run: %v", err)
	}
	experiment, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(`#experiment`)))
	if err != nil {
		t.Fatal(err)
	}
	status, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(`#runs-table tr[data-run="`+run+`"] td:nth-child(3)`)))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(experiment, "table3/tiny") || status != "running" {
		t.Fatalf("the page names %q with the run %q, want table3/tiny and running", experiment, status)
	}
	points := func() int {
		a, err := chromedp.Run(ctx, chromedp.AttributeValue(chromedp.CSS(`#chart-loss polyline[data-run="`+run+`"]`), "data-points"))
		if err != nil || !a.Exists {
			t.Fatalf("no loss curve of the run on the page: %v", err)
		}
		n, _ := strconv.Atoi(a.Value)
		return n
	}
	first := points()
	deadline := time.Now().Add(60 * time.Second)
	for {
		time.Sleep(500 * time.Millisecond)
		if now := points(); now > first {
			t.Logf("the loss curve went from %d to %d points while the run trained", first, now)
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the loss curve stayed at %d points for 60 s while the run trained", first)
		}
	}
	if path := os.Getenv("WM_SCREENSHOT"); path != "" {
		png, err := chromedp.Run(ctx, chromedp.FullScreenshot(90))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, png, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
