package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"math"
	"sort"
	"strconv"
	"strings"
	"text/template"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/msjfarm/msjfarm/results/aggregate"
	"github.com/msjfarm/msjfarm/results/metric"
)

// Reports at scale (docs/report.md, "Reports at scale"): a campaign whose
// points would need more line plots than a reader can look at is drawn as
// heat maps. x stays the swept axis; y is a second swept dimension — the
// numeric scenario axis with the most values when there are more than
// maxFacets facets (e.g. 40 job-size means: one heat map instead of 40
// sets of figures), or a policy's variants when a facet has more than
// maxCurves series (e.g. MSFQ's 40 thresholds) — and the colour is the
// mean, binned. One figure per metric and group, one panel per series
// (policy, or policy variant when y is a scenario axis).
const (
	maxFacets = 6
	maxCurves = 24
	// maxHeatFigures bounds the figures of a heat-map report: past it only
	// the mean response time is drawn per group.
	maxHeatFigures = 40
	// maxTableRows is the largest summary table printed in index.html;
	// a larger one is in the data files only.
	maxTableRows = 2000
)

// heatGroup is a set of heat-map panels drawn together (one figure per
// metric): the points sharing every swept scenario axis but x and y.
type heatGroup struct {
	title, prefix string
	yLabel        string
	panels        []*heatPanel
}

// heatPanel is one panel: rows × columns of points.
type heatPanel struct {
	title string
	xs    []float64                   // column values, ascending
	rows  []string                    // row labels, bottom to top
	cell  map[[2]int]*aggregate.Point // (column, row) → point
}

// heatRow is a row key: its label and the number it sorts by.
type heatRow struct {
	label string
	order float64
}

// heatLayout decides whether pts need heat maps and builds their groups:
// nil when line plots suffice (at most maxFacets facets, each of at most
// maxCurves series).
func heatLayout(pts []aggregate.Point, fs []*facet, tags []string, x string, others []string) []*heatGroup {
	many := false
	for _, f := range fs {
		many = many || len(f.series) > maxCurves
	}
	if len(fs) <= maxFacets && !many || x == categoryAxis {
		// A categorical axis (no swept scenario axis) has a point per
		// series: many series are many categories, not a second dimension.
		return nil
	}
	xs := func(ps []*aggregate.Point) []float64 {
		set := map[float64]bool{}
		for _, p := range ps {
			if v := heatX(p, x); finite(v) {
				set[v] = true
			}
		}
		return sortedKeys(set)
	}
	if len(fs) > maxFacets {
		if fold := foldAxis(pts, others); fold != "" {
			return foldedGroups(pts, tags, x, others, fold, xs)
		}
	}
	// Many series per facet (or many facets with no numeric axis to
	// fold): one panel per policy, its variants as rows.
	var groups []*heatGroup
	for _, f := range fs {
		g := &heatGroup{title: f.title, prefix: f.prefix, yLabel: "variant"}
		byPolicy := map[string]*heatPanel{}
		rowsOf := map[*heatPanel][]heatRow{}
		var order []*heatPanel
		for _, s := range f.series {
			k := s.tag + "\x00" + s.policy
			hp := byPolicy[k]
			if hp == nil {
				hp = &heatPanel{title: strings.TrimPrefix(s.tag+": "+s.policy, ": "), cell: map[[2]int]*aggregate.Point{}}
				byPolicy[k] = hp
				order = append(order, hp)
			}
			rowsOf[hp] = append(rowsOf[hp], heatRow{label: strings.TrimSpace(strings.TrimPrefix(s.label, hp.title)), order: math.NaN()})
		}
		// Rows ordered by the varied parameter when it is one number.
		for _, hp := range order {
			rows := rowsOf[hp]
			sortRows(rows)
			for _, r := range rows {
				hp.rows = append(hp.rows, r.label)
			}
		}
		for _, s := range f.series {
			hp := byPolicy[s.tag+"\x00"+s.policy]
			hp.xs = xs(f.pts)
			ri := indexOf(hp.rows, strings.TrimSpace(strings.TrimPrefix(s.label, hp.title)))
			for _, p := range s.pts {
				hp.cell[[2]int{colIndex(hp.xs, heatX(p, x)), ri}] = p
			}
		}
		for _, hp := range order {
			if len(hp.rows) == 1 && hp.rows[0] == "" {
				hp.rows[0] = hp.title
			}
		}
		g.panels = order
		groups = append(groups, g)
	}
	return groups
}

