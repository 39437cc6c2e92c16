package plots

import (
	"bytes"
	"image/color"
	"io"
	"os"
	"path/filepath"

	"github.com/pkg/errors"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"

	"github.com/wonderful-matrices/wonderful-matrices-go/internal/atomicfile"
)

// figure is one or more panels (a grid of plots, nil for an empty cell), a
// title over all of them, and one legend drawn in a strip to the right of
// the panels, so that it never covers data.
type figure struct {
	title  string
	panels [][]*plot.Plot
	legend plot.Legend
	// width and height of the panels' area; the legend strip adds to it.
	width, height vg.Length
}

// newLegend is a legend for the strip beside the panels.
func newLegend() plot.Legend {
	l := plot.NewLegend()
	l.Top, l.Left = true, false
	return l
}

// legendWidth is the width of the strip the legend needs, 0 for no legend.
func (f *figure) legendWidth() vg.Length {
	// The extent depends on the entries' text only; a tiny canvas places it.
	r := f.legend.Rectangle(draw.New(vgimg.New(1, 1)))
	w := r.Max.X - r.Min.X
	if w <= 0 {
		return 0
	}
	return w + 0.25*vg.Inch
}

// titleHeight is the height of the figure's title line, 0 for none.
func (f *figure) titleHeight() vg.Length {
	if f.title == "" || len(f.panels) == 1 && len(f.panels[0]) == 1 {
		return 0 // a single panel carries the title itself
	}
	return 0.4 * vg.Inch
}

// draw renders the figure on a canvas of the given format ("png", "svg").
func (f *figure) draw(format string) (vg.CanvasWriterTo, error) {
	lw := f.legendWidth()
	th := f.titleHeight()
	W, H := f.width+lw, f.height+th
	var c vg.CanvasWriterTo
	switch format {
	case "png":
		c = vgimg.PngCanvas{Canvas: vgimg.NewWith(vgimg.UseWH(W, H), vgimg.UseDPI(vgimg.DefaultDPI))}
	case "svg":
		c = vgsvg.New(W, H)
	default:
		return nil, errors.Errorf("figure format %q: want png or svg", format)
	}
	dc := draw.New(c)
	area := draw.Crop(dc, 0, -lw, 0, -th)
	rows, cols := len(f.panels), 0
	for _, r := range f.panels {
		cols = max(cols, len(r))
	}
	grid := make([][]*plot.Plot, rows)
	for i := range grid {
		grid[i] = make([]*plot.Plot, cols)
		copy(grid[i], f.panels[i])
	}
	tiles := draw.Tiles{Rows: rows, Cols: cols, PadX: vg.Millimeter * 4, PadY: vg.Millimeter * 4, PadTop: vg.Millimeter * 2, PadBottom: vg.Millimeter * 2, PadLeft: vg.Millimeter * 2, PadRight: vg.Millimeter * 2}
	canvases := plot.Align(grid, tiles, area)
	for i := range grid {
		for j, p := range grid[i] {
			if p != nil {
				p.Draw(canvases[i][j])
			}
		}
	}
	if th > 0 {
		sty := draw.TextStyle{Color: color.Black, Font: font.From(plot.DefaultFont, 14), Handler: plot.DefaultTextHandler, XAlign: draw.XCenter, YAlign: draw.YTop}
		dc.FillText(sty, vg.Point{X: (W - lw) / 2, Y: H - 0.1*vg.Inch}, f.title)
	}
	if lw > 0 {
		strip := draw.Crop(dc, W-lw+0.1*vg.Inch, 0, 0, -th-0.1*vg.Inch)
		f.legend.Draw(strip)
	}
	return c, nil
}

// Size of every single-panel figure's plotting area (the legend strip is
// added to the width).
const (
	Width  = 7 * vg.Inch
	Height = 4.5 * vg.Inch
)

// save writes base+".png" and base+".svg", each atomically.
func (f *figure) save(base string) ([]string, error) {
	if err := os.MkdirAll(filepath.Dir(base), 0o755); err != nil {
		return nil, errors.Wrap(err, "plot")
	}
	var paths []string
	for _, ext := range []string{"png", "svg"} {
		c, err := f.draw(ext)
		if err != nil {
			return nil, errors.Wrapf(err, "plot %s", base)
		}
		path := base + "." + ext
		if err := atomicfile.Write(path, func(w io.Writer) error { _, err := c.WriteTo(w); return err }); err != nil {
			return nil, errors.Wrapf(err, "plot %s", path)
		}
		paths = append(paths, path)
	}
	return paths, nil
}

// png renders the figure as PNG bytes (for a notebook's inline display).
func (f *figure) png() ([]byte, error) {
	c, err := f.draw("png")
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	if _, err := c.WriteTo(&b); err != nil {
		return nil, errors.Wrap(err, "png")
	}
	return b.Bytes(), nil
}
