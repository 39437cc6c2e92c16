package plots_test

import (
	"bytes"
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

// The legend is drawn in a strip right of the plotting area, never over
// data: the image is wider than the plotting area by the strip, and the
// strip holds ink (the legend).
func TestLegendBesideData(t *testing.T) {
	var ss []plots.Series
	for _, n := range []string{"conv1d+D", "a_t", "rope", "D only"} {
		s := plots.Series{Name: n}
		for x := 0.0; x <= 10; x++ {
			s.X, s.Y, s.Err = append(s.X, x), append(s.Y, 10-x+float64(len(n))), append(s.Err, 0.3)
		}
		ss = append(ss, s)
	}
	b, err := plots.Lines{Title: "t", Series: ss}.PNG()
	if err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	area := int(plots.Width.Dots(96))
	bounds := img.Bounds()
	if bounds.Dx() <= area+20 {
		t.Fatalf("image %d px wide, plotting area %d: no room for a legend strip", bounds.Dx(), area)
	}
	ink := 0
	for x := area + 5; x < bounds.Dx(); x++ {
		for y := 0; y < bounds.Dy(); y++ {
			if r, g, bb, _ := img.At(x, y).RGBA(); r+g+bb < 3*0xe000 {
				ink++
			}
		}
	}
	if ink == 0 {
		t.Error("the strip right of the plotting area is blank: where is the legend?")
	}
}

// Small multiples: a grid of 5 panels in 3 columns is 2 rows; an empty
// grid writes nothing; error bars on bars are accepted with the values.
func TestGridAndErrorBars(t *testing.T) {
	dir := t.TempDir()
	var panels []plots.Lines
	for i := 0; i < 5; i++ {
		panels = append(panels, plots.Lines{Title: "set " + string(rune('A'+i)), Series: []plots.Series{
			{Name: "rope", X: []float64{1, 2}, Y: []float64{5, 4}, Err: []float64{0.1, 0.1}},
			{Name: "a_t", X: []float64{1, 2}, Y: []float64{6, 5}},
		}})
	}
	b, err := plots.Grid{Title: "grid", Panels: panels, Cols: 3}.PNG()
	if err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	if w, h := img.Bounds().Dx(), img.Bounds().Dy(); w <= h {
		t.Errorf("3×2 grid is %d×%d px: want wider than tall", w, h)
	}
	if p, err := (plots.Grid{}).Save(filepath.Join(dir, "empty")); p != nil || err != nil {
		t.Errorf("empty grid: %v, %v", p, err)
	}
	bars := plots.Bars{Title: "ratio", Categories: []string{"a", "b"}, RefLine: 1, YMin: 0.8, PaperGroup: 1,
		Groups: []plots.BarGroup{{Name: "measured", Values: []float64{1.1, 0.95}, Err: []float64{0.02, 0.03}}, {Name: "paper", Values: []float64{1, 0.97}}}}
	if p, err := bars.Save(filepath.Join(dir, "bars")); err != nil || len(p) != 2 {
		t.Fatalf("bars: %v, %v", p, err)
	}
	bars.Groups[0].Err = []float64{1}
	if _, err := bars.Save(filepath.Join(dir, "bad")); err == nil {
		t.Error("errors of the wrong length gave no error")
	}
}
