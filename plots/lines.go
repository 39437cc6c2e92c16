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
)

// Series is one named line; X and Y have the same length. Err, when not
// nil, is the ± error of each Y (a standard deviation over seeds), drawn
// as a bar.
type Series struct {
	Name string
	X, Y []float64
	Err  []float64
}

// Lines is a line plot of several series.
type Lines struct {
	Title, XLabel, YLabel string
	LogX, LogY            bool
	Series                []Series
}

// Save writes base+".png" and base+".svg" and returns their paths. A figure
// with no point it can show writes nothing and returns no paths.
func (l Lines) Save(base string) ([]string, error) {
	f, err := l.figure()
	if f == nil || err != nil {
		return nil, errors.Wrapf(err, "plot %s", base)
	}
	return f.save(base)
}

// PNG renders the figure as PNG bytes; nil when it has no point to show.
func (l Lines) PNG() ([]byte, error) {
	f, err := l.figure()
	if f == nil || err != nil {
		return nil, err
	}
	return f.png()
}

func (l Lines) figure() (*figure, error) {
	f := &figure{title: l.Title, legend: newLegend(), width: Width, height: Height}
	p, shown, err := l.panel(map[string]int{}, &f.legend)
	if err != nil || shown == 0 {
		return nil, err
	}
	f.panels = [][]*plot.Plot{{p}}
	return f, nil
}

// panel draws the series on one plot, colouring each by its name's index
// in colors (new names are added) and adding new names to the legend; it
// returns the number of points shown.
func (l Lines) panel(colors map[string]int, leg *plot.Legend) (*plot.Plot, int, error) {
	p := plot.New()
	p.X.Label.Text, p.Y.Label.Text = l.XLabel, l.YLabel
	setLog(p, l.LogX, l.LogY)
	dropped, shown := 0, 0
	for _, s := range l.Series {
		if len(s.X) != len(s.Y) || (s.Err != nil && len(s.Err) != len(s.Y)) {
			return nil, 0, errors.Errorf("series %q has %d x, %d y and %d errors", s.Name, len(s.X), len(s.Y), len(s.Err))
		}
		var xys plotter.XYs
		var errs plotter.YErrors
		for j := range s.X {
			if !showable(s.X[j], l.LogX) || !showable(s.Y[j], l.LogY) {
				dropped++
				continue
			}
			xys = append(xys, plotter.XY{X: s.X[j], Y: s.Y[j]})
			e := 0.0
			if s.Err != nil && !math.IsNaN(s.Err[j]) && !math.IsInf(s.Err[j], 0) {
				e = s.Err[j]
				if l.LogY && s.Y[j]-e <= 0 {
					e = 0 // a bar below zero cannot be drawn on a log axis
				}
			}
			errs = append(errs, struct{ Low, High float64 }{e, e})
		}
		if len(xys) == 0 {
			continue
		}
		i, seen := colors[s.Name]
		if !seen {
			i = len(colors)
			colors[s.Name] = i
		}
		line, points, err := plotter.NewLinePoints(xys)
		if err != nil {
			return nil, 0, errors.Wrapf(err, "series %q", s.Name)
		}
		c := seriesColor(i)
		line.Color, points.Color = c, c
		line.Dashes = plotutil.Dashes(i / len(palette))
		points.Shape = plotutil.Shape(i)
		p.Add(line, points)
		if s.Err != nil {
			eb := &plotter.YErrorBars{XYs: xys, YErrors: errs, LineStyle: plotter.DefaultLineStyle, CapWidth: plotter.DefaultCapWidth}
			eb.LineStyle.Color = c
			p.Add(eb)
		}
		if !seen {
			leg.Add(s.Name, line, points)
		}
		shown += len(xys)
	}
	p.Title.Text = title(l.Title, dropped)
	return p, shown, nil
}

// palette is Tableau's ten categorical colours: distinct from each other
// (plotutil's seven put two reds side by side) and readable on white.
var palette = []color.Color{
	color.RGBA{0x1f, 0x77, 0xb4, 0xff}, color.RGBA{0xff, 0x7f, 0x0e, 0xff}, color.RGBA{0x2c, 0xa0, 0x2c, 0xff},
	color.RGBA{0xd6, 0x27, 0x28, 0xff}, color.RGBA{0x94, 0x67, 0xbd, 0xff}, color.RGBA{0x8c, 0x56, 0x4b, 0xff},
	color.RGBA{0xe3, 0x77, 0xc2, 0xff}, color.RGBA{0x7f, 0x7f, 0x7f, 0xff}, color.RGBA{0xbc, 0xbd, 0x22, 0xff},
	color.RGBA{0x17, 0xbe, 0xcf, 0xff},
}

// seriesColor is the i-th colour of the palette, repeated past ten (the
// lines then differ by dashes and marker shapes).
func seriesColor(i int) color.Color { return palette[i%len(palette)] }

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

// Ticks returns the ticks in [min, max]: labels at 1, 2 and 5 times each
// power of ten, or at every multiple when that would leave fewer than
// three labels (a perplexity axis from 5 to 15).
func (logTicks) Ticks(min, max float64) []plot.Tick {
	ticks := func(labelAll bool) ([]plot.Tick, int) {
		var out []plot.Tick
		labelled := 0
		for e := math.Floor(math.Log10(min)); e <= math.Ceil(math.Log10(max)); e++ {
			p := math.Pow(10, e)
			for m := 1; m <= 9; m++ {
				v := float64(m) * p
				if v < min || v > max {
					continue
				}
				t := plot.Tick{Value: v}
				if labelAll || m == 1 || m == 2 || m == 5 {
					t.Label = strconv.FormatFloat(v, 'g', 4, 64)
					labelled++
				}
				out = append(out, t)
			}
		}
		return out, labelled
	}
	out, n := ticks(false)
	if n < 3 {
		out, _ = ticks(true)
	}
	return out
}

func title(t string, dropped int) string {
	if dropped > 0 {
		return fmt.Sprintf("%s (%d points not shown: infinite, NaN or ≤ 0 on a log axis)", t, dropped)
	}
	return t
}

// grey is the colour of the paper's bars.
var grey = color.Gray{Y: 160}