// sortRows orders variant rows by their number when every label is
// "name=number", else keeps them as they came.
func sortRows(rows []heatRow) {
	for i := range rows {
		_, v, ok := strings.Cut(rows[i].label, "=")
		f, err := strconv.ParseFloat(v, 64)
		if !ok || err != nil || strings.Contains(v, " ") {
			return
		}
		rows[i].order = f
	}
	sort.SliceStable(rows, func(i, j int) bool { return rows[i].order < rows[j].order })
}

func indexOf(ss []string, s string) int {
	for i, v := range ss {
		if v == s {
			return i
		}
	}
	return -1
}

// heatX is p's column value: the swept value as given (a load of 0.05,
// not the 0.05000000000000001 computed back from λ), so that the points
// of a column share it exactly.
func heatX(p *aggregate.Point, x string) float64 {
	if _, swept := p.Axes[x]; swept {
		return xValue(p, x)
	}
	return aggregate.RoundInput(xValue(p, x))
}

func colIndex(xs []float64, v float64) int {
	i := sort.SearchFloat64s(xs, v)
	if i < len(xs) && xs[i] == v {
		return i
	}
	return -1
}

// foldAxis is the numeric scenario axis (other than x) with the most
// distinct values, "" if none is numeric throughout.
func foldAxis(pts []aggregate.Point, others []string) string {
	best, bestN := "", 1
	for _, a := range others {
		set := map[float64]bool{}
		numeric := true
		for i := range pts {
			v, ok := aggregate.Number(pts[i].Axes[a])
			if !ok {
				if _, present := pts[i].Axes[a]; present {
					numeric = false
					break
				}
				continue
			}
			set[v] = true
		}
		if numeric && len(set) > bestN {
			best, bestN = a, len(set)
		}
	}
	return best
}

// foldedGroups makes fold the y axis: groups by workload and the other
// axes but fold, one panel per series (policy variant, campaign), a row
// per value of fold.
func foldedGroups(pts []aggregate.Point, tags []string, x string, others []string, fold string, xs func([]*aggregate.Point) []float64) []*heatGroup {
	var rest []string
	for _, a := range others {
		if a != fold {
			rest = append(rest, a)
		}
	}
	sub := facets(pts, tags, x, rest)
	var groups []*heatGroup
	for _, f := range sub {
		g := &heatGroup{title: f.title, prefix: f.prefix, yLabel: axisLabel(fold)}
		set := map[float64]bool{}
		for _, p := range f.pts {
			if v, ok := aggregate.Number(p.Axes[fold]); ok {
				set[v] = true
			}
		}
		ys := sortedKeys(set)
		var rows []string
		for _, v := range ys {
			rows = append(rows, strconv.FormatFloat(v, 'g', -1, 64))
		}
		cols := xs(f.pts)
		for _, s := range f.series {
			hp := &heatPanel{title: s.label, xs: cols, rows: rows, cell: map[[2]int]*aggregate.Point{}}
			for _, p := range s.pts {
				v, _ := aggregate.Number(p.Axes[fold])
				hp.cell[[2]int{colIndex(cols, heatX(p, x)), colIndex(ys, v)}] = p
			}
			g.panels = append(g.panels, hp)
		}
		groups = append(groups, g)
	}
	return groups
}

// axisLabel is the label of a swept axis.
func axisLabel(a string) string {
	if l := xLabels[a]; l != "" {
		return l
	}
	return a
}

// heatScale bins the means of a figure's cells into colours: at most 9
// bins with round edges (1, 2, 5 × 10^k on a log scale when the means
// span a decade or more: colours resolve less than a line plot's axis, niceTicks' steps otherwise), coloured along
// viridis (sequential, colour-blind safe, monotone in lightness, so it
// reads in greyscale too).
type heatScale struct {
	edges []float64 // ascending; bin i is [edges[i], edges[i+1])
	log   bool
}

