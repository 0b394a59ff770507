package report

import (
	"bytes"
	"cmp"
	"compress/gzip"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"image"
	"image/color"
	"image/png"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"codeberg.org/go-pdf/fpdf"
	"git.sr.ht/~sbinet/gg"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// The PDF figures carry fixed dates and a sorted catalogue, so that a
// report rendered again from the same results is byte-identical (the
// campaign's date is on the page, not in the figures).
func init() {
	date := time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)
	fpdf.SetDefaultCreationDate(date)
	fpdf.SetDefaultModificationDate(date)
	fpdf.SetDefaultCatalogSort(true)
}

// palette is Okabe and Ito's colour-blind-safe palette without its yellow
// (too pale for a line on white): distinguishable under the common colour
// vision deficiencies and in greyscale by lightness. Past 7 series the
// colour repeats, but never with the same marker (8 shapes: 7 × 8 = 56
// distinct pairs) and, from the 8th series on, with another dash pattern:
// series i has colour i mod 7, shape i mod 8 and dash ⌊i/7⌋ mod 4.
var palette = []color.Color{
	color.RGBA{0, 114, 178, 255},   // blue
	color.RGBA{213, 94, 0, 255},    // vermillion
	color.RGBA{0, 158, 115, 255},   // bluish green
	color.RGBA{204, 121, 167, 255}, // reddish purple
	color.RGBA{230, 159, 0, 255},   // orange
	color.RGBA{86, 180, 233, 255},  // sky blue
	color.RGBA{0, 0, 0, 255},       // black
}

// shapes are the glyphs of stable points: filled and open circle, square,
// diamond and pentagon, each visible at print size (no thin + or ×).
// Upward triangles are kept out: the filled one (PyramidGlyph) marks
// unstable points, open ones a CI cut at the axis.
// (gonum's SquareGlyph is the outlined square, BoxGlyph the filled one.)
var shapes = []draw.GlyphDrawer{draw.CircleGlyph{}, draw.SquareGlyph{}, polyGlyph{sides: 4, filled: true},
	draw.RingGlyph{}, draw.BoxGlyph{}, polyGlyph{sides: 4}, polyGlyph{sides: 5, filled: true}, polyGlyph{sides: 5}}

var dashes = [][]vg.Length{nil, {vg.Points(5), vg.Points(2)}, {vg.Points(1.5), vg.Points(1.5)},
	{vg.Points(5), vg.Points(1.5), vg.Points(1.5), vg.Points(1.5)}}

// polyGlyph is a regular polygon standing on a vertex (a diamond for 4
// sides), filled or outlined.
type polyGlyph struct {
	sides  int
	filled bool
}

// DrawGlyph draws the polygon of circumradius 1.15 × the glyph radius (a
// diamond of the same area as the square).
func (g polyGlyph) DrawGlyph(c *draw.Canvas, sty draw.GlyphStyle, pt vg.Point) {
	r := 1.15 * sty.Radius
	var p vg.Path
	for i := 0; i < g.sides; i++ {
		a := math.Pi/2 + 2*math.Pi*float64(i)/float64(g.sides)
		q := vg.Point{X: pt.X + r*vg.Length(math.Cos(a)), Y: pt.Y + r*vg.Length(math.Sin(a))}
		if i == 0 {
			p.Move(q)
		} else {
			p.Line(q)
		}
	}
	p.Close()
	if g.filled {
		c.SetColor(sty.Color)
		c.Fill(p)
		return
	}
	c.SetLineStyle(draw.LineStyle{Color: sty.Color, Width: vg.Points(0.9)})
	c.Stroke(p)
}

// unstableGlyph marks an unstable point: a filled upward triangle pinned
// to the top edge of the plot ("off scale, diverging"), never on the line.
var unstableGlyph = draw.PyramidGlyph{}

// clipGlyph marks the end of a confidence interval cut at the edge of the
// plotted range (on a log axis, an interval reaching zero or below is
// always cut at the floor): an open triangle pointing past the edge, its
// tip on the edge, so that a bar that stops at the axis is never read as
// an interval that ends there.
// In a legend (centered) the triangle is centred on the entry instead.
//
// With pair (the legend's entry) it is ▽ and △ side by side, centred: an
// interval may be cut at the bottom or the top, and a legend showing ▽
// alone left an open △ at the top to be read as the filled ▲ of an
// unstable point.
type clipGlyph struct{ down, centered, pair bool }

// DrawGlyph draws the open triangle.
func (g clipGlyph) DrawGlyph(c *draw.Canvas, sty draw.GlyphStyle, pt vg.Point) {
	if g.pair {
		d := sty.Radius // the two bases meet: ±2r, inside the 16 pt thumbnail
		clipGlyph{down: true, centered: true}.DrawGlyph(c, sty, vg.Point{X: pt.X - d, Y: pt.Y})
		clipGlyph{centered: true}.DrawGlyph(c, sty, vg.Point{X: pt.X + d, Y: pt.Y})
		return
	}
	c.SetLineStyle(draw.LineStyle{Color: sty.Color, Width: vg.Points(0.9)})
	r := sty.Radius
	dir := vg.Length(1)
	if g.down {
		dir = -1
	}
	// Tip at pt, base 1.6 r back inside the plot.
	if g.centered {
		pt.Y += dir * 0.8 * r
	}
	var p vg.Path
	p.Move(vg.Point{X: pt.X, Y: pt.Y})
	p.Line(vg.Point{X: pt.X - r, Y: pt.Y - dir*1.6*r})
	p.Line(vg.Point{X: pt.X + r, Y: pt.Y - dir*1.6*r})
	p.Close()
	c.Stroke(p)
}

func styleOf(i int) (color.Color, draw.GlyphDrawer, []vg.Length) {
	return palette[i%len(palette)], shapes[i%len(shapes)], dashes[(i/len(palette))%len(dashes)]
}

// Figure sizes: a figure is drawn at a column's width (3.3 in, the
// default, what index.html shows) and at a page's (6.9 in: name_page.pdf
// only), with the text at print size in both: 9 pt axis labels, 8 pt
// tick labels, legend and panel titles. There is no title inside a figure:
// the caption carries it.
const (
	colW  = 3.3 * vg.Inch
	colH  = 2.4 * vg.Inch
	pageW = 6.9 * vg.Inch
	pageH = 2.9 * vg.Inch
	// panW × panH is one panel of a grid: three across a page.
	panW = 2.3 * vg.Inch
	panH = 1.9 * vg.Inch

	labelPt  = 9
	tickPt   = 8
	legendPt = 8
)

// gridTile is the size of a tile of a grid of panels, so that the grid is
// a column's width or a page's: a column figure's (colW × colH) for a
// single panel, half a page's width for two side by side, panW × panH for
// three or more (three across a page; at most gridRows rows, a figure of
// more panels being split into several files: figureParts). A per-class figure of a
// two-class workload (one-or-all) was 4.6 in wide, and one of a single
// class 2.3 in: at print size at neither \columnwidth nor \textwidth.
// shared is render's: a single panel keeps its legend inside, as a
// column figure does.
func gridTile(rows [][]*plot.Plot) (w, h vg.Length, shared bool) {
	cols := 0
	for _, r := range rows {
		cols = max(cols, len(r))
	}
	switch {
	case len(rows) == 1 && cols == 1:
		return colW, colH, false
	case cols == 2:
		return pageW / 2, panH, true
	}
	return panW, panH, true
}

// curve is one line of a plot: a series (policy and parameters) or, in the
// phase panels, one phase.
type curve struct {
	label    string
	style    int
	x        []float64
	mean, hw []float64
	unstable []bool
	// bound is the largest value the quantity can take (1 for a
	// probability, a utilisation or Jain's index; +Inf or 0 for none):
	// intervals and the axis are clipped to it.
	bound float64
	// cats, when set, are the names of a categorical x axis (a campaign
	// with no swept scenario axis, a replayed trace: categoryAxis): x is
	// 1 + the index of a name, the points are not joined by lines, and
	// the axis is labelled with the names.
	cats []string
	// lo and hi, when not nil, are the ends of the intervals (a
	// comparison curve's Fieller interval: asymmetric about the mean, an
	// end infinite where it is unbounded, NaN for none); hw is then NaN.
	lo, hi []float64
}

func (c *curve) add(x, mean, hw float64, unstable bool) {
	c.x = append(c.x, x)
	c.mean = append(c.mean, mean)
	c.hw = append(c.hw, hw)
	c.unstable = append(c.unstable, unstable)
}

