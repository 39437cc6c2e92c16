package plots

import (
	"fmt"
	"image/color"
	"math"
	"strconv"

	"github.com/pkg/errors"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
)

// Series is one named line; X and Y have the same length.
type Series struct {
	Name string
	X, Y []float64
}

// Lines is a line plot of several series.
type Lines struct {
	Title, XLabel, YLabel string
	LogX, LogY            bool
	Series                []Series
}

// Size of every figure.
const (
	Width  = 7 * vg.Inch
	Height = 4.5 * vg.Inch
)

// Save writes base+".png" and base+".svg" and returns their paths. A figure
// with no point it can show writes nothing and returns no paths.
func (l Lines) Save(base string) ([]string, error) {
	p := plot.New()
	p.X.Label.Text, p.Y.Label.Text = l.XLabel, l.YLabel
	setLog(p, l.LogX, l.LogY)
	p.Legend.Top = true
	dropped, shown := 0, 0
	for i, s := range l.Series {
		if len(s.X) != len(s.Y) {
			return nil, errors.Errorf("plot %s: series %q has %d x and %d y", base, s.Name, len(s.X), len(s.Y))
		}
		var xys plotter.XYs
		for j := range s.X {
			if !showable(s.X[j], l.LogX) || !showable(s.Y[j], l.LogY) {
				dropped++
				continue
			}
			xys = append(xys, plotter.XY{X: s.X[j], Y: s.Y[j]})
		}
		if len(xys) == 0 {
			continue
		}
		line, points, err := plotter.NewLinePoints(xys)
		if err != nil {
			return nil, errors.Wrapf(err, "plot %s: series %q", base, s.Name)
		}
		c := plotutil.Color(i)
		line.Color, points.Color = c, c
		line.Dashes = plotutil.Dashes(i / 7)
		points.Shape = plotutil.Shape(i)
		p.Add(line, points)
		p.Legend.Add(s.Name, line, points)
		shown += len(xys)
	}
	if shown == 0 {
		return nil, nil
	}
	p.Title.Text = title(l.Title, dropped)
	return save(p, base)
}

// showable says whether v can be drawn on an axis (log or not).
func showable(v float64, log bool) bool {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return false
	}
	return !log || v > 0
}

func setLog(p *plot.Plot, x, y bool) {
	if x {
		p.X.Scale = plot.LogScale{}
		p.X.Tick.Marker = logTicks{}
	}
	if y {
		p.Y.Scale = plot.LogScale{}
		p.Y.Tick.Marker = logTicks{}
	}
}

// logTicks labels 1, 2 and 5 times each power of ten on a log axis, with
// unlabelled minor ticks between (gonum's LogTicks labels powers of ten
// only, which leaves a perplexity axis from 4 to 30 with a single label).
type logTicks struct{}

// Ticks returns the ticks in [min, max].
func (logTicks) Ticks(min, max float64) []plot.Tick {
	var ticks []plot.Tick
	for e := math.Floor(math.Log10(min)); e <= math.Ceil(math.Log10(max)); e++ {
		p := math.Pow(10, e)
		for m := 1; m <= 9; m++ {
			v := float64(m) * p
			if v < min || v > max {
				continue
			}
			t := plot.Tick{Value: v}
			if m == 1 || m == 2 || m == 5 {
				t.Label = strconv.FormatFloat(v, 'g', 4, 64)
			}
			ticks = append(ticks, t)
		}
	}
	return ticks
}

func title(t string, dropped int) string {
	if dropped > 0 {
		return fmt.Sprintf("%s (%d points not shown: infinite, NaN or ≤ 0 on a log axis)", t, dropped)
	}
	return t
}

// grey is the colour of the paper's bars.
var grey = color.Gray{Y: 160}
