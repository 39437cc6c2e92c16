package plots

import (
	"math"

	"github.com/pkg/errors"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// BarGroup is one bar per category (NaN where there is no value). Err,
// when not nil, is the ± error of each bar (a standard deviation over
// seeds), drawn as an error bar.
type BarGroup struct {
	Name   string
	Values []float64
	Err    []float64
}

// Bars is a grouped bar chart: for each category, a bar per group side by
// side (measured beside paper, or one bar per variant).
type Bars struct {
	Title, YLabel string
	Categories    []string
	Groups        []BarGroup
	// PaperGroup is the index of the group drawn grey (the paper's), -1
	// for none.
	PaperGroup int
	// RefLine, when not 0, draws a dashed horizontal line at that value
	// (1 on a chart of ratios to a reference arm).
	RefLine float64
	// YMin is the bottom of the y axis (0 by default; bars are clipped
	// there): a chart of ratios near 1 is easier to read from a higher floor.
	YMin float64
}

// Save writes base+".png" and base+".svg" and returns their paths; no
// finite value at all writes nothing.
func (b Bars) Save(base string) ([]string, error) {
	f, err := b.figure()
	if f == nil || err != nil {
		return nil, errors.Wrapf(err, "bars %s", base)
	}
	return f.save(base)
}

// PNG renders the chart as PNG bytes; nil when it has no value to show.
func (b Bars) PNG() ([]byte, error) {
	f, err := b.figure()
	if f == nil || err != nil {
		return nil, err
	}
	return f.png()
}

func (b Bars) figure() (*figure, error) {
	f := &figure{title: b.Title, legend: newLegend(), width: Width, height: Height}
	p := plot.New()
	p.Y.Label.Text = b.YLabel
	// Bars fill about 70% of each category's share of the width.
	w := vg.Points(math.Min(24, 0.7*400/float64(max(1, len(b.Categories)*len(b.Groups)))))
	shown, dropped := 0, 0
	hi := math.Inf(-1)
	for i, g := range b.Groups {
		gv, err := b.groupValues(g)
		if err != nil {
			return nil, err
		}
		shown, dropped, hi = shown+gv.shown, dropped+gv.dropped, math.Max(hi, gv.hi)
		bc, err := plotter.NewBarChart(gv.drawn, w)
		if err != nil {
			return nil, errors.Wrapf(err, "group %q", g.Name)
		}
		bc.LineStyle.Width = 0
		bc.Color = seriesColor(i)
		if i == b.PaperGroup {
			bc.Color = grey
		}
		bc.Offset = w * vg.Length(float64(i)-float64(len(b.Groups)-1)/2)
		p.Add(bc)
		if g.Err != nil {
			p.Add(barErrors{values: gv.vals, errs: gv.errs, offset: bc.Offset, width: w})
		}
		f.legend.Add(g.Name, bc)
	}
	if shown == 0 {
		return nil, nil
	}
	b.finish(p, hi, dropped)
	f.panels = [][]*plot.Plot{{p}}
	return f, nil
}

// groupBars are one group's values as drawn: NaN where there is no value
// (a zero-height bar in drawn), the errors, how many values are shown and
// how many were dropped as infinite, and the top of the highest error bar.
type groupBars struct {
	vals, drawn    plotter.Values
	errs           []float64
	shown, dropped int
	hi             float64
}

func (b Bars) groupValues(g BarGroup) (groupBars, error) {
	if len(g.Values) != len(b.Categories) || (g.Err != nil && len(g.Err) != len(g.Values)) {
		return groupBars{}, errors.Errorf("group %q has %d values and %d errors for %d categories", g.Name, len(g.Values), len(g.Err), len(b.Categories))
	}
	n := len(g.Values)
	gv := groupBars{vals: make(plotter.Values, n), drawn: make(plotter.Values, n), errs: make([]float64, n), hi: math.Inf(-1)}
	for j, v := range g.Values {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			if !math.IsNaN(v) {
				gv.dropped++
			}
			gv.vals[j], gv.errs[j] = math.NaN(), math.NaN()
			continue
		}
		gv.vals[j], gv.drawn[j] = v, v
		if g.Err != nil && !math.IsNaN(g.Err[j]) {
			gv.errs[j] = g.Err[j]
		}
		gv.hi = math.Max(gv.hi, v+gv.errs[j])
		gv.shown++
	}
	return gv, nil
}

// finish adds the reference line, the category axis and the title.
func (b Bars) finish(p *plot.Plot, hi float64, dropped int) {
	if b.RefLine != 0 {
		ref := plotter.NewFunction(func(float64) float64 { return b.RefLine })
		ref.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
		ref.Color = grey
		p.Add(ref)
	}
	p.NominalX(b.Categories...)
	p.Y.Min = b.YMin
	p.Y.Max = math.Max(p.Y.Max, hi) * 1.02
	p.X.Min, p.X.Max = p.X.Min-0.5, p.X.Max+0.5
	// Category names hang below their tick, slanted, ending at the tick.
	p.X.Tick.Label.Rotation = math.Pi / 6
	p.X.Tick.Label.XAlign = draw.XRight
	p.X.Tick.Label.YAlign = draw.YCenter
	p.Title.Text = title(b.Title, dropped)
}

// barErrors draws ± error bars on the bars of one group: at category i,
// offset by the group's offset, from value−err to value+err.
type barErrors struct {
	values, errs  []float64
	offset, width vg.Length
}

// Plot implements plot.Plotter.
func (e barErrors) Plot(c draw.Canvas, p *plot.Plot) {
	trX, trY := p.Transforms(&c)
	sty := plotter.DefaultLineStyle
	cap := e.width / 3
	for i, v := range e.values {
		if math.IsNaN(v) || math.IsNaN(e.errs[i]) || e.errs[i] == 0 {
			continue
		}
		x := trX(float64(i)) + e.offset
		lo, hi := trY(v-e.errs[i]), trY(v+e.errs[i])
		c.StrokeLine2(sty, x, lo, x, hi)
		c.StrokeLine2(sty, x-cap, lo, x+cap, lo)
		c.StrokeLine2(sty, x-cap, hi, x+cap, hi)
	}
}