// addInterval adds a point whose interval is [lo, hi] (a comparison
// curve's: every point of c must be added so).
func (c *curve) addInterval(x, mean, lo, hi float64) {
	c.add(x, mean, math.NaN(), false)
	c.lo = append(c.lo, lo)
	c.hi = append(c.hi, hi)
}

// sortByX orders the points of c by x.
func (c *curve) sortByX() {
	idx := make([]int, len(c.x))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return c.x[idx[a]] < c.x[idx[b]] })
	var d curve
	d.label, d.style, d.bound, d.cats = c.label, c.style, c.bound, c.cats
	for _, i := range idx {
		d.add(c.x[i], c.mean[i], c.hw[i], c.unstable[i])
		if c.lo != nil {
			d.lo, d.hi = append(d.lo, c.lo[i]), append(d.hi, c.hi[i])
		}
	}
	*c = d
}

func finite(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }

// maxMarks is the most points of one curve a figure draws. A figure is
// 3.3 in (a page's 6.9 in) wide: past a few hundred points a curve's
// markers and error bars merge into a band, and the vector files grow
// with every one (a curve of 10^5 points, one per load of a 10^5-point
// sweep, made SVG and PDF files of tens of MB each, and the report of
// that campaign held over 1 GB while drawing them).
const maxMarks = 1000

// thinned is c as drawn when it has more than maxMarks points (c itself
// otherwise): its points, in order, split into maxMarks/2 runs of equal
// count, each drawn by its lowest and its highest finite mean (in x
// order, each with its own interval) and its first unstable point — at
// most 3·maxMarks/2 points — so that the curve keeps its envelope, its
// extremes and where it goes unstable. The figure's data file and
// script keep every point.
func (c curve) thinned() curve {
	n := len(c.x)
	if n <= maxMarks {
		return c
	}
	runs := maxMarks / 2
	d := curve{label: c.label, style: c.style, bound: c.bound, cats: c.cats}
	for r := range runs {
		lo, hi := r*n/runs, (r+1)*n/runs
		imin, imax, iu := -1, -1, -1
		for i := lo; i < hi; i++ {
			switch {
			case c.unstable[i]:
				if iu < 0 {
					iu = i
				}
			case finite(c.mean[i]):
				if imin < 0 || c.mean[i] < c.mean[imin] {
					imin = i
				}
				if imax < 0 || c.mean[i] > c.mean[imax] {
					imax = i
				}
			}
		}
		keep := []int{imin, imax, iu}
		sort.Ints(keep)
		last := -1
		for _, i := range keep {
			if i >= 0 && i != last {
				d.add(c.x[i], c.mean[i], c.hw[i], c.unstable[i])
				last = i
			}
		}
	}
	return d
}

// yRange chooses the y axis: log when every stable mean is positive and they
// span at least two decades (as the papers plot response times near
// saturation), or more than a decade and a linear axis would squash
// most of them into its bottom tenth (one policy blowing up near
// saturation: squashed), linear otherwise. The range covers the stable means and their
// confidence intervals, but an interval is not allowed to stretch the axis
// beyond one span of the means (linear) or one decade (log): a wild interval
// from two replications would otherwise flatten every curve. Bars are
// clipped to the range. ok is false if there is nothing finite to plot.
func yRange(cs []curve) (lo, hi float64, logScale, ok bool) {
	e, stable := meanExtent(cs)
	if math.IsInf(e.mlo, 1) {
		return 0, 1, false, false
	}
	if e.positive && (e.mhi/e.mlo >= 100 || e.mhi/e.mlo >= 10 && squashed(cs, stable, e.mlo, e.mhi)) {
		lo, hi = e.logRange()
		return lo, hi, true, true
	}
	lo, hi = e.linearRange(medianHW(cs, stable))
	return lo, hi, false, true
}

// meanSpan is what yRange ranges over: the means [mlo, mhi], their
// intervals' ends [blo, bhi], and whether every mean is positive.
type meanSpan struct {
	mlo, mhi, blo, bhi float64
	positive           bool
}

// meanExtent is the meanSpan of the stable means, or of the unstable ones
// when none is stable (stable false); mlo is +Inf when nothing is finite.
func meanExtent(cs []curve) (e meanSpan, stable bool) {
	scan := func(unstable bool) {
		e = meanSpan{mlo: math.Inf(1), mhi: math.Inf(-1), blo: math.Inf(1), bhi: math.Inf(-1), positive: true}
		for _, c := range cs {
			for i, m := range c.mean {
				if c.unstable[i] != unstable || !finite(m) {
					continue
				}
				e.mlo, e.mhi = math.Min(e.mlo, m), math.Max(e.mhi, m)
				e.positive = e.positive && m > 0
				if h := c.hw[i]; finite(h) {
					e.blo, e.bhi = math.Min(e.blo, m-h), math.Max(e.bhi, m+h)
				}
			}
		}
	}
	scan(false)
	if !math.IsInf(e.mlo, 1) {
		return e, true
	}
	scan(true) // nothing stable: range over the unstable values
	return e, false
}

// logRange is a log axis's range: the means, stretched by their intervals
// by at most a decade each way, padded by 4% of the span's logarithm.
func (e meanSpan) logRange() (lo, hi float64) {
	lo, hi = e.mlo, e.mhi
	if e.blo > 0 {
		lo = math.Max(math.Min(lo, e.blo), e.mlo/10)
	}
	if finite(e.bhi) {
		hi = math.Min(math.Max(hi, e.bhi), e.mhi*10)
	}
	pad := math.Pow(hi/lo, 0.04)
	return lo / pad, hi * pad
}

// linearRange is a linear axis's range, given the typical (median)
// half-width of the intervals.
func (e meanSpan) linearRange(medHW float64) (lo, hi float64) {
	mlo, mhi := e.mlo, e.mhi
	span := mhi - mlo
	if span <= 1e-6*math.Max(math.Abs(mlo), math.Abs(mhi)) { // constant up to rounding
		span = math.Max(math.Abs(mhi)*0.1, 1e-9)
	}
	// Intervals may stretch the axis by one span of the means, or by the
	// typical (median) half-width where that is wider: means that differ
	// by less than their intervals (a utilisation equal to the load up to
	// noise) show those intervals whole instead of cut at both ends, while
	// one wild interval still cannot flatten the curves.
	reach := math.Max(span, medHW)
	lo, hi = mlo, mhi
	if finite(e.blo) {
		lo = math.Max(math.Min(lo, e.blo), mlo-reach)
		hi = math.Min(math.Max(hi, e.bhi), mhi+reach)
	}
	if mlo >= 0 && lo < 0 { // every metric here is non-negative
		lo = 0
	}
	if hi-lo < span { // constant means with zero-width intervals
		lo, hi = math.Min(lo, mlo-span/2), math.Max(hi, mhi+span/2)
	}
	pad := 0.05 * (hi - lo)
	lo, hi = lo-pad, hi+pad
	if mlo >= 0 && lo < 0 {
		lo = 0
	}
	return lo, hi
}

// squashed says whether the median of the means yRange ranges over lies
// in the bottom tenth of [mlo, mhi].
func squashed(cs []curve, stable bool, mlo, mhi float64) bool {
	var ms []float64
	for _, c := range cs {
		for i, m := range c.mean {
			if c.unstable[i] != stable && finite(m) {
				ms = append(ms, m)
			}
		}
	}
	sort.Float64s(ms)
	return len(ms) > 0 && ms[len(ms)/2] < mlo+0.1*(mhi-mlo)
}

// medianHW is the median finite half-width of the points of cs whose
// stability is stable (0 for none).
func medianHW(cs []curve, stable bool) float64 {
	var hs []float64
	for _, c := range cs {
		for i, h := range c.hw {
			if c.unstable[i] != stable && finite(c.mean[i]) && finite(h) && h > 0 {
				hs = append(hs, h)
			}
		}
	}
	if len(hs) == 0 {
		return 0
	}
	sort.Float64s(hs)
	return hs[(len(hs)-1)/2] // the lower median: of two, the tamer
}

// errBars is the plotter.YErrorBars input with clipped bars.
type errBars struct {
	plotter.XYs
	plotter.YErrors
}

// vline is a vertical line at a known limit on the x axis: the
// work-conserving bound (offered load 1, style < 0: thin dashed grey) or a
// policy's measured saturation rate (style: the series' palette index, so
// the line reads as that policy's). A reader then sees at a glance how far
// below its limit each curve turns upward.
type vline struct {
	x     float64
	label string
	style int
}

// vlineReach is how far past the plotted points (as a fraction of their x
// span) a limit may lie and still be drawn, the axis being stretched to
// show it: a limit just past the last swept rate is the point of the
// figure, one far beyond would squash the curves into a corner.
const vlineReach = 0.15

