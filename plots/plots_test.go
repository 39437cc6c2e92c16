package plots_test

import (
	"image/png"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wonderful-matrices/wonderful-matrices-go/plots"
)

// Log axes drop what they cannot show (gonum/plot's log scale panics on
// zero, negative or infinite values) and say so in the title; the PNG
// decodes and the SVG is an SVG.
func TestLinesLogAxesDropBadPoints(t *testing.T) {
	base := filepath.Join(t.TempDir(), "sub", "ppl")
	l := plots.Lines{Title: "ppl", XLabel: "length", YLabel: "ppl", LogX: true, LogY: true, Series: []plots.Series{
		{Name: "rope", X: []float64{512, 1024, 2048, 0}, Y: []float64{20, math.Inf(1), 3000, 5}},
		{Name: "coca", X: []float64{512, 1024}, Y: []float64{21, math.NaN()}},
	}}
	paths, err := l.Save(base)
	if err != nil || len(paths) != 2 {
		t.Fatalf("paths %v, err %v", paths, err)
	}
	f, _ := os.Open(base + ".png")
	defer f.Close()
	if _, err := png.Decode(f); err != nil {
		t.Error(err)
	}
	svg, _ := os.ReadFile(base + ".svg")
	if !strings.Contains(string(svg), "<svg") || !strings.Contains(string(svg), "3 points not shown") {
		t.Error("the SVG should be an SVG whose title counts the 3 dropped points")
	}
	none, err := plots.Lines{LogY: true, Series: []plots.Series{{Name: "x", X: []float64{1}, Y: []float64{0}}}}.Save(base + "2")
	if err != nil || none != nil {
		t.Errorf("nothing to show: paths %v, err %v; want none, nil", none, err)
	}
	if _, err := (plots.Lines{Series: []plots.Series{{X: []float64{1}}}}).Save(base + "3"); err == nil {
		t.Error("x and y of different lengths gave no error")
	}
}

func TestBars(t *testing.T) {
	base := filepath.Join(t.TempDir(), "bars")
	b := plots.Bars{Title: "ppl", YLabel: "ppl", Categories: []string{"a", "b"}, PaperGroup: 1,
		Groups: []plots.BarGroup{{Name: "measured", Values: []float64{5, 6}}, {Name: "paper", Values: []float64{8.3, math.NaN()}}}}
	paths, err := b.Save(base)
	if err != nil || len(paths) != 2 {
		t.Fatalf("paths %v, err %v", paths, err)
	}
	b.Groups[0].Values = []float64{1}
	if _, err := b.Save(base); err == nil {
		t.Error("a group with too few values gave no error")
	}
}