func newHeatScale(vals []float64) (heatScale, bool) {
	lo, hi := math.Inf(1), math.Inf(-1)
	positive := true
	for _, v := range vals {
		if finite(v) {
			lo, hi = math.Min(lo, v), math.Max(hi, v)
			positive = positive && v > 0
		}
	}
	if math.IsInf(lo, 1) {
		return heatScale{}, false
	}
	if positive && hi/lo >= 10 {
		var edges []float64
		for k := math.Floor(math.Log10(lo)); ; k++ {
			for _, m := range []float64{1, 2, 5} {
				e := m * math.Pow(10, k)
				if e <= lo*(1+1e-12) {
					edges = []float64{e}
					continue
				}
				edges = append(edges, e)
				if e > hi {
					return thinEdges(heatScale{edges: edges, log: true}), true
				}
			}
		}
	}
	if hi <= lo {
		hi = lo + math.Max(math.Abs(lo)*0.1, 1e-9)
	}
	var edges []float64
	for _, t := range (niceTicks{}).Ticks(lo, hi) {
		if t.Label != "" {
			edges = append(edges, t.Value)
		}
	}
	if len(edges) == 0 || edges[0] > lo {
		step := 1.0
		if len(edges) > 1 {
			step = edges[1] - edges[0]
		}
		first := lo
		if len(edges) > 0 {
			first = edges[0] - step*math.Ceil((edges[0]-lo)/step)
		}
		edges = append([]float64{first}, edges...)
	}
	if edges[len(edges)-1] <= hi {
		step := edges[len(edges)-1] - edges[max(0, len(edges)-2)]
		if step <= 0 {
			step = math.Max(math.Abs(hi)*0.1, 1e-9)
		}
		edges = append(edges, edges[len(edges)-1]+step)
	}
	return heatScale{edges: edges}, true
}

// thinEdges keeps at most 10 edges (9 bins) on a log scale by dropping
// the 2s and 5s, then every other decade.
func thinEdges(s heatScale) heatScale {
	for step := 1; len(s.edges) > 10; step++ {
		var out []float64
		for i, e := range s.edges {
			m := e / math.Pow(10, math.Floor(math.Log10(e)+1e-9))
			if i == 0 || i == len(s.edges)-1 || math.Abs(m-1) < 1e-9 && int(math.Round(math.Log10(e)))%step == 0 {
				out = append(out, e)
			}
		}
		s.edges = out
	}
	return s
}

func (s heatScale) bins() int { return len(s.edges) - 1 }

// bin is the bin of v (clamped to the ends).
func (s heatScale) bin(v float64) int {
	i := sort.SearchFloat64s(s.edges, v)
	if i < len(s.edges) && s.edges[i] == v {
		i++
	}
	return min(max(i-1, 0), s.bins()-1)
}

// viridis anchors (matplotlib's viridis at 0, ¼, ½, ¾, 1).
var viridis = []color.RGBA{{68, 1, 84, 255}, {59, 82, 139, 255}, {33, 145, 140, 255}, {94, 201, 98, 255}, {253, 231, 37, 255}}

// colour is bin i's colour along viridis.
func (s heatScale) colour(i int) color.Color {
	t := 0.5
	if s.bins() > 1 {
		t = float64(i) / float64(s.bins()-1)
	}
	f := t * float64(len(viridis)-1)
	k := min(int(f), len(viridis)-2)
	u := f - float64(k)
	a, b := viridis[k], viridis[k+1]
	mix := func(x, y uint8) uint8 { return uint8(math.Round(float64(x) + u*(float64(y)-float64(x)))) }
	return color.RGBA{mix(a.R, b.R), mix(a.G, b.G), mix(a.B, b.B), 255}
}

func (s heatScale) label(i int) string {
	f := func(v float64) string { return strconv.FormatFloat(v, 'g', 4, 64) }
	return f(s.edges[i]) + " – " + f(s.edges[i+1])
}