// visibleLines returns the lines of ls worth drawing against points
// spanning [xmin, xmax]: those within it or within vlineReach of its ends.
func visibleLines(ls []vline, xmin, xmax float64) []vline {
	span := xmax - xmin
	if span <= 0 {
		span = math.Max(math.Abs(xmax)*0.1, 0.5)
	}
	var out []vline
	for _, l := range ls {
		if finite(l.x) && l.x >= xmin-vlineReach*span && l.x <= xmax+vlineReach*span {
			out = append(out, l)
		}
	}
	return out
}

// widenSingle is the x range around a single x value: half a unit either
// side, or a tenth of the value if that is more; but (a linear axis of a
// positive quantity, which every swept axis is) no further down than half
// the value: a lone point at load 0.3 had an axis from −0.2, a negative
// load. On a log axis x is log10 of the value, and may be negative.
func widenSingle(x float64, logX bool) (lo, hi float64) {
	d := math.Max(math.Abs(x)*0.1, 0.5)
	if !logX && x > 0 && x-d < 0 {
		d = x / 2
	}
	return x - d, x + d
}

// paperStyle sets p's text to print size (labelPt, tickPt, legendPt) and
// its legend's layout: every figure of the report uses it.
func paperStyle(p *plot.Plot) {
	p.Title.TextStyle.Font.Size = vg.Points(legendPt)
	p.Title.Padding = vg.Points(2)
	p.X.Label.TextStyle.Font.Size = vg.Points(labelPt)
	p.Y.Label.TextStyle.Font.Size = vg.Points(labelPt)
	p.X.Label.Padding, p.Y.Label.Padding = vg.Points(1), vg.Points(1)
	p.X.Tick.Label.Font.Size = vg.Points(tickPt)
	p.Y.Tick.Label.Font.Size = vg.Points(tickPt)
	p.Legend.Top, p.Legend.Left = true, true
	p.Legend.TextStyle.Font.Size = vg.Points(legendPt)
	p.Legend.ThumbnailWidth = vg.Points(16)
	p.Legend.Padding = vg.Points(0.5)
	p.Legend.XOffs, p.Legend.YOffs = vg.Points(3), vg.Points(-3)
}

// newPlot draws curves against x. Unstable points are not on the lines:
// each is a filled triangle in the series colour at the top edge of the
// plot; a legend entry explains it. lines are vertical lines at known
// limits, drawn when near the plotted range (visibleLines).
func newPlot(title, xLabel, yLabel string, cs []curve, legend bool, lines ...vline) *plot.Plot {
	p := plot.New()
	p.Title.Text = drawable(title) // a panel's name in a grid; "" for a figure of its own
	p.X.Label.Text = drawable(xLabel)
	p.Y.Label.Text = drawable(yLabel)
	paperStyle(p)
	grid := plotter.NewGrid()
	grid.Vertical.Color = color.Gray{Y: 225}
	grid.Horizontal.Color = color.Gray{Y: 225}
	p.Add(grid)

	xs := distinctX(cs)
	cats := categoriesOf(cs)
	logX := cats == nil && logXAxis(xs)
	if logX {
		cs, lines = log10X(cs, lines)
	}
	if cats != nil {
		lines = nil // no limit is a category
	}
	xmin, xmax, anyUnstable := extent(cs)
	ax, ok := newYAxis(cs, anyUnstable)
	if !ok || math.IsInf(xmin, 1) {
		p.Title.Text = strings.TrimSpace(p.Title.Text + " (no data)")
		return p
	}
	// Dodge: shift series apart by 0.5% of the x span each, so that
	// overlapping curves (e.g. MSFQ ℓ=0, which is MSF) and their error bars
	// stay visible. The shift is far below the spacing of a sweep's points.
	dodge := 0.005 * (xmax - xmin)
	if cats != nil {
		dodge = 0 // a curve per category, or spread by its maker (phaseFigure)
	}
	anyClipped := false
	for ci, c := range cs {
		shift := (float64(ci) - float64(len(cs)-1)/2) * dodge
		if addCurve(p, c, ax, shift, legend) {
			anyClipped = true
		}
	}
	if legend {
		markerLegend(p, ax, xmin, anyUnstable, anyClipped)
	}
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
	p.Y.Tick.Marker = niceTicks{}
	if ax.log {
		p.Y.Tick.Marker = logTicks{}
	}
	p.Y.Min, p.Y.Max = ax.tr(ax.lo), ax.tr(ax.hi)
	// The limit lines are data to keep the legend off, as the curves are.
	avoid := cs
	for _, vl := range visibleLines(lines, xmin, xmax) {
		avoid = append(avoid[:len(avoid):len(avoid)], curve{x: []float64{vl.x, vl.x}, mean: []float64{ax.lo, ax.hi},
			hw: []float64{0, 0}, unstable: []bool{false, false}})
	}
	xmin, xmax = addLimitLines(p, lines, ax, xmin, xmax, legend)
	if xmin == xmax {
		xmin, xmax = widenSingle(xmin, logX)
	}
	pad := 0.03 * (xmax - xmin)
	p.X.Min, p.X.Max = xmin-pad, xmax+pad
	if cats != nil {
		p.X.Min, p.X.Max = categoryRange(cats)
	}
	// Last, when the legend has all its entries: its corner.
	placeLegend(p, avoid, p.X.Min, p.X.Max, ax.tr(ax.lo), ax.tr(ax.hi), ax.tr, anyUnstable)
	if anyUnstable && p.Legend.Top { // keep the legend below the row of markers
		p.Legend.YOffs -= vg.Points(10)
	}
	return p
}

// logXAxis says whether swept x values are drawn on a log axis: when
// they are positive, span a decade or more and are spaced more evenly in
// log x than in x (the ratio of the largest gap to the smallest is
// smaller), as a servers axis k = 32, 128, 256, 2048 is and an
// arrival-rate grid (λ = 0.1, 0.2, …, 2, or 1, 2, 4, 6, 7, 7.5, 7.7
// thickening towards saturation) is not.
func logXAxis(xs []float64) bool {
	if len(xs) < 3 || xs[0] <= 0 || xs[len(xs)-1]/xs[0] < 10 {
		return false
	}
	unevenness := func(f func(float64) float64) float64 {
		lo, hi := math.Inf(1), 0.0
		for i := 1; i < len(xs); i++ {
			g := f(xs[i]) - f(xs[i-1])
			lo, hi = math.Min(lo, g), math.Max(hi, g)
		}
		return hi / lo
	}
	return unevenness(math.Log10) < unevenness(func(x float64) float64 { return x })
}

// log10X is cs and lines with x replaced by log10 x: a log x axis is
// drawn as a linear axis of log10 x, as the y axis is (newYAxis).
func log10X(cs []curve, lines []vline) ([]curve, []vline) {
	out := make([]curve, len(cs))
	for i, c := range cs {
		c.x = append([]float64(nil), c.x...)
		for j, x := range c.x {
			c.x[j] = math.Log10(x) // NaN for x ≤ 0: not drawn
		}
		out[i] = c
	}
	var ls []vline
	for _, l := range lines {
		if l.x > 0 {
			l.x = math.Log10(l.x)
			ls = append(ls, l)
		}
	}
	return out, ls
}

// extent is the x range of the drawable points of cs and whether any is
// unstable.
func extent(cs []curve) (xmin, xmax float64, anyUnstable bool) {
	xmin, xmax = math.Inf(1), math.Inf(-1)
	for _, c := range cs {
		for i, x := range c.x {
			if finite(x) && (finite(c.mean[i]) || c.unstable[i]) {
				xmin, xmax = math.Min(xmin, x), math.Max(xmax, x)
				anyUnstable = anyUnstable || c.unstable[i]
			}
		}
	}
	return xmin, xmax, anyUnstable
}

// yAxis is a plot's y range [lo, hi] (in data units), its scale and the
// largest value the quantity can take (+Inf for none).
type yAxis struct {
	lo, hi, bound float64
	log           bool
}

// newYAxis is yRange's axis stopped just above a bounded quantity's
// bound, with head room for the unstable markers. A log axis is drawn as
// a linear axis of log10(y) with decade ticks (logTicks): gonum's LogScale
// mis-places the y label's glyph box (at the arithmetic mid-range, near
// the top on a log axis), which pushes the plot down under a band of
// empty space.
func newYAxis(cs []curve, anyUnstable bool) (yAxis, bool) {
	lo, hi, logY, ok := yRange(cs)
	ax := yAxis{lo: lo, hi: hi, log: logY, bound: math.Inf(1)}
	for _, c := range cs {
		if c.bound > 0 {
			ax.bound = math.Min(ax.bound, c.bound)
		}
	}
	grow := func(f float64) {
		if ax.log {
			ax.hi *= math.Pow(ax.hi/ax.lo, f)
		} else {
			ax.hi += f * (ax.hi - ax.lo)
		}
	}
	if finite(ax.bound) && ax.hi > ax.bound {
		ax.hi = ax.bound
		grow(0.03)
	}
	if anyUnstable {
		grow(0.06)
	}
	return ax, ok
}

