package report

import (
	"fmt"
	"image/color"
	"math"
	"sort"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"github.com/msjfarm/msjfarm/results/aggregate"
)

// compareMetric is the metric the report's comparison figure and table
// show (every metric's comparison is in summary_long).
const compareMetric = "mean_response"

// relFloor is the smallest relative difference there is, in percent: the
// ratio of two positive means is above 0, so E[T]/E[T_base] − 1 > −100%.
// A Student-t band over few pairs can reach below it; it is drawn (and
// written to the figure's CSV) stopped there, as a Jain index's interval
// stops at 1.
const relFloor = -100.0

// cmpRow is one row of a facet's comparison table.
type cmpRow struct {
	Series, X, Rel, Verdict, PHolm, Pairs, Gain, Note string
	Class                                             string // the verdict's CSS class
}

// cmpView is a facet's paired comparisons for index.html.
type cmpView struct {
	Baseline string
	Rows     []cmpRow
	// Gain summarises the variance reduction: the median and range over
	// the facet's compared points of unpaired / paired CI half-width.
	Gain string
}

// comparisons builds the facet's comparison table (nil without a
// baseline or when only the baseline is in the facet).
func (f *facet) comparisons(x string) *cmpView {
	v := &cmpView{}
	var gains []float64
	for _, s := range f.series {
		ps := append([]*aggregate.Point(nil), s.pts...)
		sort.SliceStable(ps, func(i, j int) bool { return xValue(ps[i], x) < xValue(ps[j], x) })
		for _, p := range ps {
			c := p.Compare
			if c == nil {
				continue
			}
			v.Baseline = c.Baseline
			if c.IsBaseline || s.tag != "" && s.tag != f.series[0].tag {
				continue
			}
			verdict, note := c.Verdict(compareMetric)
			r := cmpRow{Series: s.label, Verdict: verdict, Note: note, Class: verdict, Rel: "—"}
			if x != categoryAxis { // a category is the series, named already
				r.X = fmtNum(xValue(p, x))
			}
			if m, ok := c.Paired(compareMetric); ok {
				r.Pairs = strconv.Itoa(m.N)
				if verdict != aggregate.CmpUndefined {
					r.Rel = aggregate.FormatRelDiff(m.RelDiff, m.RelDiffHW)
					r.PHolm = strconv.FormatFloat(m.PHolm, 'g', 2, 64)
					if g := m.UnpairedHW / m.DiffHW; finite(g) && m.DiffHW > 0 {
						r.Gain = "×" + strconv.FormatFloat(g, 'f', 1, 64)
						gains = append(gains, g)
					}
				}
			}
			v.Rows = append(v.Rows, r)
		}
	}
	if len(v.Rows) == 0 {
		return nil
	}
	if len(gains) > 0 {
		sort.Float64s(gains)
		v.Gain = fmt.Sprintf("×%.1f (median over %d points; from ×%.1f to ×%.1f)", gains[len(gains)/2], len(gains), gains[0], gains[len(gains)-1])
	}
	return v
}

// comparisonFigure draws, for every series but the baseline, the relative
// difference of the mean response time from the baseline (mean of the
// per-replication ratios − 1, in percent) against x, with its 95% paired
// CI as a band and a zero line: below zero the series is faster. Points
// where the comparison is undefined (a side unstable) are left out (the
// table names them). nil when nothing is defined.
func (f *facet) comparisonFigure(out *files, x, xl string) (*figure, error) {
	var cs []curve
	base := ""
	for i, s := range f.series {
		c := curve{label: s.label, style: s.style(f, i), cats: f.cats}
		for _, p := range s.pts {
			cmp := p.Compare
			if cmp == nil {
				continue
			}
			base = cmp.Baseline
			if cmp.IsBaseline {
				break
			}
			if v, _ := cmp.Verdict(compareMetric); v == aggregate.CmpUndefined {
				continue
			}
			if m, ok := cmp.Paired(compareMetric); ok && finite(m.RelDiff) {
				c.add(f.xOf(i, p, x), 100*m.RelDiff, 100*m.RelDiffHW, false)
			}
		}
		if len(c.x) > 0 {
			c.sortByX()
			cs = append(cs, c)
		}
	}
	if len(cs) == 0 {
		return nil, nil
	}
	yl := "E[T] relative to " + base + " (%)"
	p := newComparisonPlot(xl, yl, cs)
	name := f.prefix + "compare_" + compareMetric
	if err := writeEditable(out, name, xl, yl, []panelData{{cs: cs}}, true); err != nil {
		return nil, err
	}
	if err := render(out, name, [][]*plot.Plot{{p}}, colW, colH, false); err != nil {
		return nil, err
	}
	return &figure{Name: name, Title: "mean response time relative to " + base + " (paired, 95% CI band)"}, nil
}