// boundColour fills a cell whose mean is a bound (unstable or truncated:
// aggregate.IsBound): a grey no viridis colour resembles; noColour one
// without a value.
var (
	boundColour = color.RGBA{200, 200, 200, 255}
	noColour    = color.White
)

// heatCells is a plot.Plotter drawing a panel's cells: column i spans
// [i−½, i+½], row j [j−½, j+½]. The cells are one image, cellPx pixels a
// cell (so that a viewer that smooths images blurs only the cells'
// edges), as matplotlib's imshow draws: in the SVG and PDF a few kB
// where a rectangle per cell weighed 2 MB for 12,000 cells.
type heatCells struct {
	cols, rows int
	colour     func(i, j int) color.Color
}

const cellPx = 8

// Plot draws the cells.
func (h heatCells) Plot(c draw.Canvas, p *plot.Plot) {
	tx, ty := p.Transforms(&c)
	img := image.NewRGBA(image.Rect(0, 0, h.cols*cellPx, h.rows*cellPx))
	for j := 0; j < h.rows; j++ {
		for i := 0; i < h.cols; i++ {
			col := h.colour(i, j)
			y0 := (h.rows - 1 - j) * cellPx // image rows run down
			for y := y0; y < y0+cellPx; y++ {
				for x := i * cellPx; x < (i+1)*cellPx; x++ {
					img.Set(x, y, col)
				}
			}
		}
	}
	c.DrawImage(vg.Rectangle{Min: vg.Point{X: tx(-0.5), Y: ty(-0.5)},
		Max: vg.Point{X: tx(float64(h.cols) - 0.5), Y: ty(float64(h.rows) - 0.5)}}, img)
}

func rectPath(x0, y0, x1, y1 vg.Length) vg.Path {
	var r vg.Path
	r.Move(vg.Point{X: x0, Y: y0})
	r.Line(vg.Point{X: x1, Y: y0})
	r.Line(vg.Point{X: x1, Y: y1})
	r.Line(vg.Point{X: x0, Y: y1})
	r.Close()
	return r
}

// swatch is a legend thumbnail: a filled, outlined square.
type swatch struct{ col color.Color }

// Thumbnail draws the swatch.
func (s swatch) Thumbnail(c *draw.Canvas) {
	r := c.Rectangle
	side := min(r.Size().Y, r.Size().X)
	x0 := r.Min.X + (r.Size().X-side)/2
	p := rectPath(x0, r.Min.Y, x0+side, r.Min.Y+side)
	c.SetColor(s.col)
	c.Fill(p)
	c.SetLineStyle(draw.LineStyle{Color: color.Gray{Y: 110}, Width: vg.Points(0.4)})
	c.Stroke(p)
}

// indexTicks labels category positions 0..n−1 with labels, at most
// maxLabels of them (evenly spaced); every position keeps a tick unless
// there are more than twice as many positions as labels.
type indexTicks struct {
	labels    []string
	maxLabels int
}

// Ticks returns a tick per position.
func (t indexTicks) Ticks(lo, hi float64) []plot.Tick {
	every := max(1, (len(t.labels)+t.maxLabels-1)/t.maxLabels)
	var ts []plot.Tick
	for i, l := range t.labels {
		tk := plot.Tick{Value: float64(i)}
		if i%every == 0 {
			tk.Label = drawable(l)
		} else if len(t.labels) > 2*t.maxLabels {
			continue // a tick per cell would be a solid bar
		}
		ts = append(ts, tk)
	}
	return ts
}

// heatMetric is what one heat-map figure draws: a metric's column, or a
// per-class counter's columns by class (aggregate marked it per class:
// Metric.ClassCounter), drawn as the line-plot report draws it, one
// figure with a panel per series and class.
type heatMetric struct {
	name    string         // the column, or the per-class counter's file name (classCounter.name)
	columns map[int]string // a per-class counter's columns by class index; nil otherwise
}