// tr maps a value to the plot's y coordinate (log10 on a log axis).
func (ax yAxis) tr(y float64) float64 {
	if ax.log {
		return math.Log10(y)
	}
	return y
}

// clip is tr of y clipped to the axis.
func (ax yAxis) clip(y float64) float64 { return ax.tr(math.Min(math.Max(y, ax.lo), ax.hi)) }

// curveMarks are the marks of one curve: the line's points, the error
// bars, the unstable points' markers at the top and the ends of the
// intervals cut at the axis.
type curveMarks struct {
	pts                 plotter.XYs
	bars                errBars
	top, clipLo, clipHi plotter.XYs
}

// marks places c's points, shifted by shift along x.
func (ax yAxis) marks(c curve, shift float64) curveMarks {
	var m curveMarks
	for i, x := range c.x {
		mean := c.mean[i]
		x += shift
		switch {
		case !finite(x):
		case c.unstable[i]:
			m.top = append(m.top, plotter.XY{X: x, Y: ax.tr(ax.hi)})
		case finite(mean) && (!ax.log || mean > 0):
			m.pts = append(m.pts, plotter.XY{X: x, Y: ax.tr(mean)})
			if h := c.hw[i]; h > 0 && finite(h) {
				// An infinite half-width (one replication) is no interval:
				// drawn, it was a bar from the floor to the top, cut at both.
				ax.interval(&m, x, mean, h)
			}
		}
	}
	return m
}

// interval adds the error bar of mean ± h at x: on a log axis the
// delta-method interval of log m, m·exp(±hw/m) (positive, and symmetric
// on the axis as drawn), stopped at the bound; an end past the axis is
// marked.
func (ax yAxis) interval(m *curveMarks, x, mean, h float64) {
	l, u := mean-h, mean+h
	if ax.log {
		l, u = mean*math.Exp(-h/mean), mean*math.Exp(h/mean)
	}
	u = math.Min(u, ax.bound)
	if !ax.log && ax.lo == 0 {
		// A linear axis from 0 is a non-negative quantity's (yRange):
		// an interval below 0 stops at that floor as one above a bound
		// stops at the bound, unmarked, not "cut at the axis".
		l = math.Max(l, 0)
	}
	y := ax.clip(mean)
	m.bars.XYs = append(m.bars.XYs, plotter.XY{X: x, Y: y})
	m.bars.YErrors = append(m.bars.YErrors, struct{ Low, High float64 }{y - ax.clip(l), ax.clip(u) - y})
	if l < ax.lo {
		m.clipLo = append(m.clipLo, plotter.XY{X: x, Y: ax.tr(ax.lo)})
	}
	if u > ax.hi {
		m.clipHi = append(m.clipHi, plotter.XY{X: x, Y: ax.tr(ax.hi)})
	}
}

// addCurve draws c on p in its style (line, markers, error bars, cut
// marks, unstable markers) with its legend entry; clipped reports a cut
// interval.
func addCurve(p *plot.Plot, c curve, ax yAxis, shift float64, legend bool) (clipped bool) {
	col, shape, dash := styleOf(c.style)
	m := ax.marks(c.thinned(), shift)
	var thumbs []plot.Thumbnailer
	if len(m.pts) > 0 {
		if l, s, err := plotter.NewLinePoints(m.pts); err == nil {
			l.Color, l.Width, l.Dashes = col, vg.Points(1), dash
			if c.cats != nil {
				// Categories are not a scale: no line joins them.
				l.Color = color.Transparent
			}
			s.Color, s.Shape, s.Radius = col, shape, vg.Points(2.2)
			p.Add(l, s)
			thumbs = append(thumbs, l, s)
		}
	}
	if len(m.bars.XYs) > 0 {
		if bars, err := plotter.NewYErrorBars(m.bars); err == nil {
			bars.Color, bars.Width, bars.CapWidth = col, vg.Points(0.7), vg.Points(3.5)
			p.Add(bars)
		}
	}
	for _, cl := range []struct {
		pts  plotter.XYs
		down bool
	}{{m.clipLo, true}, {m.clipHi, false}} {
		if len(cl.pts) == 0 {
			continue
		}
		if s, err := plotter.NewScatter(cl.pts); err == nil {
			s.Color, s.Shape, s.Radius = col, clipGlyph{down: cl.down}, vg.Points(3)
			p.Add(s)
			clipped = true
		}
	}
	if len(m.top) > 0 {
		if s, err := plotter.NewScatter(m.top); err == nil {
			s.Color, s.Shape, s.Radius = col, unstableGlyph, vg.Points(3)
			p.Add(s)
			if len(thumbs) == 0 {
				thumbs = append(thumbs, s)
			}
		}
	}
	if legend && len(thumbs) > 0 {
		addLegend(p, c.label, thumbs...)
	}
	return clipped
}

// markerLegend explains the unstable and cut-interval markers in p's
// legend, when present.
func markerLegend(p *plot.Plot, ax yAxis, xmin float64, anyUnstable, anyClipped bool) {
	if anyUnstable {
		s, _ := plotter.NewScatter(plotter.XYs{{X: xmin, Y: ax.tr(ax.hi)}})
		s.Color, s.Shape, s.Radius = color.Black, unstableGlyph, vg.Points(3)
		addLegend(p, "unstable (off scale)", s)
	}
	if anyClipped {
		s, _ := plotter.NewScatter(plotter.XYs{{X: xmin, Y: ax.tr(ax.lo)}})
		s.Color, s.Shape, s.Radius = color.Black, clipGlyph{pair: true}, vg.Points(3)
		addLegend(p, "CI cut at the axis", s)
	}
}

// addLimitLines draws the visible lines of known limits (grey for the
// work-conserving bound, a policy's colour for its λmax) and returns the
// x range stretched to show them.
func addLimitLines(p *plot.Plot, lines []vline, ax yAxis, xmin, xmax float64, legend bool) (float64, float64) {
	for _, vl := range visibleLines(lines, xmin, xmax) {
		l, err := plotter.NewLine(plotter.XYs{{X: vl.x, Y: ax.tr(ax.lo)}, {X: vl.x, Y: ax.tr(ax.hi)}})
		if err != nil {
			continue
		}
		if vl.style < 0 {
			l.Color, l.Width, l.Dashes = color.Gray{Y: 140}, vg.Points(0.8), []vg.Length{vg.Points(4), vg.Points(3)}
		} else {
			col, _, _ := styleOf(vl.style)
			l.Color, l.Width, l.Dashes = col, vg.Points(0.9), []vg.Length{vg.Points(6), vg.Points(3)}
		}
		p.Add(l)
		if legend {
			addLegend(p, vl.label, l)
		}
		xmin, xmax = math.Min(xmin, vl.x), math.Max(xmax, vl.x)
	}
	return xmin, xmax
}

// legendItem is one entry of a plot's legend, kept beside the plot's own
// legend (whose entries gonum does not expose) so that render can lay a
// long legend out in columns under the axes instead of over the data.
type legendItem struct {
	label  string
	thumbs []plot.Thumbnailer
}

// legends holds the entries of the plots being built (*plot.Plot →
// *[]legendItem); render takes them out when it draws the plot.
var legends sync.Map

// addLegend adds an entry to p's legend and records it.
func addLegend(p *plot.Plot, label string, thumbs ...plot.Thumbnailer) {
	label = drawable(label)
	p.Legend.Add(label, thumbs...)
	v, _ := legends.LoadOrStore(p, &[]legendItem{})
	items := v.(*[]legendItem)
	*items = append(*items, legendItem{label, thumbs})
}

// maxInside is the most legend entries drawn inside the axes; a longer
// legend goes under them, in as many columns as the width allows, so that
// it never covers the data.
const maxInside = 6

