package wmcli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/wonderful-matrices/wonderful-matrices-go/cmd/wmcli/webui"
)

// runServe is `wm serve RESULTS [--addr 127.0.0.1:8080]`: the results
// folder as a live web page, read-only, on loopback unless told otherwise.
func runServe(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("wm serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	addr := fs.String("addr", "127.0.0.1:8080", "address to listen on; the default answers this machine only (another address exposes the results to the network)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: wm serve RESULTS [--addr 127.0.0.1:8080]\nServes the results folder of wm run (or a sweep's shared folder) as a web page: runs, live curves, tables, findings. Read-only.")
		fs.PrintDefaults()
	}
	dir, code, ok := parseNamed(fs, args, stderr)
	if !ok {
		return code
	}
	srv, err := webui.New(dir, *addr)
	if err != nil {
		fmt.Fprintf(stderr, "wm serve: %v\n", err)
		return 2
	}
	defer srv.Close()
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		fmt.Fprintf(stderr, "wm serve: %v\n", err)
		return 1
	}
	if host, _, _ := net.SplitHostPort(ln.Addr().String()); !net.ParseIP(host).IsLoopback() {
		fmt.Fprintf(stderr, "wm serve: listening on %s, which other machines can reach: anyone on the network can read these results\n", ln.Addr())
	}
	fmt.Fprintf(stdout, "serving %s at http://%s/ (read-only; ^C to stop)\n", dir, ln.Addr())
	hs := &http.Server{Handler: srv, ReadHeaderTimeout: 10 * time.Second}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		<-ctx.Done()
		sh, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		hs.Shutdown(sh)
	}()
	if err := hs.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		fmt.Fprintf(stderr, "wm serve: %v\n", err)
		return 1
	}
	return 0
}
