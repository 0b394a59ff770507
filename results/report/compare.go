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

// cmpRow is one row of a facet's comparison table. Its numeric cells sort
// by their numbers (numCell): Rel by the relative difference (an undefined
// comparison, "—", after every value), where "−73.0% [−78.8%, −56.4%]"
// sorted as text, "+5.0%" before "-80.0%" and "-5.0%" before "-50.0%".
type cmpRow struct {
	Series, Verdict, Note string
	X, Rel, PHolm, Pairs  cell
	Gain                  cell
	Class                 string // the verdict's CSS class
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
			none := numCell("", math.NaN())
			r := cmpRow{Series: s.label, Verdict: verdict, Note: note, Class: verdict,
				Rel: numCell("—", math.NaN()), PHolm: none, Pairs: none, Gain: none}
			if x != categoryAxis { // a category is the series, named already
				r.X = numCell(fmtNum(xValue(p, x)), xValue(p, x))
			}
			if m, ok := c.Paired(compareMetric); ok {
				r.Pairs = numCell(strconv.Itoa(m.N), float64(m.N))
				if verdict != aggregate.CmpUndefined {
					r.Rel = numCell(aggregate.FormatRelDiff(m.RelDiff, m.RelDiffLo, m.RelDiffHi), 100*m.RelDiff)
					r.PHolm = numCell(strconv.FormatFloat(m.PHolm, 'g', 2, 64), m.PHolm)
					if g := m.UnpairedHW / m.DiffHW; finite(g) && m.DiffHW > 0 {
						r.Gain = numCell("×"+strconv.FormatFloat(g, 'f', 1, 64), g)
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
// difference of the mean response time from the baseline (ratio of the
// means − 1, in percent) against x, with its 95% paired CI (Fieller's,
// asymmetric) as a band and a zero line: below zero the series is faster.
// An unbounded end of an interval runs to the edge of the axis. Points
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
				c.addInterval(f.xOf(i, p, x), 100*m.RelDiff, 100*m.RelDiffLo, 100*m.RelDiffHi)
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
	return &figure{Name: name, Title: "mean response time relative to " + base + " (paired, 95% CI band)" + crowdedNote(cs)}, nil
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
		addComparisonCurve(p, c, lo, hi)
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
	avoid = append(avoid, bandEdges(cs, lo, hi)...)
	placeLegend(p, avoid, p.X.Min, p.X.Max, lo, hi, func(y float64) float64 { return y }, false)
	return p
}

// relBand is the ends of a comparison curve's i-th band (its interval
// [lo, hi], or mean ± hw for a curve without explicit ends; the mean where
// there is none), the lower one stopped at relFloor; an unbounded end is
// infinite (clipBand stops it at the axis).
func (c curve) relBand(i int) (lo, hi float64) {
	lo, hi = c.mean[i], c.mean[i]
	switch {
	case c.lo != nil:
		if !math.IsNaN(c.lo[i]) && !math.IsNaN(c.hi[i]) {
			lo, hi = c.lo[i], c.hi[i]
		}
	case finite(c.hw[i]):
		lo, hi = c.mean[i]-c.hw[i], c.mean[i]+c.hw[i]
	}
	return math.Max(lo, relFloor), hi
}

// clipBand is relBand stopped at the y range [ylo, yhi] of the axis.
func (c curve) clipBand(i int, ylo, yhi float64) (lo, hi float64) {
	lo, hi = c.relBand(i)
	return math.Max(lo, ylo), math.Min(hi, yhi)
}

// comparisonRange is the y range of a comparison figure (its bands' finite
// ends, the means and 0, padded by 5%) and the x range of its points.
func comparisonRange(cs []curve) (lo, hi, xmin, xmax float64) {
	xmin, xmax = math.Inf(1), math.Inf(-1)
	for _, c := range cs {
		for i, x := range c.x {
			l, h := c.relBand(i)
			for _, y := range []float64{l, h, c.mean[i]} {
				if finite(y) {
					lo, hi = math.Min(lo, y), math.Max(hi, y)
				}
			}
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
// point) stopped at the y range [ylo, yhi], its line and markers, and its
// legend entry.
func addComparisonCurve(p *plot.Plot, c curve, ylo, yhi float64) {
	col, shape, dash := styleOf(c.style)
	var upper, lower, line plotter.XYs
	for i, x := range c.x {
		l, h := c.clipBand(i, ylo, yhi)
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
		// error bar per point, from its interval's ends (asymmetric:
		// Fieller's), where it has one.
		var errs plotter.YErrors
		var at plotter.XYs
		for i := range line {
			if upper[i].Y > lower[i].Y {
				at = append(at, line[i])
				errs = append(errs, struct{ Low, High float64 }{c.mean[i] - lower[i].Y, upper[i].Y - c.mean[i]})
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

// bandEdges are the upper and lower edges of cs's bands, stopped at the y
// range [ylo, yhi], as curves, for the legend to avoid.
func bandEdges(cs []curve, ylo, yhi float64) []curve {
	var out []curve
	for _, c := range cs {
		for _, upper := range []bool{false, true} {
			e := curve{x: c.x, hw: make([]float64, len(c.x)), unstable: c.unstable}
			for i := range c.mean {
				l, h := c.clipBand(i, ylo, yhi)
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