// bottomLegend lays items out in columns across width w: the legends of
// the columns, each column's width, and the band's height.
func bottomLegend(items []legendItem, w vg.Length) (cols []plot.Legend, colW, bandH vg.Length) {
	probe := plot.NewLegend()
	probe.TextStyle.Font.Size = vg.Points(legendPt)
	var widest vg.Length
	for _, it := range items {
		widest = max(widest, probe.TextStyle.Width(it.label))
	}
	thumb := vg.Points(16)
	colW = widest + thumb + vg.Points(10)
	n := max(1, min(len(items), int(w/colW)))
	rows := (len(items) + n - 1) / n
	for c := 0; c < n; c++ {
		l := plot.NewLegend()
		l.TextStyle.Font.Size = vg.Points(legendPt)
		l.ThumbnailWidth = thumb
		l.Padding = vg.Points(0.5)
		l.Top, l.Left = true, true
		for r := 0; r < rows; r++ {
			// Column-major: entries read down the first column first.
			if i := c*rows + r; i < len(items) {
				l.Add(items[i].label, items[i].thumbs...)
			}
		}
		cols = append(cols, l)
	}
	bandH = vg.Length(rows)*vg.Points(legendPt*1.12) + vg.Points(8)
	return cols, colW, bandH
}

// render draws the grid of plots (rows × cols, nil entries left blank) into
// out[base+".svg"], out[base+".png"] (300 dpi) and out[base+".pdf"] (for a
// paper: vector, the text as glyph outlines), each tile tileW × tileH. A
// single plot is also drawn at a page's width, into base+"_page.pdf".
// The layout is decided here; the drawing runs on out's pool, so the plots
// must not be touched by the caller afterwards.
//
// With shared, the figure has one legend, the largest of the plots' (the
// plots must use the same styles for the same labels), drawn where it
// never hides data: in the empty tiles ending the last row, under a
// single row of panels, in a strip to the right of the grid when the
// figure is still no wider than a page, else under the grid
// (placeShared); the other plots' legends are dropped. Otherwise each plot keeps its legend inside, in the
// corner legendCorner chose, unless it is too long (maxInside): then it is
// laid out in columns in a band under the axes.
func render(out *files, base string, plots [][]*plot.Plot, tileW, tileH vg.Length, shared bool) error {
	lay := layout{plots: plots, rows: len(plots)}
	for _, r := range plots {
		lay.cols = max(lay.cols, len(r))
	}
	if lay.rows == 0 || lay.cols == 0 {
		return fmt.Errorf("render %s: no plots", base)
	}
	if shared {
		lay.sharedLegend(tileW, tileH)
		lay.placeShared(tileW, tileH)
	}
	lay.longLegend(shared)
	w, h := tileW*vg.Length(lay.cols)+lay.legendW, tileH*vg.Length(lay.rows)
	h += lay.band(w)
	page := lay.rows == 1 && lay.cols == 1
	out.do(w*h, func() error {
		if page {
			if err := lay.vector(out, base+"_page", pageW, pageH+lay.band(pageW), pageW, false); err != nil {
				return err
			}
		}
		if err := lay.vector(out, base, w, h, tileW, true); err != nil {
			return err
		}
		img := newRaster(w, h)
		lay.draw(draw.New(img), w, tileW)
		var buf bytes.Buffer
		if err := pngEncoder.Encode(&buf, img.Image()); err != nil {
			return fmt.Errorf("render %s.png: %w", base, err)
		}
		out.put(base+".png", withDPI(buf.Bytes(), pngDPI))
		return nil
	})
	return nil
}

// layout is a figure's arrangement: its grid of plots, the shared legend
// in a strip to the right (legendW wide) or a long legend in a band under
// a single plot (below).
type layout struct {
	plots      [][]*plot.Plot
	rows, cols int
	legend     *plot.Legend
	legendW    vg.Length
	below      []legendItem
	// legendH and items are the shared legend's height and entries;
	// cells, when > 0, is the number of empty tiles at the end of the
	// last row the shared legend is drawn in instead of the strip.
	legendH vg.Length
	items   []legendItem
	cells   int
}

// sharedLegend takes the tallest of the plots' legends (the most entries:
// all the series and, if any panel has one, the unstable marker) for the
// strip and drops the plots' own.
func (l *layout) sharedLegend(tileW, tileH vg.Length) {
	var legendH vg.Length
	for _, r := range l.plots {
		for _, p := range r {
			if p == nil {
				continue
			}
			probe := draw.Canvas{Rectangle: vg.Rectangle{Max: vg.Point{X: tileW, Y: tileH}}}
			r := p.Legend.Rectangle(probe)
			if lw := r.Size().X; lw > 0 && (l.legend == nil || r.Size().Y > legendH) {
				lg := p.Legend
				l.legend, l.legendW, legendH = &lg, lw+vg.Points(10), r.Size().Y
				l.items = nil
				if v, ok := legends.Load(p); ok {
					l.items = *v.(*[]legendItem)
				}
			}
			p.Legend = plot.NewLegend()
		}
	}
	l.legendH = legendH
}

// placeShared takes the shared legend out of the strip on the right, where
// it took a third of a two-panel figure's width (k-fig4i's class grid, 13
// entries): into the empty tiles that end the last row when it fits there
// (below their top padding), else, for a single row of panels, into a band
// of columns under them (as a single plot's long legend). A grid of full
// rows keeps the strip when the figure is still no wider than a page;
// three panels across and the strip were 8 in wide (a 3 × 3 grid), so
// there the legend goes into the band under the grid too.
func (l *layout) placeShared(tileW, tileH vg.Length) {
	if l.legend == nil {
		return
	}
	last := l.plots[l.rows-1]
	empty := l.cols - len(last)
	for i := len(last) - 1; i >= 0 && last[i] == nil; i-- {
		empty++
	}
	switch {
	case empty > 0 && l.legendW <= vg.Length(empty)*tileW && l.legendH+vg.Points(16) <= tileH:
		l.cells, l.legendW = empty, 0
	case len(l.items) > 0 && (l.rows == 1 || tileW*vg.Length(l.cols)+l.legendW > pageW):
		l.below, l.legend, l.legendW = l.items, nil, 0
	}
}

// longLegend moves a single plot's legend of more than maxInside entries,
// or one that would cover data in every corner (crowded), to the band
// under it; it forgets every plot's recorded entries.
func (l *layout) longLegend(shared bool) {
	for _, r := range l.plots {
		for _, p := range r {
			v, ok := legends.LoadAndDelete(p)
			_, full := crowded.LoadAndDelete(p)
			if ok && l.rows == 1 && l.cols == 1 && !shared && (len(*v.(*[]legendItem)) > maxInside || full) {
				l.below = *v.(*[]legendItem)
				p.Legend = plot.NewLegend()
			}
		}
	}
}

// band is the height of the long legend's band at width w (0 for none).
func (l *layout) band(w vg.Length) vg.Length {
	if l.below == nil {
		return 0
	}
	_, _, h := bottomLegend(l.below, w)
	return h
}

// grid draws the plots in tiles of width tw, and the shared legend: the
// swept x ticks are laid out for the data area, the tile less the y axis
// (its 8 pt tick labels and 9 pt label) and the padding, 0.8 in
// (measured on the 2.3 in panels, where 0.6 in let "7" and "7.7" touch).
func (l *layout) grid(dc draw.Canvas, tw vg.Length) {
	for _, r := range l.plots {
		for _, p := range r {
			if p == nil {
				continue
			}
			if st, ok := p.X.Tick.Marker.(*sweptTicks); ok {
				st.width = tw - 0.8*vg.Inch
				st.font = p.X.Tick.Label
			}
		}
	}
	grid := dc
	grid.Max.X -= l.legendW
	tiles := draw.Tiles{Rows: l.rows, Cols: l.cols, PadX: vg.Points(8), PadY: vg.Points(6),
		PadTop: vg.Points(3), PadBottom: vg.Points(2), PadLeft: vg.Points(2), PadRight: vg.Points(6)}
	for r := range l.plots {
		for c := 0; c < l.cols; c++ {
			if c < len(l.plots[r]) && l.plots[r][c] != nil {
				tile := tiles.At(grid, c, r)
				axisLengths(l.plots[r][c], tile)
				l.plots[r][c].Draw(tile)
			}
		}
	}
	if l.legend != nil && l.cells > 0 {
		// In the empty tiles ending the last row, level with the top of
		// their neighbours' data areas.
		area := tiles.At(grid, l.cols-l.cells, l.rows-1)
		area.Max.X = tiles.At(grid, l.cols-1, l.rows-1).Max.X
		lg := *l.legend
		lg.Top, lg.Left = true, true
		lg.XOffs, lg.YOffs = vg.Points(10), -vg.Points(12)
		lg.Draw(area)
	} else if l.legend != nil {
		strip := dc
		strip.Min.X = dc.Max.X - l.legendW
		lg := *l.legend
		lg.Top, lg.Left = true, true
		lg.XOffs, lg.YOffs = 0, -vg.Points(12) // level with the top of the data area
		lg.Draw(strip)
	}
}

