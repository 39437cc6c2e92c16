package plots

import (
	"github.com/pkg/errors"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
)

// Grid is small multiples: one line plot per panel, in rows of Cols, with
// one legend for all of them. A series name has the same colour, dash and
// marker in every panel, so that a variant reads the same across panels.
type Grid struct {
	Title  string
	Panels []Lines
	// Cols per row (default 3, at most the number of panels).
	Cols int
	// SameY gives every panel the y range of all of them.
	SameY bool
}

// Save writes base+".png" and base+".svg" and returns their paths; a grid
// with no point to show writes nothing.
func (g Grid) Save(base string) ([]string, error) {
	f, err := g.figure()
	if f == nil || err != nil {
		return nil, errors.Wrapf(err, "plot %s", base)
	}
	return f.save(base)
}

// PNG renders the grid as PNG bytes; nil when it has no point to show.
func (g Grid) PNG() ([]byte, error) {
	f, err := g.figure()
	if f == nil || err != nil {
		return nil, err
	}
	return f.png()
}

func (g Grid) figure() (*figure, error) {
	cols := g.Cols
	if cols <= 0 {
		cols = 3
	}
	cols = min(cols, len(g.Panels))
	if cols == 0 {
		return nil, nil
	}
	rows := (len(g.Panels) + cols - 1) / cols
	f := &figure{title: g.Title, legend: newLegend(), width: vg.Length(cols) * 3.6 * vg.Inch, height: vg.Length(rows) * 3 * vg.Inch}
	f.panels = make([][]*plot.Plot, rows)
	colors := map[string]int{}
	total := 0
	var all []*plot.Plot
	for i, l := range g.Panels {
		p, shown, err := l.panel(colors, &f.legend)
		if err != nil {
			return nil, errors.Wrapf(err, "panel %q", l.Title)
		}
		total += shown
		f.panels[i/cols] = append(f.panels[i/cols], p)
		all = append(all, p)
	}
	if total == 0 {
		return nil, nil
	}
	if g.SameY {
		lo, hi := all[0].Y.Min, all[0].Y.Max
		for _, p := range all {
			lo, hi = min(lo, p.Y.Min), max(hi, p.Y.Max)
		}
		for _, p := range all {
			p.Y.Min, p.Y.Max = lo, hi
		}
	}
	return f, nil
}
