package ops

import (
	"strings"
	"sync"
	"testing"
	"time"
)

// siteProductA and siteProductB ask for the same product from two places;
// RecordGemmSites must tell them apart by name.
func siteProductA(a, b, c []float32, n int) { gemm(false, false, n, n, n, 1, a, n, b, n, 0, c, n) }
func siteProductB(a, b, c []float32, n int) { gemm(false, false, n, n, n, 1, a, n, b, n, 0, c, n) }

// RecordGemmSites sums each call by its shape and by the functions of the
// package that asked for it: two callers of one shape are two sites, with
// their own counts, their wall times add up to no more than the calls
// could have taken, and a closure run on a worker goroutine is named by
// the function that holds it. RecordGemm leaves Sites nil.
func TestRecordGemmSites(t *testing.T) {
	const n = 64
	a, b, c := make([]float32, n*n), make([]float32, n*n), make([]float32, n*n)
	rec, err := RecordGemmSites(func() error {
		for range 3 {
			siteProductA(a, b, c, n)
		}
		siteProductB(a, b, c, n)
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			gemm(false, false, n, n, n, 1, a, n, b, n, 0, c, n)
		}()
		wg.Wait()
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	shape := GemmShape{M: n, N: n, K: n, LDA: n, LDB: n, LDC: n}
	calls := map[string]int{}
	var wall time.Duration
	for site, st := range rec.Sites {
		if site.Shape != shape {
			t.Errorf("site %+v: shape %+v, want %+v", site, site.Shape, shape)
		}
		first, _, _ := strings.Cut(site.Caller, " < ")
		calls[first] += st.Calls
		wall += st.Wall
		if st.Wall <= 0 {
			t.Errorf("site %q: wall time %v", site.Caller, st.Wall)
		}
	}
	want := map[string]int{"siteProductA": 3, "siteProductB": 1, "TestRecordGemmSites": 1}
	for name, n := range want {
		if calls[name] != n {
			t.Errorf("sites by innermost caller %v: want %v", calls, want)
			break
		}
	}
	if len(calls) != len(want) {
		t.Errorf("sites by innermost caller %v: want only %v", calls, want)
	}
	if wall > rec.Wall {
		t.Errorf("the calls' wall times sum to %v, more than the recording's %v on one goroutine at a time", wall, rec.Wall)
	}
	if rec.Shapes[shape] != 5 {
		t.Errorf("shapes %v: want the product 5 times", rec.Shapes)
	}
	plain, err := RecordGemm(func() error { siteProductA(a, b, c, n); return nil })
	if err != nil || plain.Sites != nil {
		t.Errorf("RecordGemm gave sites %v (err %v), want none", plain.Sites, err)
	}
}

// shortFuncName drops type parameters and closure suffixes only.
func TestShortFuncName(t *testing.T) {
	for in, want := range map[string]string{
		"gemmTall[...].func2":         "gemmTall",
		"attnForward[...].func1.2":    "attnForward",
		"moeRun[...].gowrap1":         "moeRun",
		"(*attnKernel).forward":       "(*attnKernel).forward",
		"attnKernel.forward":          "attnKernel.forward",
		"functional":                  "functional",
		"weightGradHalves[...].func1": "weightGradHalves",
	} {
		if got := shortFuncName(in); got != want {
			t.Errorf("shortFuncName(%q) = %q, want %q", in, got, want)
		}
	}
}