// axisLengths tells p's log tick markers how long their axes are in tile:
// the tile less the other axis (its tick labels and label, about 0.55 in
// under the x axis, 0.8 in left of the y axis, as in grid) and the
// panel's title, so that logTicks can drop minor ticks too dense to read.
func axisLengths(p *plot.Plot, tile draw.Canvas) {
	w, h := tile.Max.X-tile.Min.X-0.8*vg.Inch, tile.Max.Y-tile.Min.Y-0.55*vg.Inch
	if p.Title.Text != "" {
		h -= p.Title.TextStyle.Height(p.Title.Text) + p.Title.Padding
	}
	if lt, ok := p.X.Tick.Marker.(logTicks); ok {
		lt.length = max(w, 1)
		p.X.Tick.Marker = lt
	}
	if lt, ok := p.Y.Tick.Marker.(logTicks); ok {
		lt.length = max(h, 1)
		p.Y.Tick.Marker = lt
	}
}

// draw draws the figure at width w with tiles of width tw, the long
// legend, if any, in a band under it.
func (l *layout) draw(dc draw.Canvas, w, tw vg.Length) {
	if l.below == nil {
		l.grid(dc, tw)
		return
	}
	cl, cw, bandH := bottomLegend(l.below, w)
	top := dc
	top.Min.Y += bandH
	l.grid(top, tw)
	left := dc.Min.X + (w-cw*vg.Length(len(cl)))/2
	for i := range cl {
		c := dc
		c.Max.Y = dc.Min.Y + bandH
		c.Min.X = left + cw*vg.Length(i)
		c.Max.X = c.Min.X + cw
		cl[i].Draw(c)
	}
}

// vector draws name.pdf and, with svg, name.svg at w × h: the PDF's text
// in an embedded font subset (pdfcanvas.go), the SVG's as glyph outlines
// (glyph.go).
func (l *layout) vector(out *files, name string, w, h, tw vg.Length, svg bool) error {
	var buf bytes.Buffer
	if svg {
		c := newSVG(w, h)
		l.draw(draw.New(c), w, tw)
		if _, err := c.WriteTo(&buf); err != nil {
			return fmt.Errorf("render %s.svg: %w", name, err)
		}
		out.put(name+".svg", bytes.Clone(buf.Bytes()))
		buf.Reset()
	}
	pdf := newPDFCanvas(w, h)
	l.draw(draw.New(pdf), w, tw)
	if err := pdf.writeTo(&buf); err != nil {
		return fmt.Errorf("render %s.pdf: %w", name, err)
	}
	out.put(name+".pdf", buf.Bytes())
	return nil
}

const pngDPI = 300

// newRaster is vgimg.NewWith(UseWH(w, h), UseDPI(pngDPI)) on a white
// background without its copy of the fresh image (gg.NewContextForImage
// copies; NewContextForRGBA does not), so it sets the two context options
// NewWith sets on the contexts it makes itself.
func newRaster(w, h vg.Length) *vgimg.Canvas {
	px := func(l vg.Length) int { return int(l/vg.Inch*pngDPI + 0.5) }
	rgba := image.NewRGBA(image.Rect(0, 0, px(w), px(h)))
	ctx := gg.NewContextForRGBA(rgba)
	ctx.SetLineCapButt()
	ctx.InvertY()
	return vgimg.NewWith(vgimg.UseImageWithContext(rgba, ctx), vgimg.UseDPI(pngDPI))
}

// withDPI returns the PNG data with a pHYs chunk saying it is dpi pixels
// per inch, right after the IHDR chunk (where the PNG specification puts
// it: before the image data). image/png writes none, and without it
// LaTeX's \includegraphics, word processors and a publisher's checks take a
// 300 dpi figure for 72 dpi: a column figure came out 13.75 in wide.
func withDPI(data []byte, dpi float64) []byte {
	const ihdrEnd = 8 + 4 + 4 + 13 + 4 // signature, IHDR's length, type, data, CRC
	if len(data) < ihdrEnd || string(data[12:16]) != "IHDR" {
		return data
	}
	ppm := uint32(dpi/0.0254 + 0.5) // pixels per metre, the chunk's only unit
	chunk := make([]byte, 0, 21)
	chunk = binary.BigEndian.AppendUint32(chunk, 9)
	chunk = append(chunk, "pHYs"...)
	chunk = binary.BigEndian.AppendUint32(chunk, ppm)
	chunk = binary.BigEndian.AppendUint32(chunk, ppm)
	chunk = append(chunk, 1) // unit: the metre
	chunk = binary.BigEndian.AppendUint32(chunk, crc32.ChecksumIEEE(chunk[4:]))
	out := make([]byte, 0, len(data)+len(chunk))
	out = append(out, data[:ihdrEnd]...)
	out = append(out, chunk...)
	return append(out, data[ihdrEnd:]...)
}

// pngEncoder encodes the PNGs at BestSpeed: the figures are flat colours on
// white, so the faster deflate costs little size (2% here) and halves the
// encoding, which is most of a report's CPU time. Its buffer pool keeps one
// deflate state per core instead of allocating one per figure.
var pngEncoder = png.Encoder{CompressionLevel: png.BestSpeed, BufferPool: &encoderPool{}}

type encoderPool struct{ p sync.Pool }

func (e *encoderPool) Get() *png.EncoderBuffer {
	b, _ := e.p.Get().(*png.EncoderBuffer)
	return b
}

func (e *encoderPool) Put(b *png.EncoderBuffer) { e.p.Put(b) }

// files collects a report's files. Figures are drawn concurrently, one per
// core, the largest first (so that the last to finish is a small one):
// rasterising and encoding them is most of a report's cost, and a
// campaign's finalisation waits for it.
type files struct {
	mu   sync.Mutex
	sink Sink
	err  error // the sink's first error
	jobs []job
	// gz compresses the CSV files and summary.json (name.csv.gz): set
	// for a campaign of more than maxTableRows points, whose tables
	// would otherwise weigh tens of MB.
	gz bool
}

type job struct {
	size float64 // drawing area: the cost estimate
	run  func() error
}

// A Sink receives each of a report's files as soon as it is finished, so
// that a caller can write it out and let it leave memory: at 10^5 points a
// report is over 100 MB, which held whole next to the point summaries took
// a finalising coordinator over its memory bound. Put is never called
// concurrently; a file's data is not used after Put returns.
type Sink interface {
	Put(name string, data []byte) error
}

// Files is a Sink that keeps the files in memory, keyed by name (what
// Render returns).
type Files map[string][]byte

// Put keeps data as name.
func (m Files) Put(name string, data []byte) error {
	m[name] = data
	return nil
}

// DirSink is a Sink that writes each file into the directory it names
// (which must exist).
type DirSink string

// Put writes data as the file name in the directory.
func (d DirSink) Put(name string, data []byte) error {
	return os.WriteFile(filepath.Join(string(d), name), data, 0o644)
}

func newFiles() *files { return &files{sink: Files{}} }

func (f *files) put(name string, data []byte) {
	_ = f.write(name, func(w io.Writer) error { // a bytes.Buffer does not fail
		_, err := w.Write(data)
		return err
	})
}

