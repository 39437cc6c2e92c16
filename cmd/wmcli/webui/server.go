// Package webui serves a results folder of wm run as a web page: the
// experiments, arms, seeds and runs with their status, live curves that
// update while runs train, each experiment's table and findings.md. The
// page and its script are embedded in the binary; the server only reads
// under the folder it was given, through an os.Root, so no path and no
// symlink leads out of it, and it writes nothing.
package webui

import (
	"embed"
	"encoding/json"
	"io"
	"io/fs"
	"mime"
	"net"
	"net/http"
	"os"
	"path"
	"strings"
	"time"

	"github.com/pkg/errors"
)

//go:embed assets
var assets embed.FS

// MaxCurvesPerRequest bounds the runs one /api/curves request may ask for.
const MaxCurvesPerRequest = 64

// servedFiles are the file types /files/ serves (plots, tables, results).
var servedFiles = map[string]string{
	".png": "image/png", ".svg": "image/svg+xml", ".csv": "text/csv; charset=utf-8",
	".md": "text/markdown; charset=utf-8", ".json": "application/json", ".jsonl": "application/x-ndjson",
}

// Server answers the page and its API for one results folder.
type Server struct {
	root *os.Root
	name string
	// hosts are the Host headers accepted (loopback names of the address
	// bound), nil to accept any: a page bound to loopback refuses requests
	// whose Host names another machine (DNS rebinding).
	hosts map[string]bool
	now   func() time.Time
}

// New opens dir as the results root. addr is the address the server will
// listen on: when it is a loopback address only loopback Host headers are
// accepted.
func New(dir, addr string) (*Server, error) {
	st, err := os.Stat(dir)
	if err != nil {
		return nil, errors.Errorf("%s: %v", dir, errors.Cause(err))
	}
	if !st.IsDir() {
		return nil, errors.Errorf("%s is not a folder", dir)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, errors.Wrapf(err, "results folder %s", dir)
	}
	s := &Server{root: root, name: dir, now: time.Now}
	if host, port, err := net.SplitHostPort(addr); err == nil && isLoopback(host) {
		s.hosts = map[string]bool{}
		for _, h := range []string{"localhost", "127.0.0.1", "::1", host} {
			s.hosts[net.JoinHostPort(h, port)] = true
		}
	}
	return s, nil
}

// isLoopback says whether host (a name or an address) is loopback.
func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// Close releases the root.
func (s *Server) Close() error { return s.root.Close() }

// ServeHTTP routes: / (the page), /assets/…, /api/runs, /api/curves,
// /api/doc, /files/…; GET and HEAD only.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Content-Security-Policy", "default-src 'self'; img-src 'self'; style-src 'self'; script-src 'self'; frame-ancestors 'none'")
	h.Set("Referrer-Policy", "no-referrer")
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		h.Set("Allow", "GET, HEAD")
		http.Error(w, "read-only: only GET and HEAD", http.StatusMethodNotAllowed)
		return
	}
	if s.hosts != nil && !s.hosts[r.Host] {
		http.Error(w, "this server answers on loopback only (Host "+r.Host+" refused)", http.StatusForbidden)
		return
	}
	p := r.URL.Path
	switch {
	case p == "/" || p == "/index.html":
		s.asset(w, r, "assets/index.html")
	case strings.HasPrefix(p, "/assets/"):
		s.asset(w, r, "assets/"+strings.TrimPrefix(p, "/assets/"))
	case p == "/api/runs":
		writeJSON(w, scan(s.root.FS(), s.name, s.now()))
	case p == "/api/curves":
		s.curves(w, r)
	case p == "/api/doc":
		s.doc(w, r)
	case strings.HasPrefix(p, "/files/"):
		s.file(w, r, strings.TrimPrefix(p, "/files/"))
	default:
		http.NotFound(w, r)
	}
}

func (s *Server) asset(w http.ResponseWriter, r *http.Request, name string) {
	b, err := assets.ReadFile(name)
	if err != nil {
		http.NotFound(w, r)
		return
	}
	if t := mime.TypeByExtension(path.Ext(name)); t != "" {
		w.Header().Set("Content-Type", t)
	}
	w.Header().Set("Cache-Control", "no-cache")
	w.Write(b)
}

// cleanRel checks a path from a request: relative, slash-separated, no
// "..", no empty or dot elements; the os.Root refuses symlinks out of the
// root on top of this.
func cleanRel(p string) (string, error) {
	if p == "" || !fs.ValidPath(p) || strings.ContainsAny(p, "\\\x00") {
		return "", errors.Errorf("path %q is not a path inside the results folder", p)
	}
	return p, nil
}

// file serves a result file of an allowed type.
func (s *Server) file(w http.ResponseWriter, r *http.Request, rel string) {
	rel, err := cleanRel(rel)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	ct, ok := servedFiles[path.Ext(rel)]
	if !ok {
		http.Error(w, "only plots, tables and results are served", http.StatusForbidden)
		return
	}
	f, st, ok := s.open(w, rel)
	if !ok {
		return
	}
	defer f.Close()
	w.Header().Set("Content-Type", ct)
	http.ServeContent(w, r, "", st.ModTime(), f)
}

// open opens a regular file under the root, or answers 404 and returns
// ok false.
func (s *Server) open(w http.ResponseWriter, rel string) (*os.File, os.FileInfo, bool) {
	f, err := s.root.Open(rel)
	if err != nil {
		http.Error(w, "not found: "+rel, http.StatusNotFound)
		return nil, nil, false
	}
	st, err := f.Stat()
	if err != nil || st.IsDir() {
		f.Close()
		http.Error(w, "not a file: "+rel, http.StatusNotFound)
		return nil, nil, false
	}
	return f, st, true
}

// curves answers the curves of the runs named by the id parameters.
func (s *Server) curves(w http.ResponseWriter, r *http.Request) {
	ids := r.URL.Query()["id"]
	if len(ids) > MaxCurvesPerRequest {
		http.Error(w, "too many runs in one request (at most 64)", http.StatusBadRequest)
		return
	}
	out := []RunCurves{}
	for _, id := range ids {
		id, err := cleanRel(id)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		c, err := readCurves(s.root.FS(), id, MaxPoints)
		if err != nil {
			c = RunCurves{ID: id} // not started yet, or removed: no points
		}
		out = append(out, c)
	}
	writeJSON(w, out)
}

// Doc is a Markdown file rendered for the page.
type Doc struct {
	Path string `json:"path"`
	HTML string `json:"html"`
}

// doc renders a .md file under the root.
func (s *Server) doc(w http.ResponseWriter, r *http.Request) {
	rel, err := cleanRel(r.URL.Query().Get("path"))
	if err == nil && path.Ext(rel) != ".md" {
		err = errors.Errorf("path %q is not a Markdown file", rel)
	}
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	f, _, ok := s.open(w, rel)
	if !ok {
		return
	}
	defer f.Close()
	const maxDoc = 4 << 20
	b, err := io.ReadAll(io.LimitReader(f, maxDoc+1))
	if err != nil {
		http.Error(w, "reading "+rel+": "+err.Error(), http.StatusInternalServerError)
		return
	}
	if len(b) > maxDoc {
		http.Error(w, rel+" is larger than 4 MiB", http.StatusRequestEntityTooLarge)
		return
	}
	writeJSON(w, Doc{Path: rel, HTML: Markdown(string(b), path.Dir(rel))})
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	enc := json.NewEncoder(w)
	if err := enc.Encode(v); err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
	}
}