// heatMetrics are the metrics a heat-map group draws: the base metrics
// (not per class) with a value somewhere, in the points' order, a
// per-class counter once where its first column stands; only the mean
// response time once the figures would pass maxHeatFigures.
func heatMetrics(groups []*heatGroup) []heatMetric {
	f, names := heatNames(groups)
	_, grouped := f.classCounters(names)
	var out []heatMetric
	done := map[*classCounter]bool{}
	for _, n := range names {
		switch g := grouped[n]; {
		case g == nil:
			out = append(out, heatMetric{name: n})
		case !done[g]:
			done[g] = true
			out = append(out, heatMetric{name: g.name(names), columns: g.columns})
		}
	}
	if len(out)*len(groups) > maxHeatFigures {
		return []heatMetric{{name: "mean_response"}}
	}
	return out
}

// heatNames are the groups' metric names with a value somewhere, the base
// metrics first in their order, then by name, and the groups' points as a
// facet (for classCounters).
func heatNames(groups []*heatGroup) (*facet, []string) {
	var names []string
	seen := map[string]bool{}
	f := &facet{}
	for _, g := range groups {
		for _, hp := range g.panels {
			for _, p := range hp.cell {
				f.pts = append(f.pts, p)
				for _, m := range p.Metrics {
					if m.Class < 0 && !seen[m.Name] && finite(m.Mean) && m.Mean != 0 {
						seen[m.Name] = true
						names = append(names, m.Name)
					}
				}
			}
		}
	}
	order := map[string]int{}
	for i, m := range metric.Base {
		order[m.Name] = i
	}
	sort.SliceStable(names, func(i, j int) bool {
		oi, iok := order[names[i]]
		oj, jok := order[names[j]]
		switch {
		case iok && jok:
			return oi < oj
		case iok != jok:
			return iok
		}
		return names[i] < names[j]
	})
	return f, names
}

// heatPanels are the panels of hm in g with the column each draws: g's
// panels, or for a per-class counter each of g's panels once per class
// (in class order), titled with the class.
func (g *heatGroup) heatPanels(hm heatMetric) (panels []*heatPanel, cols []string) {
	if hm.columns == nil {
		for _, hp := range g.panels {
			panels, cols = append(panels, hp), append(cols, hm.name)
		}
		return panels, cols
	}
	classes := make([]int, 0, len(hm.columns))
	for ci := range hm.columns {
		classes = append(classes, ci)
	}
	sort.Ints(classes)
	for _, ci := range classes {
		for _, hp := range g.panels {
			sub := *hp
			sub.title = fmt.Sprintf("%s, class %s", hp.title, g.className(ci))
			panels, cols = append(panels, &sub), append(cols, hm.columns[ci])
		}
	}
	return panels, cols
}

// className is the name of class ci in g's points.
func (g *heatGroup) className(ci int) string {
	for _, hp := range g.panels {
		for _, p := range hp.cell {
			if ci < len(p.Classes) {
				return metric.ClassName(ci, p.Classes[ci].Name)
			}
		}
	}
	return metric.ClassName(ci, "")
}

// heatFigure draws metric hm of group g: one panel per series (per series
// and class for a per-class counter; in several files past maxPanels), a
// shared binned colour key; beside it the cells as CSV (rows in panel, row and column order:
// a report rendered again is identical) and the matplotlib script. nil
// when no cell has a value.
func (g *heatGroup) heatFigure(out *files, hm heatMetric, xl string) ([]figure, error) {
	panels, cols := g.heatPanels(hm)
	var vals []float64
	for i, hp := range panels {
		for _, p := range hp.cell {
			if mt, ok := p.Metric(cols[i]); ok && !p.Bound(mt) {
				vals = append(vals, mt.Mean)
			}
		}
	}
	sc, ok := newHeatScale(vals)
	if !ok || len(panels) == 0 {
		return nil, nil
	}
	name := g.prefix + "heat_" + hm.name
	label, title := g.heatLabels(hm, cols[0])
	title = fmt.Sprintf("%s over %s × %s (colour: %s bins)", title, xl, g.yLabel, sc.scale())
	parts := figureParts(name, len(panels))
	for _, pt := range parts {
		if err := g.heatPart(out, pt, panels, cols, xl, label, sc); err != nil {
			return nil, err
		}
	}
	return partFigures(parts, title, true), nil
}