// newComparisonPlot draws relative differences with CI bands and a zero
// line on a linear axis that always includes 0.
func newComparisonPlot(xl, yl string, cs []curve) *plot.Plot {
	p := plot.New()
	p.X.Label.Text, p.Y.Label.Text = drawable(xl), drawable(yl)
	paperStyle(p)
	grid := plotter.NewGrid()
	grid.Vertical.Color, grid.Horizontal.Color = color.Gray{Y: 225}, color.Gray{Y: 225}
	p.Add(grid)
	xs := distinctX(cs)
	cats := categoriesOf(cs)
	logX := cats == nil && logXAxis(xs)
	if logX {
		cs, _ = log10X(cs, nil)
	}
	lo, hi, xmin, xmax := comparisonRange(cs)
	for _, c := range cs {
		addComparisonCurve(p, c)
	}
	if xmin == xmax {
		xmin, xmax = widenSingle(xmin, logX)
	}
	xpad := 0.03 * (xmax - xmin)
	p.X.Min, p.X.Max = xmin-xpad, xmax+xpad
	if cats != nil {
		p.X.Min, p.X.Max = categoryRange(cats)
	}
	zero, _ := plotter.NewLine(plotter.XYs{{X: p.X.Min, Y: 0}, {X: p.X.Max, Y: 0}})
	zero.Color, zero.Width = color.Gray{Y: 60}, vg.Points(0.8)
	p.Add(zero)
	p.Y.Min, p.Y.Max = lo, hi
	p.Y.Tick.Marker = niceTicks{}
	p.X.Tick.Marker = niceTicks{}
	if logX {
		p.X.Tick.Marker = logTicks{}
	}
	if len(xs) >= 2 && len(xs) <= maxSweptTicks {
		p.X.Tick.Marker = &sweptTicks{values: xs, log: logX}
	}
	if cats != nil {
		p.X.Tick.Marker = categoryTicks(cats)
	}
	// The legend must keep clear of the bands and the zero line too: they
	// count as curves.
	avoid := append(append([]curve(nil), cs...), curve{x: []float64{p.X.Min, p.X.Max}, mean: []float64{0, 0}, hw: []float64{0, 0}, unstable: []bool{false, false}})
	avoid = append(avoid, bandEdges(cs)...)
	placeLegend(p, avoid, p.X.Min, p.X.Max, lo, hi, func(y float64) float64 { return y }, false)
	return p
}

// halfWidth is c's i-th half-width, 0 where it is not finite (a single
// replication: no band).
func (c curve) halfWidth(i int) float64 {
	if h := c.hw[i]; finite(h) {
		return h
	}
	return 0
}

// relBand is the ends of a comparison curve's i-th band, the lower one
// stopped at relFloor.
func (c curve) relBand(i int) (lo, hi float64) {
	h := c.halfWidth(i)
	return math.Max(c.mean[i]-h, relFloor), c.mean[i] + h
}

// comparisonRange is the y range of a comparison figure (its bands and 0,
// padded by 5%) and the x range of its points.
func comparisonRange(cs []curve) (lo, hi, xmin, xmax float64) {
	xmin, xmax = math.Inf(1), math.Inf(-1)
	for _, c := range cs {
		for i, x := range c.x {
			l, h := c.relBand(i)
			lo, hi = math.Min(lo, l), math.Max(hi, h)
			xmin, xmax = math.Min(xmin, x), math.Max(xmax, x)
		}
	}
	if hi-lo == 0 {
		lo, hi = -1, 1
	}
	pad := 0.05 * (hi - lo)
	return lo - pad, hi + pad, xmin, xmax
}

// addComparisonCurve draws c on p: its CI band (an error bar for a single
// point), its line and markers, and its legend entry.
func addComparisonCurve(p *plot.Plot, c curve) {
	col, shape, dash := styleOf(c.style)
	var upper, lower, line plotter.XYs
	for i, x := range c.x {
		l, h := c.relBand(i)
		line = append(line, plotter.XY{X: x, Y: c.mean[i]})
		upper = append(upper, plotter.XY{X: x, Y: h})
		lower = append(lower, plotter.XY{X: x, Y: l})
	}
	if len(line) > 1 && c.cats == nil {
		band := append(plotter.XYs(nil), upper...)
		for i := len(lower) - 1; i >= 0; i-- {
			band = append(band, lower[i])
		}
		if poly, err := plotter.NewPolygon(band); err == nil {
			r, g, b, _ := col.RGBA()
			poly.Color = color.NRGBA{uint8(r >> 8), uint8(g >> 8), uint8(b >> 8), 60}
			poly.LineStyle.Width = 0
			p.Add(poly)
		}
	} else {
		// A single point, or categories (no band across them): an
		// error bar per point.
		var errs plotter.YErrors
		var at plotter.XYs
		for i := range line {
			if h := c.hw[i]; finite(h) {
				at = append(at, line[i])
				errs = append(errs, struct{ Low, High float64 }{c.mean[i] - lower[i].Y, h})
			}
		}
		if eb, err := plotter.NewYErrorBars(errBars{XYs: at, YErrors: errs}); err == nil && len(at) > 0 {
			eb.Color = col
			p.Add(eb)
		}
	}
	l, s, err := plotter.NewLinePoints(line)
	if err != nil {
		return
	}
	l.Color, l.Width, l.Dashes = col, vg.Points(1), dash
	if c.cats != nil {
		l.Color = color.Transparent // categories are not joined
	}
	s.Color, s.Shape, s.Radius = col, shape, vg.Points(2.2)
	p.Add(l, s)
	addLegend(p, c.label, l, s)
}

// bandEdges are the upper and lower edges of cs's bands as curves, for the
// legend to avoid.
func bandEdges(cs []curve) []curve {
	var out []curve
	for _, c := range cs {
		for _, upper := range []bool{false, true} {
			e := curve{x: c.x, hw: make([]float64, len(c.x)), unstable: c.unstable}
			for i := range c.mean {
				l, h := c.relBand(i)
				if upper {
					l = h
				}
				e.mean = append(e.mean, l)
			}
			out = append(out, e)
		}
	}
	return out
}
