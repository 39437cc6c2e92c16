package plots

import (
	"math"

	"github.com/pkg/errors"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
)

// BarGroup is one bar per category (NaN where there is no value).
type BarGroup struct {
	Name   string
	Values []float64
}

// Bars is a grouped bar chart: for each category, a bar per group side by
// side (measured beside paper).
type Bars struct {
	Title, YLabel string
	Categories    []string
	Groups        []BarGroup
	// PaperGroup is the index of the group drawn grey (the paper's), -1
	// for none.
	PaperGroup int
}

// Save writes base+".png" and base+".svg" and returns their paths; no
// finite value at all writes nothing.
func (b Bars) Save(base string) ([]string, error) {
	p := plot.New()
	p.Y.Label.Text = b.YLabel
	p.Legend.Top = true
	// Bars fill about 70% of each category's share of the width.
	w := vg.Points(math.Min(24, 0.7*360/float64(len(b.Categories)*max(1, len(b.Groups)))))
	shown, dropped := 0, 0
	for i, g := range b.Groups {
		if len(g.Values) != len(b.Categories) {
			return nil, errors.Errorf("bars %s: group %q has %d values for %d categories", base, g.Name, len(g.Values), len(b.Categories))
		}
		vals := make(plotter.Values, len(g.Values))
		for j, v := range g.Values {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				if !math.IsNaN(v) {
					dropped++
				}
				continue // a zero-height bar
			}
			vals[j] = v
			shown++
		}
		bc, err := plotter.NewBarChart(vals, w)
		if err != nil {
			return nil, errors.Wrapf(err, "bars %s: group %q", base, g.Name)
		}
		bc.LineStyle.Width = 0
		bc.Color = plotutil.Color(i)
		if i == b.PaperGroup {
			bc.Color = grey
		}
		bc.Offset = w * vg.Length(float64(i)-float64(len(b.Groups)-1)/2)
		p.Add(bc)
		p.Legend.Add(g.Name, bc)
	}
	if shown == 0 {
		return nil, nil
	}
	p.NominalX(b.Categories...)
	p.Y.Min = 0
	p.Y.Max *= 1.25 // room for the legend above the bars
	p.X.Min, p.X.Max = p.X.Min-0.5, p.X.Max+0.5
	p.X.Tick.Label.Rotation = math.Pi / 6
	p.X.Tick.Label.XAlign = -0.9
	p.X.Tick.Label.YAlign = -0.3
	p.Title.Text = title(b.Title, dropped)
	return save(p, base)
}