// heatPart draws part pt of a heat map (its panels, its cells as CSV,
// its script), the whole binned colour scale as its key.
func (g *heatGroup) heatPart(out *files, pt figurePart, panels []*heatPanel, cols []string, xl, label string, sc heatScale) error {
	var plots []*plot.Plot
	var csv bytes.Buffer
	csv.WriteString("panel,row,x,mean,hw,reading\n")
	anyBound := false
	for i := pt.lo; i < pt.hi; i++ {
		if panels[i].writeCSV(&csv, cols[i]) {
			anyBound = true
		}
		plots = append(plots, panels[i].plot(cols[i], xl, g.yLabel, sc))
	}
	// The colour key, top (high) to bottom, on the first panel: render
	// moves it to the shared legend (a band under a grid that the strip
	// on the right would make wider than a page).
	var items []legendItem
	for i := sc.bins() - 1; i >= 0; i-- {
		items = append(items, legendItem{sc.label(i), []plot.Thumbnailer{swatch{col: sc.colour(i)}}})
	}
	if anyBound {
		items = append(items, legendItem{"bound (unstable)", []plot.Thumbnailer{swatch{col: boundColour}}})
	}
	items = append(items, legendItem{"no value", []plot.Thumbnailer{swatch{col: noColour}}})
	key := plots[0]
	for _, it := range items {
		key.Legend.Add(it.label, it.thumbs...)
	}
	if len(plots) > 1 {
		legends.Store(key, &items)
	}
	out.put(pt.name+".csv", bytes.Clone(csv.Bytes()))
	if err := writeHeatScript(out, pt.name, xl, g.yLabel, label, sc); err != nil {
		return err
	}
	gr := grid(plots)
	w, h, shared := gridTile(gr)
	return render(out, pt.name, gr, w, h, shared)
}

// scale names the colour scale: linear or logarithmic.
func (sc heatScale) scale() string {
	if sc.log {
		return "logarithmic"
	}
	return "linear"
}

// heatLabels are the colour key's label of hm (whose first column is
// col) and its caption's start.
func (g *heatGroup) heatLabels(hm heatMetric, col string) (label, title string) {
	switch {
	case hm.columns != nil:
		label = g.classCounterLabel(col)
		return label, "policy counter per class: " + label
	case strings.HasPrefix(hm.name, metric.CounterPrefix):
		label = metricLabel(col)
		return label, "policy counter: " + label
	}
	label = metricLabel(col)
	return label, label
}

// classCounterLabel is the label of a per-class counter without its
// class: its policy's label ("jobs preempted") with the ", class <c>"
// aggregate's lookup added taken off, or its column's words.
func (g *heatGroup) classCounterLabel(col string) string {
	for _, hp := range g.panels {
		for _, p := range hp.cell {
			if mt, ok := p.Metric(col); ok && mt.ClassCounter {
				if d := mt.DisplayName(); d != "" {
					return strings.Replace(d, ", class "+g.className(mt.CounterClass), "", 1)
				}
				return metricLabel(mt.Base)
			}
		}
	}
	return metricLabel(col)
}

// value is metric m at column i, row j: its mean, whether it is a bound
// (aggregate.IsBound), and whether there is one.
func (hp *heatPanel) value(m string, i, j int) (mean float64, bound, ok bool) {
	p := hp.cell[[2]int{i, j}]
	if p == nil {
		return math.NaN(), false, false
	}
	mt, found := p.Metric(m)
	if !found || !finite(mt.Mean) {
		return math.NaN(), false, false
	}
	return mt.Mean, p.Bound(mt), true
}

// writeCSV appends the panel's cells of metric m to b and reports whether
// any is a bound.
func (hp *heatPanel) writeCSV(b *bytes.Buffer, m string) (anyBound bool) {
	for j, row := range hp.rows {
		for i, x := range hp.xs {
			v, bound, ok := hp.value(m, i, j)
			if !ok {
				continue
			}
			reading, hw := aggregate.ReadLowerBound, "" // a bound has no interval
			if !bound {
				mt, _ := hp.cell[[2]int{i, j}].Metric(m)
				// "inf" for one replication's, as in every CSV file
				// (aggregate.FormatFloat): it read "+Inf" here.
				reading, hw = aggregate.ReadEstimate, aggregate.FormatFloat(mt.HalfWidth)
			}
			anyBound = anyBound || bound
			fmt.Fprintf(b, "%s,%s,%s,%s,%s,%s\n", csvField(hp.title), csvField(row),
				aggregate.FormatFloat(x), aggregate.FormatFloat(v), hw, reading)
		}
	}
	return anyBound
}

