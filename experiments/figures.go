package experiments

import (
	"math"
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
	case PlotGroupedBars:
		return groupedBars(p, all).Save(base)
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

// saver is a figure of the plots package.
type saver interface {
	Save(base string) ([]string, error)
}

// curves is validation perplexity against step: a line per arm, the mean
// over seeds at each step every seed evaluated, ± the sample standard
// deviation; with Panel, one small panel per value of that label.
func curves(p Plot, all []ArmResults) saver {
	panels := map[string]*plots.Lines{}
	var order []string
	for _, ar := range all {
		key := ar.Arm.Label(p.Panel)
		l, ok := panels[key]
		if !ok {
			t := p.Title
			if p.Panel != "" {
				t = key
			}
			l = &plots.Lines{Title: t, XLabel: p.XLabel, YLabel: p.YLabel, LogX: p.LogX, LogY: p.LogY}
			panels[key] = l
			order = append(order, key)
		}
		vals := map[int][]float64{}
		for _, s := range ar.Seeds {
			for _, m := range s.Metrics {
				if m.ValPPL != nil {
					vals[m.Step] = append(vals[m.Step], *m.ValPPL)
				}
			}
		}
		var steps []int
		for st, vs := range vals {
			if len(vs) == len(ar.Seeds) {
				steps = append(steps, st)
			}
		}
		sort.Ints(steps)
		name := ar.Arm.Name
		if p.Series != "" {
			name = ar.Arm.Label(p.Series)
		}
		s := plots.Series{Name: name}
		for _, st := range steps {
			m := meanSD(vals[st])
			s.X, s.Y, s.Err = append(s.X, float64(st)), append(s.Y, m.Mean), append(s.Err, m.SD)
		}
		l.Series = append(l.Series, s)
	}
	if p.Panel == "" {
		if l, ok := panels[""]; ok {
			return *l
		}
		return plots.Lines{}
	}
	g := plots.Grid{Title: p.Title, Cols: 3, SameY: true}
	for _, k := range order {
		g.Panels = append(g.Panels, *panels[k])
	}
	return g
}

// bars is one measure per arm beside the paper's, ± its spread over seeds;
// with a Reference arm, both as ratios to the reference's, over the arms
// the paper has a number for.
func bars(p Plot, all []ArmResults) plots.Bars {
	b := plots.Bars{Title: p.Title, YLabel: p.YLabel, PaperGroup: 1}
	measured, paper := plots.BarGroup{Name: "measured (mean ± sd)"}, plots.BarGroup{Name: "paper"}
	var ref *ArmResults
	for i := range all {
		if all[i].Arm.Name == p.Reference {
			ref = &all[i]
		}
	}
	for _, ar := range all {
		st := ar.stat(p.Key)
		pv := ar.Arm.paper(p.PaperKey)
		if ref != nil {
			if math.IsNaN(pv) {
				continue
			}
			rs := ref.stat(p.Key)
			r := st.Mean / rs.Mean
			sd := r * math.Hypot(st.SD/st.Mean, rs.SD/rs.Mean)
			if ar.Arm.Name == ref.Arm.Name {
				sd = st.SD / st.Mean
			}
			st = Stat{Mean: r, SD: sd, N: st.N}
			pv /= ref.Arm.paper(p.PaperKey)
		}
		b.Categories = append(b.Categories, ar.Arm.Name)
		measured.Values, measured.Err = append(measured.Values, st.Mean), append(measured.Err, st.SD)
		paper.Values = append(paper.Values, pv)
	}
	if ref != nil {
		b.RefLine = 1
		lo := 1.0
		for _, g := range []plots.BarGroup{measured, paper} {
			for i, v := range g.Values {
				e := 0.0
				if g.Err != nil && !math.IsNaN(g.Err[i]) {
					e = g.Err[i]
				}
				if !math.IsNaN(v) {
					lo = math.Min(lo, v-e)
				}
			}
		}
		b.YMin = math.Max(0, math.Floor((lo-0.05)*20)/20)
	}
	b.Groups = []plots.BarGroup{measured, paper}
	return b
}

// groupedBars is the measure Key in groups by the label X, a bar per value
// of the label Series, ± the spread over seeds.
func groupedBars(p Plot, all []ArmResults) plots.Bars {
	b := plots.Bars{Title: p.Title, YLabel: p.YLabel, PaperGroup: -1}
	xi, si := map[string]int{}, map[string]int{}
	for _, ar := range all {
		x, s := ar.Arm.Label(p.X), ar.Arm.Label(p.Series)
		if _, ok := xi[x]; !ok {
			xi[x] = len(b.Categories)
			b.Categories = append(b.Categories, x)
		}
		if _, ok := si[s]; !ok {
			si[s] = len(b.Groups)
			b.Groups = append(b.Groups, plots.BarGroup{Name: s})
		}
	}
	for i := range b.Groups {
		b.Groups[i].Values = make([]float64, len(b.Categories))
		b.Groups[i].Err = make([]float64, len(b.Categories))
		for j := range b.Categories {
			b.Groups[i].Values[j], b.Groups[i].Err[j] = math.NaN(), math.NaN()
		}
	}
	lo := math.Inf(1)
	for _, ar := range all {
		st := ar.stat(p.Key)
		g := &b.Groups[si[ar.Arm.Label(p.Series)]]
		g.Values[xi[ar.Arm.Label(p.X)]], g.Err[xi[ar.Arm.Label(p.X)]] = st.Mean, st.SD
		if !math.IsNaN(st.Mean) {
			lo = math.Min(lo, st.Mean-st.SD)
		}
	}
	if !math.IsInf(lo, 1) && lo > 0 {
		// Differences between bars of a few percent are the point: start
		// the axis below the lowest bar rather than at zero.
		b.YMin = math.Floor(lo * 0.9)
	}
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
			st := ar.stat(xs[x])
			s.X, s.Y, s.Err = append(s.X, x), append(s.Y, st.Mean), append(s.Err, st.SD)
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
	pts := map[key][][3]float64{}
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
		st := ar.stat(p.Y)
		pts[k] = append(pts[k], [3]float64{x, st.Mean, st.SD})
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
			s.X, s.Y, s.Err = append(s.X, xy[0]), append(s.Y, xy[1]), append(s.Err, xy[2])
		}
		f.Series = append(f.Series, s)
		figs[k.panel] = f
	}
	return figs
}