// write adds the file name with what write writes, compressed as it is
// written when it is compressed at all: the files of a large campaign
// are its largest (summary.csv is 70 MB at 10^5 points), and held
// uncompressed before compression they took twice that in a growing
// buffer. What is kept is trimmed to its length.
func (f *files) write(name string, write func(w io.Writer) error) error {
	if !plainFileName(name) {
		// A figure is named after its metric, and a metric after a
		// counter a stored record names: a record that no worker wrote
		// (a hand-made archive) could name "../../x" and the report
		// would write outside its directory.
		err := fmt.Errorf("%q is not a plain file name (a metric's name in the stored records?)", name)
		f.mu.Lock()
		f.err = cmp.Or(f.err, err)
		f.mu.Unlock()
		return err
	}
	var b bytes.Buffer
	var err error
	if f.gz && (strings.HasSuffix(name, ".csv") || name == "summary.json") {
		name += ".gz"
		z := gzip.NewWriter(&b) // no name or time in the header: reproducible
		err = write(z)
		if cerr := z.Close(); err == nil {
			err = cerr
		}
	} else {
		err = write(&b)
	}
	if err != nil {
		return err
	}
	data := b.Bytes()
	if cap(data) > len(data)+len(data)/8 {
		data = bytes.Clone(data) // do not keep the buffer's doubling slack
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err != nil {
		return f.err
	}
	if err := f.sink.Put(name, data); err != nil {
		// Kept named for wait (put's callers ignore the error); returned
		// bare to write's callers, which name the file themselves.
		f.err = fmt.Errorf("%s: %w", name, err)
		return err
	}
	return nil
}

// plainFileName: name is one file's name, with nothing that could lead out
// of the report's directory or the store's prefix.
func plainFileName(name string) bool {
	return name != "" && name != "." && name != ".." && !strings.ContainsAny(name, "/\\\x00")
}

// do queues a drawing of the given area for wait.
func (f *files) do(size vg.Length, run func() error) {
	f.jobs = append(f.jobs, job{float64(size), run})
}

// wait runs the queued drawings and returns the first error, the sink's
// included.
func (f *files) wait() error {
	sort.SliceStable(f.jobs, func(i, j int) bool { return f.jobs[i].size > f.jobs[j].size })
	next := make(chan job)
	errs := make(chan error, len(f.jobs))
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), len(f.jobs)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range next {
				errs <- j.run()
			}
		}()
	}
	for _, j := range f.jobs {
		next <- j
	}
	close(next)
	wg.Wait()
	close(errs)
	f.jobs = nil
	for err := range errs {
		if err != nil {
			return err
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.err
}

// tickLabel is a linear axis's label of v for ticks step apart on an
// axis reaching top (its largest magnitude): plain (prec decimals) below
// a million, past it a mantissa and the top's power of ten, as the log
// axes write it ("0.5e6 1.0e6 1.5e6", not "1500000": seven digits crowd
// a column figure's y axis).
func tickLabel(v, step, top float64, prec int) string {
	if top < 1e6 || v == 0 {
		return strconv.FormatFloat(v, 'f', prec, 64)
	}
	e := int(math.Floor(math.Log10(top)))
	digits := max(0, e-int(math.Floor(math.Log10(step)+1e-9)))
	return strconv.FormatFloat(v/math.Pow(10, float64(e)), 'f', digits, 64) + "e" + strconv.Itoa(e)
}

// niceTicks labels a linear axis every 1, 2 or 5 × 10^k, aiming at about
// six labels (gonum's default gives three, too few to read values off).
type niceTicks struct{}

// Ticks returns the major ticks (labelled) and minor ticks between them.
func (niceTicks) Ticks(lo, hi float64) []plot.Tick {
	// A range narrower than a millionth of its magnitude cannot be
	// labelled in steps (they would vanish in rounding): label its ends.
	if !(hi > lo) || !finite(lo) || !finite(hi) || hi-lo < 1e-6*math.Max(math.Abs(lo), math.Abs(hi)) {
		return []plot.Tick{{Value: lo, Label: strconv.FormatFloat(lo, 'g', 6, 64)}, {Value: hi, Label: strconv.FormatFloat(hi, 'g', 6, 64)}}
	}
	raw := (hi - lo) / 6
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	step, minor := mag, 5
	switch r := raw / mag; {
	case r > 5:
		step, minor = 10*mag, 5
	case r > 2:
		step, minor = 5*mag, 5
	case r > 1:
		step, minor = 2*mag, 4
	}
	prec := max(0, -int(math.Floor(math.Log10(step))))
	var ts []plot.Tick
	first := math.Ceil(lo/step-1e-9) * step
	for i := 0; i < 1000; i++ {
		v := first + float64(i)*step
		if v > hi+step*1e-9 {
			break
		}
		ts = append(ts, plot.Tick{Value: v, Label: tickLabel(v, step, math.Max(math.Abs(lo), math.Abs(hi)), prec)})
	}
	ms := step / float64(minor)
	firstMinor := math.Ceil(lo/ms - 1e-9)
	for i := 0; i < 1000; i++ {
		v := (firstMinor + float64(i)) * ms
		if v > hi+ms*1e-9 {
			break
		}
		if r := math.Abs(v/step - math.Round(v/step)); r > 1e-6 {
			ts = append(ts, plot.Tick{Value: v})
		}
	}
	return ts
}

// maxLogLabels is the most decades a log axis labels one by one.
const maxLogLabels = 6

// logTicks labels an axis of log10 values: a major tick at every integer k
// labelled 10^k as a plain number (0.01, 1, 1000; 1e+06 beyond), minor
// ticks at log10(m·10^k), m = 2..9. An axis spanning less than two
// decades also labels 2·10^k and 5·10^k, and one with still fewer than two
// labels every m·10^k, so that no log axis is left with a single number
// (or none) under its data.
//
// length is the axis's length on the page (0 when not known): minor ticks
// closer than minMinorGap there (the 9·10^k–10^(k+1) gap, the narrowest,
// on an axis spanning many decades in a small panel) would merge into a
// solid bar, so they are left out (a labelled 2·10^k or 5·10^k stays).
type logTicks struct{ length vg.Length }

// minMinorGap is the narrowest gap between minor ticks drawn: 1.5 pt, about
// three tick-line widths, below which they read as one black bar.
const minMinorGap = vg.Length(1.5)

// minors reports whether minor ticks are drawn on an axis of log10 values
// [lo, hi] that is t.length long: the narrowest gap between them,
// log10(10/9) of a decade, is at least minMinorGap.
func (t logTicks) minors(lo, hi float64) bool {
	if t.length <= 0 || !(hi > lo) {
		return true
	}
	return t.length*vg.Length(math.Log10(10.0/9)/(hi-lo)) >= minMinorGap
}

// Ticks returns the decade and sub-decade ticks within [lo, hi].
func (t logTicks) Ticks(lo, hi float64) []plot.Tick {
	// A decade past 10^5 or below 10^-4 is written m·e·k; on an axis that
	// has one, every decade from 10^±3 out is, so that one axis does not
	// read "0.0001" above "1e-5" (k-fig6f's class 1 panel).
	sci := math.Floor(hi+1e-9) > 5 || math.Ceil(lo-1e-9) < -4
	label := func(k float64, m int) string {
		v := float64(m) * math.Pow(10, k)
		if k > 5 || k < -4 || sci && math.Abs(k) >= 3 {
			return strconv.Itoa(m) + "e" + strconv.Itoa(int(k))
		}
		return strconv.FormatFloat(v, 'g', 6, 64)
	}
	// Past maxLogLabels decades (a waiting time from 1e-8 to 100 in a
	// 1.9 in panel) the labels would touch and nine minor ticks a decade
	// would blacken the axis: label every every-th decade (10^0 among
	// them), the others get an unlabelled tick, and no minor ticks.
	every := max(1, int(math.Ceil((math.Floor(hi+1e-9)-math.Ceil(lo-1e-9)+1)/maxLogLabels)))
	labelled := logLabelled(lo, hi)
	minors := t.minors(lo, hi)
	var ts []plot.Tick
	for k := math.Floor(lo); k <= math.Ceil(hi); k++ {
		for m := 1; m <= 9; m++ {
			v := k + math.Log10(float64(m))
			if v < lo-1e-9 || v > hi+1e-9 || m > 1 && (every > 1 || !minors && !labelled[m]) {
				continue
			}
			t := plot.Tick{Value: v}
			if m == 1 {
				t.Value = k
			}
			if labelled[m] && int(k)%every == 0 {
				t.Label = label(k, m)
			}
			ts = append(ts, t)
		}
	}
	return ts
}

// logLabelled are the mantissas labelled in each decade of [lo, hi] (log10
// values): the powers of ten on an axis spanning two decades or more; 1, 2
// and 5 on one spanning less (1.7 … 110, 1.8 decades, was labelled only 10
// and 100, none of them near the values at 1.8–3.1: two powers of ten
// inside the range were taken as enough); every mantissa when even 1, 2
// and 5 give fewer than two labels.
func logLabelled(lo, hi float64) map[int]bool {
	count := func(ms map[int]bool) int {
		n := 0
		for k := math.Floor(lo); k <= math.Ceil(hi); k++ {
			for m := 1; m <= 9; m++ {
				if v := k + math.Log10(float64(m)); ms[m] && v >= lo-1e-9 && v <= hi+1e-9 {
					n++
				}
			}
		}
		return n
	}
	if hi-lo >= 2-1e-9 && count(map[int]bool{1: true}) >= 2 {
		return map[int]bool{1: true}
	}
	if ms := (map[int]bool{1: true, 2: true, 5: true}); count(ms) >= 2 {
		return ms
	}
	return map[int]bool{1: true, 2: true, 3: true, 4: true, 5: true, 6: true, 7: true, 8: true, 9: true}
}

// crowded holds the plots (*plot.Plot → true) whose legend would cover
// data in every corner: render draws their legend under the axes.
var crowded sync.Map

// placeLegend puts p's legend in legendCorner's corner, or, when every
// corner holds data, marks it for the band under the axes (crowded). The
// legend's box is measured as drawn in a column figure, with a margin,
// against the data area (the figure less about 0.9 in of y axis and
// 0.85 in of x axis, two rows of ticks),
// with the 10 pt drop under a row of unstable markers (lowered).
func placeLegend(p *plot.Plot, cs []curve, xmin, xmax, ylo, yhi float64, tr func(float64) float64, lowered bool) {
	probe := draw.Canvas{Rectangle: vg.Rectangle{Max: vg.Point{X: colW, Y: colH}}}
	sz := p.Legend.Rectangle(probe).Size()
	dw, dh := colW-0.9*vg.Inch, colH-0.85*vg.Inch
	if lowered {
		sz.Y += vg.Points(10)
	}
	// The legend is drawn XOffs, YOffs in from its corner.
	sz.X += max(p.Legend.XOffs, -p.Legend.XOffs)
	sz.Y += max(p.Legend.YOffs, -p.Legend.YOffs)
	w := float64((sz.X + vg.Points(8)) / dw)
	h := float64((sz.Y + vg.Points(8)) / dh)
	var clear bool
	p.Legend.Top, p.Legend.Left, clear = legendCorner(cs, xmin, xmax, ylo, yhi, tr, w, h)
	if !clear {
		crowded.Store(p, true)
	}
}

// legendCorner picks the corner of the plot where the legend hides the least
// data: it counts the points of the curves (and 20 samples along each
// segment between them, and 9 along each error bar), in normalised coordinates, that fall in a box of
// the legend's size (w × h, fractions of the data area) at each corner,
// preferring top-left, then top-right, bottom-right, bottom-left on ties.
// clear says whether that corner holds no data at all.
func legendCorner(cs []curve, xmin, xmax, ylo, yhi float64, tr func(float64) float64, w, h float64) (top, left, clear bool) {
	type corner struct{ top, left bool }
	corners := []corner{{true, true}, {true, false}, {false, false}, {false, true}}
	count := make([]int, len(corners))
	in := func(x, y float64) {
		if !finite(x) || !finite(y) {
			return
		}
		u, v := (x-xmin)/(xmax-xmin), (y-ylo)/(yhi-ylo)
		for i, c := range corners {
			inX := (c.left && u <= w) || (!c.left && u >= 1-w)
			inY := (c.top && v >= 1-h) || (!c.top && v <= h)
			if inX && inY {
				count[i]++
			}
		}
	}
	for _, c := range cs {
		sampleCurve(c, ylo, yhi, tr, in)
	}
	best := 0
	for i := range corners {
		if count[i] < count[best] {
			best = i
		}
	}
	return corners[best].top, corners[best].left, count[best] == 0
}

// sampleCurve calls in with the points of c's line (y clipped to [ylo,
// yhi]) and 19 points along each segment between them.
func sampleCurve(c curve, ylo, yhi float64, tr func(float64) float64, in func(x, y float64)) {
	var px, py float64
	prev := false
	for i, x := range c.x {
		if c.unstable[i] || !finite(c.mean[i]) || c.mean[i] <= 0 && math.IsNaN(tr(c.mean[i])) {
			continue
		}
		y := math.Min(math.Max(tr(c.mean[i]), ylo), yhi)
		in(x, y)
		sampleBar(c.mean[i], c.hw[i], x, ylo, yhi, tr, in)
		if prev {
			for k := 1; k < 20; k++ {
				f := float64(k) / 20
				in(px+f*(x-px), py+f*(y-py))
			}
		}
		px, py, prev = x, y, true
	}
}

// sampleBar calls in with 9 points along the error bar of mean ± hw at
// x (on a log axis — tr maps negatives to NaN — the delta-method interval
// m·exp(±hw/m) newPlot draws), clipped to [ylo, yhi]: a legend must not
// cover an interval either.
func sampleBar(m, hw, x, ylo, yhi float64, tr func(float64) float64, in func(x, y float64)) {
	if !(hw > 0) || !finite(hw) {
		return
	}
	l, u := m-hw, m+hw
	if math.IsNaN(tr(-1)) {
		l, u = m*math.Exp(-hw/m), m*math.Exp(hw/m)
	}
	tl, tu := tr(l), tr(u)
	if math.IsNaN(tl) || math.IsInf(tl, 0) {
		tl = ylo
	}
	tl, tu = math.Max(tl, ylo), math.Min(tu, yhi)
	for k := 0; k <= 8; k++ {
		in(x, tl+float64(k)/8*(tu-tl))
	}
}

// maxSweptTicks is the most swept values labelled one by one; a longer
// sweep gets evenly spaced ticks (niceTicks).
const maxSweptTicks = 16

// distinctX is the sorted distinct finite x values of the curves: the
// swept values of the x axis.
func distinctX(cs []curve) []float64 {
	set := map[float64]bool{}
	for _, c := range cs {
		for _, x := range c.x {
			if finite(x) {
				set[x] = true
			}
		}
	}
	return sortedKeys(set)
}

// sortedKeys are the values of set in ascending order.
func sortedKeys(set map[float64]bool) []float64 {
	xs := make([]float64, 0, len(set))
	for x := range set {
		xs = append(xs, x)
	}
	sort.Float64s(xs)
	return xs
}

// categoriesOf is the categorical x axis of cs (curve.cats), nil for a
// numeric one.
func categoriesOf(cs []curve) []string {
	for _, c := range cs {
		if c.cats != nil {
			return c.cats
		}
	}
	return nil
}

// categoryTicks labels a categorical axis: a tick at 1, 2, …, n named
// after its category, laid out as swept values are (a label that would
// overlap its neighbour goes on a second row).
func categoryTicks(cats []string) *sweptTicks {
	vs := make([]float64, len(cats))
	for i := range vs {
		vs[i] = float64(i + 1)
	}
	return &sweptTicks{values: vs, names: cats}
}

// categoryRange is the x range of a categorical axis: half a slot either
// side of the first and last category.
func categoryRange(cats []string) (lo, hi float64) { return 0.5, float64(len(cats)) + 0.5 }

// sweptTicks puts a labelled tick at every swept value, so that a sweep
// dense where it matters (λ = 7, 7.5, 7.7 near saturation) has those values
// on the axis rather than round numbers around them. A label that would
// overlap its left neighbour goes on a second row; one that would overlap
// on both rows keeps its tick (and grid line) unlabelled. width (the data
// area's approximate width) and font are set by render, which knows the
// tile size.
type sweptTicks struct {
	values []float64
	log    bool     // the axis is of log10 x (logXAxis); values are x
	names  []string // the labels of the values, if not the values (categoryTicks)
	width  vg.Length
	font   text.Style
}

// sweptLabels are the tick labels of swept values: each value as it is
// written (0.25, 1e-3) when that is short, otherwise with the fewest
// significant digits, at least 3, that still tell distinct values apart.
// A swept value computed rather than typed (q-fig3-limit's rates near a
// stability limit, 2.982192528589757) would otherwise print all 16
// digits under its tick; its exact value is in the figure's data file.
func sweptLabels(values []float64) []string {
	out := make([]string, len(values))
	short := true
	for i, x := range values {
		out[i] = strconv.FormatFloat(x, 'g', -1, 64)
		short = short && len(out[i]) <= 6
	}
	if short {
		return out
	}
	for prec := 3; prec < 17; prec++ {
		seen := make(map[string]float64, len(values))
		distinct := true
		for i, x := range values {
			out[i] = strconv.FormatFloat(x, 'g', prec, 64)
			if y, ok := seen[out[i]]; ok && y != x {
				distinct = false
			}
			seen[out[i]] = x
		}
		if distinct {
			return out
		}
	}
	return out
}

// Ticks returns a major tick per swept value within [lo, hi].
func (st *sweptTicks) Ticks(lo, hi float64) []plot.Tick {
	var ts []plot.Tick
	lastEnd := [2]vg.Length{-1e9, -1e9} // right edge of the last label of each row
	gap := vg.Points(4)
	labels := st.names
	if labels == nil {
		labels = sweptLabels(st.values)
	}
	for i, x := range st.values {
		v := x
		if st.log {
			v = math.Log10(x)
		}
		if v < lo || v > hi {
			continue
		}
		l := labels[i]
		if st.width <= 0 || hi <= lo {
			ts = append(ts, plot.Tick{Value: v, Label: l})
			continue
		}
		pos := vg.Length((v-lo)/(hi-lo)) * st.width
		half := st.font.Width(l) / 2
		switch {
		case pos-half >= lastEnd[0]+gap:
			lastEnd[0] = pos + half
		case pos-half >= lastEnd[1]+gap:
			lastEnd[1] = pos + half
			l = "\n" + l
		default:
			l = ""
		}
		ts = append(ts, plot.Tick{Value: v, Label: l})
	}
	return ts
}