// plot is the panel's plot of metric m on scale sc.
func (hp *heatPanel) plot(m, xl, yl string, sc heatScale) *plot.Plot {
	p := plot.New()
	paperStyle(p)
	p.Title.Text = drawable(hp.title)
	p.X.Label.Text, p.Y.Label.Text = drawable(xl), drawable(yl)
	p.X.Padding, p.Y.Padding = 0, 0
	p.X.Min, p.X.Max = -0.5, float64(len(hp.xs))-0.5
	p.Y.Min, p.Y.Max = -0.5, float64(len(hp.rows))-0.5
	var xls []string
	for _, x := range hp.xs {
		xls = append(xls, strconv.FormatFloat(x, 'g', 3, 64))
	}
	p.X.Tick.Marker = indexTicks{labels: xls, maxLabels: 5}
	p.Y.Tick.Marker = indexTicks{labels: shortLabels(hp.rows), maxLabels: 8}
	p.Add(heatCells{cols: len(hp.xs), rows: len(hp.rows), colour: func(i, j int) color.Color {
		v, bound, ok := hp.value(m, i, j)
		switch {
		case !ok:
			return noColour
		case bound:
			return boundColour
		}
		return sc.colour(sc.bin(v))
	}})
	return p
}

func csvField(s string) string {
	if strings.ContainsAny(s, ",\"\n") {
		return `"` + strings.ReplaceAll(s, `"`, `""`) + `"`
	}
	return s
}

// writeHeatScript puts name.py beside a heat map: a standalone matplotlib
// script redrawing it from name.csv with the same bins and colours
// (--dump writes the drawn grids as JSON, for a test to compare).
func writeHeatScript(out *files, name, xl, yl, ml string, sc heatScale) error {
	var cols []string
	for i := 0; i < sc.bins(); i++ {
		r, g, b, _ := sc.colour(i).RGBA()
		cols = append(cols, fmt.Sprintf("#%02x%02x%02x", r>>8, g>>8, b>>8))
	}
	ej, _ := json.Marshal(sc.edges)
	cj, _ := json.Marshal(cols)
	var buf bytes.Buffer
	err := heatPyTemplate.Execute(&buf, map[string]any{"Name": pyStr(name), "XLabel": pyStr(xl),
		"YLabel": pyStr(yl), "Metric": pyStr(ml), "Edges": pyStr(string(ej)), "Colours": pyStr(string(cj)), "ReadRows": pyReadRows})
	if err != nil {
		return fmt.Errorf("%s.py: %w", name, err)
	}
	out.put(name+".py", bytes.Clone(buf.Bytes()))
	return nil
}

