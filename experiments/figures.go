package experiments

import (
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/wonderful-matrices/wonderful-matrices-go/plots"
)

// drawPlot draws one figure of a report into dir; it returns the files.
func drawPlot(dir string, p Plot, all []ArmResults) ([]string, error) {
	base := filepath.Join(dir, p.File)
	switch p.Kind {
	case PlotCurves:
		return curves(p, all).Save(base)
	case PlotBars:
		return bars(p, all).Save(base)
	case PlotMeasureLines:
		return measureLines(p, all).Save(base)
	case PlotLabelLines:
		var out []string
		for panel, l := range labelLines(p, all) {
			b := base
			if panel != "" {
				b += "_" + slug(p.Panel) + "-" + slug(panel)
			}
			paths, err := l.Save(b)
			if err != nil {
				return nil, err
			}
			out = append(out, paths...)
		}
		sort.Strings(out)
		return out, nil
	}
	return nil, nil
}

// curves is validation perplexity against step, one line per arm, the
// mean over seeds at each step every seed evaluated.
func curves(p Plot, all []ArmResults) plots.Lines {
	l := plots.Lines{Title: p.Title, XLabel: p.XLabel, YLabel: p.YLabel, LogX: p.LogX, LogY: p.LogY}
	for _, ar := range all {
		sum, n := map[int]float64{}, map[int]int{}
		for _, s := range ar.Seeds {
			for _, m := range s.Metrics {
				if m.ValPPL != nil {
					sum[m.Step] += *m.ValPPL
					n[m.Step]++
				}
			}
		}
		var steps []int
		for st, c := range n {
			if c == len(ar.Seeds) {
				steps = append(steps, st)
			}
		}
		sort.Ints(steps)
		s := plots.Series{Name: ar.Arm.Name}
		for _, st := range steps {
			s.X = append(s.X, float64(st))
			s.Y = append(s.Y, sum[st]/float64(n[st]))
		}
		l.Series = append(l.Series, s)
	}
	return l
}

// bars is one measure per arm beside the paper's.
func bars(p Plot, all []ArmResults) plots.Bars {
	b := plots.Bars{Title: p.Title, YLabel: p.YLabel, PaperGroup: 1}
	measured, paper := plots.BarGroup{Name: "measured"}, plots.BarGroup{Name: "paper"}
	for _, ar := range all {
		b.Categories = append(b.Categories, ar.Arm.Name)
		measured.Values = append(measured.Values, ar.stat(p.Key).Mean)
		paper.Values = append(paper.Values, ar.Arm.paper(p.PaperKey))
	}
	b.Groups = []plots.BarGroup{measured, paper}
	return b
}

// measureLines draws the measures "Prefix@X" of each arm against X.
func measureLines(p Plot, all []ArmResults) plots.Lines {
	l := plots.Lines{Title: p.Title, XLabel: p.XLabel, YLabel: p.YLabel, LogX: p.LogX, LogY: p.LogY}
	for _, ar := range all {
		xs := map[float64]string{}
		for _, s := range ar.Seeds {
			for k := range s.Result.Measures {
				if x, ok := strings.CutPrefix(k, p.Prefix+"@"); ok {
					if v, err := strconv.ParseFloat(x, 64); err == nil {
						xs[v] = k
					}
				}
			}
		}
		var keys []float64
		for x := range xs {
			keys = append(keys, x)
		}
		sort.Float64s(keys)
		s := plots.Series{Name: ar.Arm.Name}
		for _, x := range keys {
			s.X = append(s.X, x)
			s.Y = append(s.Y, ar.stat(xs[x]).Mean)
		}
		l.Series = append(l.Series, s)
	}
	return l
}

// labelLines draws Y against the numeric label X, a line per value of the
// label Series, a figure per value of the label Panel.
func labelLines(p Plot, all []ArmResults) map[string]plots.Lines {
	figs := map[string]plots.Lines{}
	type key struct{ panel, series string }
	pts := map[key][][2]float64{}
	var order []key
	for _, ar := range all {
		x, err := strconv.ParseFloat(ar.Arm.Label(p.X), 64)
		if err != nil {
			continue
		}
		k := key{ar.Arm.Label(p.Panel), ar.Arm.Label(p.Series)}
		if _, ok := pts[k]; !ok {
			order = append(order, k)
		}
		pts[k] = append(pts[k], [2]float64{x, ar.stat(p.Y).Mean})
	}
	for _, k := range order {
		f, ok := figs[k.panel]
		if !ok {
			title := p.Title
			if k.panel != "" {
				title += " (" + p.Panel + " " + k.panel + ")"
			}
			f = plots.Lines{Title: title, XLabel: p.XLabel, YLabel: p.YLabel, LogX: p.LogX, LogY: p.LogY}
		}
		ps := pts[k]
		sort.Slice(ps, func(i, j int) bool { return ps[i][0] < ps[j][0] })
		s := plots.Series{Name: k.series}
		for _, xy := range ps {
			s.X, s.Y = append(s.X, xy[0]), append(s.Y, xy[1])
		}
		f.Series = append(f.Series, s)
		figs[k.panel] = f
	}
	return figs
}