var heatPyTemplate = template.Must(template.New("heatpy").Parse(`#!/usr/bin/env python3
"""Redraw a heat map of msjfarm's report from its CSV with matplotlib (written by msjfarm report).

Columns: panel, row (the y value or policy variant), x, mean, hw (its 95%
confidence half-width; inf for one replication), reading ("estimate", or "lower bound": an unstable
or truncated point, drawn grey and struck through). Rows and columns are
drawn in the order of their values. Run: python3 NAME.py [--out FILE]
"""
import argparse, csv, gzip, json, math, os

import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt
from matplotlib.colors import BoundaryNorm, ListedColormap
from matplotlib.patches import Patch

HERE = os.path.dirname(os.path.abspath(__file__))
NAME = {{.Name}}  # the heat map: NAME.csv beside this script, NAME.pdf msjfarm's drawing
XLABEL, YLABEL, METRIC = {{.XLabel}}, {{.YLabel}}, {{.Metric}}
EDGES = json.loads({{.Edges}})
COLOURS = json.loads({{.Colours}})
plt.rcParams.update({"font.size": 8, "axes.labelsize": 9, "legend.fontsize": 7,
                     "pdf.fonttype": 42, "ps.fonttype": 42, "svg.fonttype": "path"})


{{.ReadRows}}

def key(s):
    try:
        return (0, float(s.split("=")[-1]), s)
    except ValueError:
        return (1, 0.0, s)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.path.join(HERE, NAME + ".mpl.pdf"))
    ap.add_argument("--dump", help="write the drawn grids as JSON")
    args = ap.parse_args()
    rows = read_rows(os.path.join(HERE, NAME + ".csv"))
    panels = []
    for r in rows:
        if r["panel"] not in panels:
            panels.append(r["panel"])
    ncols = min(3, len(panels))
    nrows = math.ceil(len(panels) / ncols)
    # One panel with the key beside it; two or more across a page (6.9 in),
    # the key in a band under them.
    beside = len(panels) == 1
    fig, axes = plt.subplots(nrows, ncols, figsize=(2.3 + 1.3 if beside else 6.9, 1.9 * nrows), squeeze=False)
    for ax in list(axes.flat)[len(panels):]:
        ax.set_visible(False)
    cmap, norm = ListedColormap(COLOURS), BoundaryNorm(EDGES, len(COLOURS))
    drawn = []
    for ax, panel in zip(axes.flat, panels):
        pr = [r for r in rows if r["panel"] == panel]
        xs = sorted({float(r["x"]) for r in pr})
        ys = sorted({r["row"] for r in pr}, key=key)
        z = [[float("nan")] * len(xs) for _ in ys]
        bound = [[float("nan")] * len(xs) for _ in ys]
        for r in pr:
            i, j = xs.index(float(r["x"])), ys.index(r["row"])
            if r["reading"] == "estimate":
                z[j][i] = float(r["mean"])
            else:
                bound[j][i] = 1
        ax.imshow(z, origin="lower", aspect="auto", cmap=cmap, norm=norm, interpolation="nearest")
        ax.imshow(bound, origin="lower", aspect="auto", cmap=ListedColormap(["#c8c8c8"]), interpolation="nearest")
        step = max(1, math.ceil(len(xs) / 5))
        ax.set_xticks(range(0, len(xs), step), ["%g" % x for x in xs[::step]])
        step = max(1, math.ceil(len(ys) / 8))
        ax.set_yticks(range(0, len(ys), step), ys[::step])
        ax.set_title(panel, fontsize=8)
        ax.set_xlabel(XLABEL)
        ax.set_ylabel(YLABEL)
        drawn.append({"panel": panel, "x": xs, "rows": ys, "z": z})
    handles = [Patch(color=c, label="%g – %g" % (EDGES[i], EDGES[i + 1])) for i, c in reversed(list(enumerate(COLOURS)))]
    handles.append(Patch(color="#c8c8c8", label="bound (unstable)"))
    if beside:
        fig.legend(handles=handles, loc="center right", title=METRIC, frameon=False)
        fig.tight_layout(rect=(0, 0, 1 - 1.3 / fig.get_figwidth(), 1))
    else:
        ncol = 4
        band = 0.14 * math.ceil(len(handles) / ncol) + 0.3
        height = fig.get_figheight()
        fig.set_figheight(height + band)
        fig.legend(handles=handles, loc="lower center", ncol=ncol, title=METRIC, frameon=False)
        fig.tight_layout(rect=(0, band / (height + band), 1, 1))
    fig.savefig(args.out)
    if args.dump:
        json.dump(drawn, open(args.dump, "w"))


if __name__ == "__main__":
    main()
`))

// shortLabels are row labels for the axis: numbers to 3 significant
// digits (the CSV keeps them whole), "name=number" as the number.
func shortLabels(rows []string) []string {
	out := make([]string, len(rows))
	for i, r := range rows {
		_, v, named := strings.Cut(r, "=")
		if !named {
			v = r
		}
		if f, err := strconv.ParseFloat(v, 64); err == nil {
			out[i] = strconv.FormatFloat(f, 'g', 3, 64)
			continue
		}
		out[i] = r
	}
	return out
}
