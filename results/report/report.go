// Package report renders a campaign's summary (aggregate.Point values) as
// plots and an index.html a researcher can open in a browser or copy into a
// paper's supplementary material (docs/design.md: campaigns/<id>/report/).
//
// Layout of the plots, chosen to match the papers' figures:
//
//   - x is the swept scenario axis: arrival_rate if swept, else load, else
//     the first other scenario axis (servers, class[i].…), else the load.
//     Other swept scenario axes split the points into facets (one set of
//     plots per combination), since one cannot read three dimensions from a
//     line plot.
//
//   - one line per policy and parameter setting (the legend names the
//     parameters that differ between the lines of a policy);
//
//   - vertical bars: the 95% Student-t CI over independent replications
//     (on a log axis the delta-method interval m·exp(±hw/m), which stays
//     positive; clipped at 1 for bounded quantities);
//
//   - sized for a paper (docs/report.md): 3.3 in wide (and a page-width
//     name_page.pdf), 8–9 pt text, no title inside (the caption has it),
//     the legend inside the axes or in columns under them;
//
//   - log y when the plotted means span two decades or more (response times
//     near saturation), linear otherwise;
//
//   - a point whose means are bounds (aggregate.Point.Unstable: pooled
//     verdict unstable or truncated, or lower-bound means) is not drawn on
//     the line: a filled triangle in the series colour is pinned to the top
//     edge at its x, meaning "diverges / off scale"; the summary table
//     prints its means as "≥ x" without an interval, beside the truncated
//     count and the verdict;
//
//   - dashed vertical lines mark known limits: grey at offered load 1 (on
//     an arrival-rate axis λ* = k / Σ pᵢ nᵢ E[Sᵢ] = λ/ρ of any point; on a
//     load axis ρ = 1), and in a policy's colour its measured λ_max
//     (Campaign.Limits), each only when within 15% of the points' x span
//     (the axis is stretched to show it);
//
//   - metrics identically zero or undefined over a facet (e.g. preemptions
//     of non-preemptive policies) are listed in index.html, not plotted.
//
//   - counters constant at every point of every series (a parameter echoed
//     back, e.g. nmsr's cycle_time) are listed with their values, not
//     plotted.
//
// Files: <metric>.svg/.png/.pdf per base metric and counter, class_<metric>
// panels (one panel per class), msfq_phases when phase counters
// (counter_phase<z>_*) are present, compare_mean_response (the paired
// comparison with the baseline); beside each figure its data as drawn
// (.csv) and a matplotlib script that redraws it (.py); the data: summary.csv (wide),
// summary_long.csv (tidy), replications.csv (when the records are given),
// each also as .parquet, summary.json, COLUMNS.md (their documentation,
// also embedded in the page), manifest.json; and index.html. With several
// facets every figure's name is prefixed by f<i>_.
//
// Render can overlay campaigns (msjfarm report A B): their points are drawn
// in the same figures, each series labelled with its campaign's name.
package report

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"html/template"
	"io"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"gonum.org/v1/plot"

	"github.com/msjfarm/msjfarm/results/aggregate"
	"github.com/msjfarm/msjfarm/results/metric"
	"github.com/msjfarm/msjfarm/results/record"
	"github.com/msjfarm/msjfarm/sim"
	"github.com/msjfarm/msjfarm/sweep"
)

// metricLabels are the y-axis labels of the base and class metrics.
var metricLabels = map[string]string{
	"mean_response":          "mean response time E[T]",
	"weighted_mean_response": "weighted mean response time",
	"mean_wait":              "mean waiting time",
	"p_wait":                 "P(wait > 0)",
	"mean_in_system":         "mean number in system",
	"mean_in_queue":          "mean number waiting",
	"utilization":            "utilisation",
	"throughput":             "throughput (jobs / time)",
	"jain":                   "Jain's fairness index",
	"preemptions":            "preemptions",
	"preempted_jobs":         "jobs preempted",
	"wasted_work":            "wasted work (server-time)",
}

func metricLabel(name string) string {
	if l, ok := metricLabels[name]; ok {
		return l
	}
	if c, ok := strings.CutPrefix(name, metric.CounterPrefix); ok {
		// The counter's name in words ("phase1_mean" → "phase 1 mean"),
		// for a counter its policy does not describe (facet.metricLabel
		// prefers the policy's label and unit).
		return counterWords.ReplaceAllString(strings.ReplaceAll(c, "_", " "), "$1 $2")
	}
	return name
}

// metricLabel is how the facet's figures name metric m: the label and unit
// the policy gives a counter (aggregate.Metric.DisplayName, from the
// policy's sdk.CounterDescriber), else the package's label for the column.
func (f *facet) metricLabel(m string) string {
	if mt, ok := f.described(m); ok {
		return mt.DisplayName()
	}
	return metricLabel(m)
}

// columnOrLabel names metric m in the report's notes: the policy's label
// and unit for a counter it describes, the column name otherwise.
func (f *facet) columnOrLabel(m string) string {
	if mt, ok := f.described(m); ok {
		return mt.DisplayName()
	}
	return m
}

// figureTitle is the caption of metric m's figure: its label, and for a
// policy counter "policy counter: " before it and the policy's doc after.
func (f *facet) figureTitle(m string) string {
	title := f.metricLabel(m)
	if !strings.HasPrefix(m, metric.CounterPrefix) {
		return title
	}
	title = "policy counter: " + title
	if mt, ok := f.described(m); ok && mt.Doc != "" {
		title += ". " + mt.Doc
	}
	return title
}

// phaseDocs are the unit and the distinct docs (the policy's phase names)
// of the phase counters ms, for the phase figure's axis and caption.
func (f *facet) phaseDocs(ms []string) (unit string, docs []string) {
	for _, m := range ms {
		mt, ok := f.described(m)
		if !ok {
			continue
		}
		unit = mt.Unit
		if mt.Doc != "" && !slices.Contains(docs, mt.Doc) {
			docs = append(docs, mt.Doc)
		}
	}
	return unit, docs
}

// described returns metric m of the first of the facet's points whose
// policy describes it (a label), if any. Only counters are described.
func (f *facet) described(m string) (aggregate.Metric, bool) {
	if !strings.HasPrefix(m, metric.CounterPrefix) {
		return aggregate.Metric{}, false
	}
	for _, p := range f.pts {
		if mt, ok := p.Metric(m); ok && mt.Label != "" {
			return mt, true
		}
	}
	return aggregate.Metric{}, false
}

// counterWords splits a letter run from the digits that follow it
// ("phase1" → "phase 1").
var counterWords = regexp.MustCompile(`([a-z])([0-9])`)

var xLabels = map[string]string{"arrival_rate": "arrival rate λ", "load": "load ρ", "servers": "servers k", categoryAxis: "policy"}

// categoryAxis is the x axis of a campaign with no swept scenario axis (a
// replayed trace, whose λ and ρ are not parameters and are 0 in its
// points; or a single scenario): its series are categories, a point each,
// side by side (curve.cats). Such a campaign was drawn against "load ρ"
// with every series at a fake ρ = 0, on an axis from −0.4 to 0.4.
const categoryAxis = "\x00series"

// plotAxes is xAxis, with categoryAxis as x when no point carries the x
// axis xAxis chose (it has none to choose from).
func plotAxes(pts []aggregate.Point) (x string, others []string) {
	x, others = xAxis(pts)
	for i := range pts {
		if _, ok := pts[i].Axes[x]; ok {
			return x, others
		}
	}
	if len(pts) == 0 {
		return x, others
	}
	return categoryAxis, others
}

// series is one policy and parameter setting within a facet.
type series struct {
	key, label, policy string
	tag                string // the campaign's name when campaigns are overlaid
	params             map[string]any
	styleIdx           int // 1 + the style of a family member (familyStyles); 0: by index
	pts                []*aggregate.Point
}

// facet is the set of points sharing every swept scenario axis but x.
type facet struct {
	key, title, prefix string
	pts                []*aggregate.Point
	series             []*series
	lines              []vline // known limits on the x axis (limitLines)
	// cats names the series when x is categoryAxis: series i is at x = i+1.
	cats []string
	// split is the values of the swept axes that make this facet
	// ("servers = 512"), for its figures' captions; "" for none.
	split string
	// styles and approx are the styles of the series and of their
	// approximation curves (assignStyles).
	styles, approx []int
}

// xOf is the x of the point p of f's i-th series: its category on a
// categorical axis, else xValue.
func (f *facet) xOf(i int, p *aggregate.Point, x string) float64 {
	if x == categoryAxis {
		return float64(i + 1)
	}
	return xValue(p, x)
}

// Figure is one rendered figure (both formats) for index.html.
type figure struct {
	Name, Title string
	Wide        bool // a grid of panels: shown at full page width
}

type facetView struct {
	Title, Anchor string
	Figures       []figure
	Skipped       []string
	Constant      []string
	Facets        int
	TableRows     []tableRow
	Compare       *cmpView
	// Heat: the figures are heat maps (a campaign too large for line
	// plots, heatLayout).
	Heat bool
	// TableNote replaces the summary table when it is too long for a
	// page (maxTableRows); NoTable leaves the section out (a heat-map
	// group after the first, whose rows the first lists).
	TableNote string
	NoTable   bool
}

type tableRow struct {
	Cells    []cell
	Unstable bool
	Failed   bool
}

// cell is a summary table cell: its text and, for a number, the value the
// table sorts by (the text "12.3 ± 0.4" sorts by 12.3).
type cell struct {
	Text string
	// Sort is the number the cell sorts by (sortKey), "" for undefined;
	// with Num it is written as the cell's data-v even when empty, which
	// the page's script sorts after every value in either direction.
	// Without Num and Sort the cell sorts by its text.
	Sort string
	Num  bool
	// Class is the cell's CSS class ("failed": coloured when the row's
	// replications failed), "" for none.
	Class string
}

func formatValue(v any) string {
	if f, ok := aggregate.Number(v); ok {
		if _, isStr := v.(string); !isStr {
			return strconv.FormatFloat(f, 'g', -1, 64)
		}
	}
	if s, ok := v.(string); ok {
		return s
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// xAxis chooses the x axis of the plots and the other scenario axes
// (aggregate.PlotAxes, which the paired comparisons' families share).
func xAxis(pts []aggregate.Point) (x string, others []string) { return aggregate.PlotAxes(pts) }

// xValue is p's value on the x axis: the swept value as the sweep file
// gave it (a load of 0.95, not the 0.9499999999999998 computed back from
// λ), else the point's arrival rate or load.
func xValue(p *aggregate.Point, x string) float64 {
	if v, ok := p.Axes[x]; ok {
		if f, ok := aggregate.Number(v); ok {
			return f
		}
	}
	switch x {
	case "arrival_rate":
		return p.ArrivalRate
	case "load":
		return p.Load
	}
	if f, ok := aggregate.Number(p.Axes[x]); ok {
		return f
	}
	return math.NaN()
}

func paramsKey(p map[string]any) string {
	b, _ := json.Marshal(p) // sorted keys
	return string(b)
}

// facets groups the points (in order of first appearance) by workload and
// the scenario axes other than x, and each facet's points by series. tags
// names each point's campaign when campaigns are overlaid (nil otherwise):
// the same policy and parameters of two campaigns are two series.
func facets(pts []aggregate.Point, tags []string, x string, others []string) []*facet {
	var out []*facet
	byKey := map[string]*facet{}
	tagOf := map[*aggregate.Point]string{}
	for i := range pts {
		p := &pts[i]
		if tags != nil {
			tagOf[p] = tags[i]
		}
		parts := []string{p.Workload}
		for _, a := range others {
			v, ok := p.Axes[a]
			s := "–"
			if ok {
				s = formatValue(v)
			}
			parts = append(parts, a+"="+s)
		}
		key := strings.Join(parts, "\x00")
		f := byKey[key]
		if f == nil {
			f = &facet{key: key}
			byKey[key] = f
			out = append(out, f)
		}
		f.pts = append(f.pts, p)
	}
	for _, f := range out {
		f.title, f.split = facetTitle(f.pts, others)
	}
	for i, f := range out {
		if len(out) > 1 {
			f.prefix = fmt.Sprintf("f%d_", i+1)
		}
		bySeries := map[string]*series{}
		for _, p := range f.pts {
			k := tagOf[p] + "\x00" + p.Policy + " " + paramsKey(p.Params)
			s := bySeries[k]
			if s == nil {
				s = &series{key: k, policy: p.Policy, params: p.Params, tag: tagOf[p]}
				bySeries[k] = s
				f.series = append(f.series, s)
			}
			s.pts = append(s.pts, p)
		}
		labelSeries(f.series)
		uniqueLabels(f.series)
		familyStyles(f.series)
		if x == categoryAxis {
			for _, s := range f.series {
				f.cats = append(f.cats, s.label)
			}
		}
	}
	return out
}

// facetTitle is the heading of a facet of pts: the workload, its k when
// every point has the same and servers is not a swept axis (b-fig1's
// servers 32 … 2048 on the x axis read "(k = 32)" for them all), and the
// values of the axes others that split the facets (split, alone).
func facetTitle(pts []*aggregate.Point, others []string) (title, split string) {
	p := pts[0]
	t := p.Workload
	k, swept := p.Servers, false
	for _, q := range pts {
		_, ax := q.Axes["servers"]
		swept = swept || ax || q.Servers != k
	}
	if !swept {
		t += fmt.Sprintf(" (k = %d)", k)
	}
	var parts []string
	for _, a := range others {
		s := "–"
		if v, ok := p.Axes[a]; ok {
			s = formatValue(v)
		}
		parts = append(parts, a+" = "+s)
	}
	if len(parts) > 0 {
		split = strings.Join(parts, ", ")
		t += ", " + split
	}
	return t, split
}

// familyStyles draws the variants of a policy swept over two or more
// parameters as families (Kill-Smart's K × ν): one colour per value of
// the first varied parameter, the others told apart by marker and dash
// (style c + 7v: colour c, dash v, and a marker that differs with v:
// styleOf). Other series keep a colour of their own. Without such a
// policy, or with more than 7 colours needed, every series keeps its
// index (styleOf's colour × marker × dash sequence). These are the
// styles asked for: assignStyles moves a variant whose marker and dash
// another series has (a family of 5 or more variants) to a free one.
func familyStyles(ss []*series) {
	if len(ss) > 0 && ss[0].tag != "" {
		return // overlaid campaigns: wantStyle assigns per campaign
	}
	colour := map[string]int{} // policy + first varied value → colour
	within := map[string]int{} // the same → next variant index
	style := make([]int, len(ss))
	family := false
	for i, s := range ss {
		key := s.policy
		if vary := variedParams(ss, s.policy); len(vary) >= 2 {
			key += "\x00" + paramsKey(map[string]any{"v": s.params[vary[0]]})
			family = true
		}
		c, ok := colour[key]
		if !ok {
			c = len(colour)
			colour[key] = c
		}
		style[i] = c + len(palette)*within[key]
		within[key]++
	}
	if !family || len(colour) > len(palette) {
		return
	}
	for i, s := range ss {
		s.styleIdx = style[i] + 1 // 0: unset
	}
}

// variedParams are the parameters whose values differ between the series
// of policy, sorted.
func variedParams(ss []*series, policy string) []string {
	vals := map[string]map[string]bool{}
	n := 0
	for _, s := range ss {
		if s.policy != policy {
			continue
		}
		n++
		for k, v := range s.params {
			if vals[k] == nil {
				vals[k] = map[string]bool{}
			}
			vals[k][paramsKey(map[string]any{"v": v})] = true
		}
	}
	var out []string
	for k, vs := range vals {
		if len(vs) > 1 {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

// labelSeries names each series by its policy and the parameters whose
// values differ between the series of that policy ("msfq threshold=31"),
// prefixed by its campaign's name when campaigns are overlaid.
func labelSeries(ss []*series) {
	byPolicy := map[string][]*series{}
	for _, s := range ss {
		byPolicy[s.tag+"\x00"+s.policy] = append(byPolicy[s.tag+"\x00"+s.policy], s)
	}
	for _, group := range byPolicy {
		vary := map[string]bool{}
		for _, s := range group {
			for k, v := range s.params {
				for _, o := range group {
					if ov, ok := o.params[k]; !ok || paramsKey(map[string]any{"v": ov}) != paramsKey(map[string]any{"v": v}) {
						vary[k] = true
					}
				}
			}
		}
		keys := make([]string, 0, len(vary))
		for k := range vary {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, s := range group {
			l := s.policy
			if s.tag != "" {
				l = s.tag + ": " + l
			}
			for _, k := range keys {
				if v, ok := s.params[k]; ok {
					l += " " + k + "=" + formatValue(v)
				}
			}
			s.label = l
		}
	}
}

// uniqueLabels tells apart series whose labels labelSeries made the same:
// parameters that differ only in type (a threshold 31 and "31") print
// alike. Two curves of one label were two legend entries of one name, and
// one series in the figure's CSV and script, which group rows by label.
// Such a label gets the series' parameters as JSON.
func uniqueLabels(ss []*series) {
	n := map[string]int{}
	for _, s := range ss {
		n[s.label]++
	}
	for _, s := range ss {
		if n[s.label] > 1 {
			s.label += " " + paramsKey(s.params)
		}
	}
}

// style is the drawing style of the i-th series of f, as f.assignStyles
// chose it.
func (s *series) style(f *facet, i int) int {
	f.assignStyles()
	return f.styles[i]
}

// approxStyle is the drawing style of the i-th series' approximation curve
// (msfqOverlay): the series' colour, another marker or dash.
func (f *facet) approxStyle(i int) int {
	f.assignStyles()
	return f.approx[i]
}

// wantStyle is the style the i-th series of f asks for: a family member's
// (familyStyles), or its index, or, when campaigns are overlaid, its index
// within its campaign plus a block of styles per campaign (7 per 7 series
// of the largest campaign), so that a policy keeps its colour across the
// campaigns and the campaigns differ by dash and glyph.
func (f *facet) wantStyle(i int) int {
	s := f.series[i]
	if s.styleIdx > 0 {
		return s.styleIdx - 1
	}
	if s.tag == "" {
		return i
	}
	var tags []string
	size := map[string]int{}
	for _, o := range f.series {
		if !slices.Contains(tags, o.tag) {
			tags = append(tags, o.tag)
		}
		size[o.tag]++
	}
	block := 0
	for _, n := range size {
		block = max(block, (n+len(palette)-1)/len(palette)*len(palette))
	}
	within := 0
	for _, o := range f.series[:i] {
		if o.tag == s.tag {
			within++
		}
	}
	return within + slices.Index(tags, s.tag)*block
}

// assignStyles gives every series of f, and every MSFQ series'
// approximation curve, a style whose marker and dash no other curve of
// the facet has (distinctStyles), in the series' order and then the
// approximations', so that the series keep their styles whether a figure
// draws approximations or not. The preferred styles (wantStyle, an
// approximation: its series' + 14, two dash patterns on) collided: three
// overlaid campaigns drew the first campaign's MSFQ approximation exactly
// as the third campaign's first series, and an overlaid campaign's 8th
// series as its 1st.
func (f *facet) assignStyles() {
	if len(f.styles) == len(f.series) {
		return
	}
	n := len(f.series)
	want := make([]int, 0, 2*n)
	for i := range f.series {
		want = append(want, f.wantStyle(i))
	}
	var msfq []int
	for i, s := range f.series {
		if s.policy == "msfq" {
			msfq = append(msfq, i)
			want = append(want, want[i]+2*len(palette))
		}
	}
	got := distinctStyles(want)
	f.styles, f.approx = got[:n], make([]int, n)
	for j, i := range msfq {
		f.approx[i] = got[n+j]
	}
}

// maxStyles is how many curves a figure tells apart without colour (in a
// greyscale print): one per marker and dash pattern.
var maxStyles = len(shapes) * len(dashes)

// greyKey is what a style looks like without colour: its marker and dash
// pattern (styleOf), one of maxStyles values.
func greyKey(s int) int {
	return s%len(shapes) + len(shapes)*((s/len(palette))%len(dashes))
}

// distinctStyles returns want with each style whose marker and dash an
// earlier one already has replaced: by the next of the same colour (s + 7,
// s + 14, …: 8 of the 32 markers and dashes) whose marker and dash are
// free, else by the first free style of another colour. So up to
// maxStyles curves are pairwise distinct in greyscale as well as in
// colour, and keep the colour they asked for while it has a free marker
// and dash. Past maxStyles each surplus curve takes the first style whose
// colour, marker and dash together no earlier curve has (it repeats a
// marker and dash, not a whole style), up to distinctFull curves; only
// past those are two curves drawn alike. crowdedNote says which in the
// figure's caption. (Before, the surplus kept the style it asked for, and
// from 39 curves on two could be drawn alike while the caption said
// colour told them apart.)
func distinctStyles(want []int) []int {
	used := make([]bool, maxStyles)
	usedFull := make([]bool, distinctFull)
	got := make([]int, len(want))
	for i, w := range want {
		got[i] = w
		found := false
		for j := 0; j < maxStyles*len(palette); j++ {
			// j < 32: w's colour (its 8 markers and dashes recur
			// every 8 steps of 7); then any style, in order.
			s := w + j*len(palette)
			if j >= maxStyles {
				s = j - maxStyles
			}
			if !used[greyKey(s)] {
				got[i], found = s, true
				break
			}
		}
		for s := 0; !found && s < distinctFull; s++ {
			if !usedFull[s] {
				got[i], found = s, true
			}
		}
		used[greyKey(got[i])] = true
		usedFull[got[i]%distinctFull] = true
	}
	return got
}

// distinctFull is how many styles differ in colour, marker or dash
// pattern: style s and s + 56 are drawn alike (7 colours and 8 markers
// recur every 56 styles together, and the dash, which steps every 7, then
// too), so past 56 curves two are the same on the page.
var distinctFull = len(palette) * len(shapes)

// crowdedNote is the caption's note for a figure whose curves cs are more
// than maxStyles: some share a marker and dash pattern, and only colour
// and the legend tell them apart; "" otherwise.
func crowdedNote(cs []curve) string {
	grey, full := map[int]bool{}, map[int]bool{}
	greyRepeats, fullRepeats := false, false
	for _, c := range cs {
		g, f := greyKey(c.style), c.style%distinctFull
		greyRepeats = greyRepeats || grey[g]
		fullRepeats = fullRepeats || full[f]
		grey[g], full[f] = true, true
	}
	switch {
	case fullRepeats:
		return fmt.Sprintf(" (%d curves: past %d, some are drawn alike in colour, marker and dash)", len(cs), distinctFull)
	case greyRepeats:
		return fmt.Sprintf(" (%d curves: past %d, markers and dash patterns repeat; colour tells them apart)", len(cs), maxStyles)
	}
	return ""
}

// curvesFor builds one curve per series for the metric named m.
func curvesFor(f *facet, x, m string) (cs []curve, any bool) {
	for i, s := range f.series {
		c := curve{label: s.label, style: s.style(f, i), cats: f.cats}
		for _, p := range s.pts {
			mt, ok := p.Metric(m)
			if !ok {
				continue
			}
			if finite(mt.Mean) && mt.Mean != 0 {
				any = true
			}
			c.bound = boundOf(mt)
			c.add(f.xOf(i, p, x), mt.Mean, mt.HalfWidth, p.Bound(mt))
		}
		if len(c.x) > 0 {
			c.sortByX()
			cs = append(cs, c)
		}
	}
	return cs, any
}

// boundOf is the largest value a metric can take (by Metric.Base), 0 for
// none: probabilities, utilisation, Jain's index and counters that are
// fractions (declared so by their policy, or named so) are at most 1, so
// their intervals are clipped there.
func boundOf(mt aggregate.Metric) float64 {
	base := mt.Base
	switch {
	case base == "p_wait" || base == "utilization" || base == "jain" || mt.Kind == sim.KindFraction:
		return 1
	case strings.HasPrefix(base, metric.CounterPrefix) && strings.Contains(base, "fraction"):
		return 1
	}
	return 0
}

var phaseRE = regexp.MustCompile(`^counter_phase(\d+)_(.+)$`)

// constantCounter reports whether every series' curve is constant: the
// same finite mean at every stable point with a zero-width interval (a
// policy parameter echoed as a counter, e.g. nmsr's cycle_time). desc lists
// the values by series.
func constantCounter(cs []curve) (desc string, constant bool) {
	var parts []string
	for _, c := range cs {
		v, seen := 0.0, false
		for i, m := range c.mean {
			if c.unstable[i] || !finite(m) {
				continue
			}
			if h := c.hw[i]; h != 0 && !math.IsNaN(h) {
				return "", false
			}
			if seen && m != v {
				return "", false
			}
			v, seen = m, true
		}
		if !seen {
			return "", false
		}
		parts = append(parts, c.label+": "+strconv.FormatFloat(v, 'g', -1, 64))
	}
	return strings.Join(parts, ", "), len(parts) > 0
}

// figures draws the facet's figures: one per metric with a value (a
// counter constant everywhere is listed, not drawn; a per-class counter
// is one figure with a panel per class), the per-class panels, MSFQ's phases and the paired comparison. skipped and constant
// name the metrics not drawn.
func (f *facet) figures(out *files, x string) (figs []figure, skipped, constant []string, err error) {
	xl := axisLabel(x)
	names, classes := f.metricNames()
	// A per-class counter is one figure, a panel per class, where its
	// first class's column stands.
	_, grouped := f.classCounters(names)
	drawn := map[*classCounter]bool{}
	for _, m := range names {
		if g := grouped[m]; g != nil {
			if drawn[g] {
				continue
			}
			drawn[g] = true
			cf, sk, co, err := f.classCounterFigure(out, x, xl, g, names)
			if err != nil {
				return nil, nil, nil, err
			}
			figs = append(figs, cf...)
			skipped, constant = append(skipped, sk...), append(constant, co...)
			continue
		}
		fig, why, err := f.metricFigure(out, x, xl, m)
		switch {
		case err != nil:
			return nil, nil, nil, err
		case fig != nil:
			figs = append(figs, *fig)
		case why == "":
			skipped = append(skipped, m)
		default:
			constant = append(constant, f.columnOrLabel(m)+" ("+why+")")
		}
	}
	// Per-class panels, one figure per class metric.
	for _, cm := range metric.Class {
		if classes == 0 {
			break
		}
		cf, err := f.classFigure(out, x, xl, cm.Name, classes)
		if err != nil {
			return nil, nil, nil, err
		}
		if cf == nil {
			skipped = append(skipped, "class_"+cm.Name)
			continue
		}
		figs = append(figs, cf...)
	}
	// MSFQ phases: one panel per (phase statistic, series), one line per phase.
	pf, err := f.phaseFigure(out, x, xl, names)
	if err != nil {
		return nil, nil, nil, err
	}
	figs = append(figs, pf...)
	fig, err := f.comparisonFigure(out, x, xl)
	if err != nil {
		return nil, nil, nil, err
	}
	if fig != nil {
		figs = append(figs, *fig)
	}
	return figs, skipped, constant, nil
}

// metricNames is the union of the facet's metric names (not per class),
// in the points' order, and its largest number of classes.
func (f *facet) metricNames() (names []string, classes int) {
	seen := map[string]bool{}
	for _, p := range f.pts {
		classes = max(classes, len(p.Classes))
		for _, m := range p.Metrics {
			if m.Class < 0 && !seen[m.Name] {
				seen[m.Name] = true
				names = append(names, m.Name)
			}
		}
	}
	return names, classes
}

// metricFigure draws metric m against x; nil, with constant the values
// of a counter constant at every point (listed instead) or "" for a
// metric zero or undefined everywhere.
func (f *facet) metricFigure(out *files, x, xl, m string) (fig *figure, constant string, err error) {
	cs, nonzero := curvesFor(f, x, m)
	if !nonzero {
		return nil, "", nil
	}
	counter := strings.HasPrefix(m, metric.CounterPrefix)
	if counter {
		if desc, ok := constantCounter(cs); ok {
			return nil, desc, nil
		}
	}
	if x == "arrival_rate" {
		cs = append(cs, msfqOverlay(f, m)...)
	}
	yl := f.metricLabel(m)
	title := f.figureTitle(m) + crowdedNote(cs)
	p := newPlot("", xl, yl, cs, true, f.lines...)
	name := f.prefix + m
	if err := writeEditable(out, name, xl, yl, []panelData{{cs: cs}}, false); err != nil {
		return nil, "", err
	}
	if err := render(out, name, [][]*plot.Plot{{p}}, colW, colH, false); err != nil {
		return nil, "", err
	}
	return &figure{Name: name, Title: title}, "", nil
}

// classFigure draws class metric cm, a panel per class (in several files
// past maxPanels classes); nil when it is zero or undefined in every class.
func (f *facet) classFigure(out *files, x, xl, cm string, classes int) ([]figure, error) {
	var panels []*plot.Plot
	var data []panelData
	var empty []string
	nonzero := false
	for ci := 0; ci < classes; ci++ {
		cname, need := f.class(ci)
		name := metric.ClassPrefix(ci, cname) + cm
		cs, nz := curvesFor(f, x, name)
		nonzero = nonzero || nz
		t := fmt.Sprintf("class %d: %s (need %d)", ci, cname, need)
		if !anyMark(cs) {
			// A class no job of which arrived (share 0): its panel was
			// titled "(no data)", with axes from −1 to 1, half of a
			// two-class figure.
			empty = append(empty, fmt.Sprintf("class %d: %s", ci, cname))
			continue
		}
		panels = append(panels, newPlot(t, xl, metricLabel(cm), cs, true, f.lines...))
		data = append(data, panelData{title: t, cs: cs})
	}
	if !nonzero || len(panels) == 0 {
		return nil, nil
	}
	parts, err := drawPanels(out, f.prefix+"class_"+cm, xl, metricLabel(cm), data, panels)
	if err != nil {
		return nil, err
	}
	title := "per class: " + metricLabel(cm) + crowdedNote(data[0].cs)
	if len(empty) > 0 {
		title += " (no data, not drawn: " + strings.Join(empty, "; ") + ")"
	}
	return partFigures(parts, title, len(panels) > 1), nil
}

// anyMark reports whether some curve of cs has a point to draw: a finite
// mean or an unstable point's marker.
func anyMark(cs []curve) bool {
	for _, c := range cs {
		for i, m := range c.mean {
			if finite(m) || c.unstable[i] {
				return true
			}
		}
	}
	return false
}

// phaseFigure draws MSFQ's phase statistics: a row of panels per
// statistic, a panel per series (a grid split into files of at most a
// page when the rows do not fit one).
func (f *facet) phaseFigure(out *files, x, xl string, names []string) ([]figure, error) {
	type key struct {
		phase int
		stat  string
	}
	var stats []string
	phases := map[string][]int{}
	metric := map[key]string{}
	var phaseNames []string
	for _, n := range names {
		m := phaseRE.FindStringSubmatch(n)
		if m == nil {
			continue
		}
		z, _ := strconv.Atoi(m[1])
		if _, ok := phases[m[2]]; !ok {
			stats = append(stats, m[2])
		}
		phases[m[2]] = append(phases[m[2]], z)
		metric[key{z, m[2]}] = n
		phaseNames = append(phaseNames, n)
	}
	if len(stats) == 0 {
		return nil, nil
	}
	var rows [][]*plot.Plot
	var data []panelData
	_, docs := f.phaseDocs(phaseNames) // the policy's phase names, for the caption
	for _, st := range stats {
		sort.Ints(phases[st])
		var row []*plot.Plot
		unit, _ := f.phaseDocs([]string{metric[key{phases[st][0], st}]})
		yl := sim.CounterInfo{Label: "phase " + st, Unit: unit}.AxisLabel()
		if x == categoryAxis {
			// One panel for the statistic, the series side by side and
			// each series' phases spread about its slot.
			cs := f.phaseCategories(phases[st], func(z int) string { return metric[key{z, st}] })
			if len(cs) > 0 {
				rows = append(rows, []*plot.Plot{newPlot("phase "+st, xl, yl, cs, true)})
				data = append(data, panelData{title: "phase " + st, cs: cs})
			}
			continue
		}
		for _, s := range f.series {
			var cs []curve
			for zi, z := range phases[st] {
				c := curve{label: fmt.Sprintf("phase %d", z), style: zi}
				for _, p := range s.pts {
					if mt, ok := p.Metric(metric[key{z, st}]); ok {
						c.add(xValue(p, x), mt.Mean, mt.HalfWidth, p.Bound(mt))
					}
				}
				if len(c.x) > 0 {
					c.sortByX()
					cs = append(cs, c)
				}
			}
			if len(cs) == 0 {
				continue
			}
			row = append(row, newPlot(s.label+": phase "+st, xl, yl, cs, true))
			data = append(data, panelData{title: s.label + ": phase " + st, cs: cs})
		}
		if len(row) > 0 {
			rows = append(rows, row)
		}
	}
	if len(rows) == 0 {
		return nil, nil
	}
	title := "MSFQ phases (Quickswap Fig. 4)"
	if len(docs) > 0 {
		title += ". " + strings.Join(docs, "; ")
	}
	name := f.prefix + "msfq_phases"
	wide := len(rows) > 1 || len(rows[0]) > 1
	if x == categoryAxis || len(rows) > gridRows || slices.ContainsFunc(rows, func(r []*plot.Plot) bool { return len(r) > gridCols }) {
		// Laid out as a grid, split into files of at most a page: the
		// categories' panels, or a row per statistic too long or too
		// many rows (the panels' titles name series and statistic).
		var ps []*plot.Plot
		for _, r := range rows {
			ps = append(ps, r...)
		}
		parts, err := drawPanels(out, name, xl, "phase statistic", data, ps)
		if err != nil {
			return nil, err
		}
		return partFigures(parts, title, wide), nil
	}
	if err := writeEditable(out, name, xl, "phase statistic", data, false); err != nil {
		return nil, err
	}
	w, h, shared := gridTile(rows)
	if err := render(out, name, rows, w, h, shared); err != nil {
		return nil, err
	}
	return []figure{{Name: name, Title: title, Wide: wide}}, nil
}

// phaseCategories are the curves of a phase panel on a categorical axis: a
// curve per phase of zs (its counter named by col), at each series'
// category, the phases spread across a third of its slot.
func (f *facet) phaseCategories(zs []int, col func(z int) string) []curve {
	var cs []curve
	for zi, z := range zs {
		c := curve{label: fmt.Sprintf("phase %d", z), style: zi, cats: f.cats}
		off := 0.0
		if len(zs) > 1 {
			off = (float64(zi)/float64(len(zs)-1) - 0.5) / 3
		}
		for i, s := range f.series {
			for _, p := range s.pts {
				if mt, ok := p.Metric(col(z)); ok {
					c.add(f.xOf(i, p, categoryAxis)+off, mt.Mean, mt.HalfWidth, p.Bound(mt))
				}
			}
		}
		if len(c.x) > 0 {
			c.sortByX()
			cs = append(cs, c)
		}
	}
	return cs
}

// A figure file is at most a page: rows of at most gridCols panels (three
// 2.3 in panels, 6.9 in) and at most gridRows rows (7.6 in, leaving of a
// page's 9 in of text height room for the shared legend's band and the
// caption). A figure of more panels is split into several files
// (figureParts). Before, a grid of more than 9 panels was drawn four
// across (9.2 in) and of more than 24 six across (13.8 in), 40 panels
// 13.8 × 13.3 in, and its matplotlib script 6.9 × 26.6 in.
const (
	gridCols  = 3
	gridRows  = 4
	maxPanels = gridCols * gridRows
)

// grid lays panels out in rows of at most gridCols (a figure of more than
// maxPanels is split first: figureParts).
func grid(ps []*plot.Plot) [][]*plot.Plot {
	cols := min(gridCols, len(ps))
	var out [][]*plot.Plot
	for i := 0; i < len(ps); i += cols {
		out = append(out, ps[i:min(i+cols, len(ps))])
	}
	return out
}

// figurePart is one file of a figure: its name and its panels [lo, hi)
// of the figure's n.
type figurePart struct {
	name      string
	lo, hi, n int
}

// figureParts splits figure name of n panels into files of at most
// maxPanels panels each, in panel order, as even as can be (40 panels:
// four files of 10): name itself when they fit in one, else name-1,
// name-2, … (name-01, … past 9 files, so that the names sort in order).
// Every panel is in exactly one file.
func figureParts(name string, n int) []figurePart {
	k := max(1, (n+maxPanels-1)/maxPanels)
	if k == 1 {
		return []figurePart{{name: name, lo: 0, hi: n, n: n}}
	}
	digits := len(strconv.Itoa(k))
	parts := make([]figurePart, k)
	for i := range parts {
		parts[i] = figurePart{name: fmt.Sprintf("%s-%0*d", name, digits, i+1), lo: i * n / k, hi: (i + 1) * n / k, n: n}
	}
	return parts
}

// partFigures are the index's entries of a figure's parts, each captioned
// title and, for a figure split into several files, which part of how
// many and which of its panels it holds.
func partFigures(parts []figurePart, title string, wide bool) []figure {
	figs := make([]figure, len(parts))
	for i, p := range parts {
		figs[i] = figure{Name: p.name, Title: title, Wide: wide}
		if len(parts) > 1 {
			figs[i].Title += fmt.Sprintf(" (part %d of %d: panels %d–%d of %d)", i+1, len(parts), p.lo+1, p.hi, p.n)
		}
	}
	return figs
}

// drawPanels writes figure name of plots (data their curves, for the CSV
// and the matplotlib script) as grids of at most a page, split into
// figureParts' files.
func drawPanels(out *files, name, xl, yl string, data []panelData, plots []*plot.Plot) ([]figurePart, error) {
	parts := figureParts(name, len(plots))
	for _, p := range parts {
		if err := writeEditable(out, p.name, xl, yl, data[p.lo:p.hi], false); err != nil {
			return nil, err
		}
		g := grid(plots[p.lo:p.hi])
		w, h, shared := gridTile(g)
		if err := render(out, p.name, g, w, h, shared); err != nil {
			return nil, err
		}
	}
	return parts, nil
}

// tableMetrics are the metrics of the HTML summary table (all of them are
// in summary.csv).
var tableMetrics = []string{"mean_response", "weighted_mean_response", "mean_wait", "p_wait",
	"mean_in_system", "utilization", "throughput", "jain"}

func fmtNum(x float64) string {
	switch {
	case math.IsNaN(x):
		return "—"
	case math.IsInf(x, 0):
		return aggregate.FormatInf(x) // was "-Inf" for −∞
	}
	return strconv.FormatFloat(x, 'g', 4, 64)
}

// fmtMeanHW prints "mean ± half-width": the half-width as fmtNum prints it
// (4 significant digits), the mean to the same decimal place, so that the
// two read at one precision ("11.000 ± 1.085", not "11 ± 1.085": the mean
// was rounded to 4 significant digits of its own, fewer decimals than its
// interval's). Without a finite positive half-width (0, ∞, undefined) the
// mean is printed as fmtNum prints it.
func fmtMeanHW(mean, hw float64) string {
	h := fmtNum(hw)
	if !finite(mean) || !finite(hw) || hw <= 0 {
		return fmtNum(mean) + " ± " + h
	}
	// The decimal place of the half-width's last digit as printed:
	// "1.085" → 3, "0.0976" → 4, "1.5e-05" → 6, "1.234e+04" → −1.
	mant, exp, _ := strings.Cut(h, "e")
	dec := 0
	if _, frac, ok := strings.Cut(mant, "."); ok {
		dec = len(frac)
	}
	if exp != "" {
		e, _ := strconv.Atoi(exp)
		dec -= e
	}
	if dec >= 0 {
		return strconv.FormatFloat(mean, 'f', dec, 64) + " ± " + h
	}
	// A half-width of 10^4 or more: the mean rounded to its last digit.
	unit := math.Pow(10, float64(-dec))
	return strconv.FormatFloat(math.Round(mean/unit)*unit, 'g', -1, 64) + " ± " + h
}

// sortKey is the number a table column sorts by, as JavaScript's
// parseFloat reads it ("Infinity" and "-Infinity" for the infinities: Go's
// "-Inf" read as NaN and broke the order); "" (sorted last) if undefined.
func sortKey(v float64) string {
	switch {
	case math.IsNaN(v):
		return ""
	case math.IsInf(v, 1):
		return "Infinity"
	case math.IsInf(v, -1):
		return "-Infinity"
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}

// numCell is a cell of a numeric column: text, sorted by v; an undefined
// v (NaN: "—") sorts after every value, where its text sorted among the
// numbers as a string.
func numCell(text string, v float64) cell { return cell{Text: text, Sort: sortKey(v), Num: true} }

// verdictText is the table's verdict cell: the pooled verdict, or "—" for
// points summarised before verdicts existed.
func verdictText(v string) string {
	if v == "" {
		return "—"
	}
	return v
}

// convergedText is the table's converged cell: yes, NO with the count of
// replications that failed the run-length check, or "—" when no
// replication carries the evidence (engines before 0.4.0, runs stopped
// inside their window).
func convergedText(p *aggregate.Point) string {
	c := p.Convergence
	switch {
	case c == nil:
		return "—"
	case c.Converged:
		return "yes"
	}
	return fmt.Sprintf("NO (%d of %d)", c.Unconverged, c.N)
}

// tableRows are f's rows of the HTML summary table. The means of a point
// that is Unstable (diverging or truncated, aggregate.Point.Unstable) are
// lower bounds, printed "≥ x" as in the terminal table.
func tableRows(f *facet, ta tableAxes) []tableRow {
	var rows []tableRow
	num := func(v float64) cell { return numCell(fmtNum(v), v) }
	for _, s := range f.series {
		ps := append([]*aggregate.Point(nil), s.pts...)
		sort.SliceStable(ps, func(i, j int) bool { return xValue(ps[i], ta.x) < xValue(ps[j], ta.x) })
		for _, p := range ps {
			r := tableRow{Unstable: p.Unstable(), Failed: p.NFailed > 0}
			r.Cells = append([]cell{{Text: s.label}}, ta.cells(p)...)
			failed := num(float64(p.NFailed))
			failed.Class = "failed"
			r.Cells = append(r.Cells, numCell(fmt.Sprintf("%d/%d", p.N, p.Replications), float64(p.N)),
				failed, num(float64(p.NUnstable)), num(float64(p.NTruncated)),
				cell{Text: verdictText(p.Verdict)}, cell{Text: convergedText(p)})
			for _, m := range tableMetrics {
				mt, ok := p.Metric(m)
				switch {
				case !ok || math.IsNaN(mt.Mean):
					r.Cells = append(r.Cells, numCell("—", math.NaN()))
				case p.Bound(mt):
					// A bound, not an estimate: no interval around it.
					r.Cells = append(r.Cells, numCell("≥ "+fmtNum(mt.Mean), mt.Mean))
				default:
					r.Cells = append(r.Cells, numCell(fmtMeanHW(mt.Mean, mt.HalfWidth), mt.Mean))
				}
			}
			rows = append(rows, r)
		}
	}
	return rows
}

// tableAxes are the summary table's columns between the series and n: x
// (none on a categorical axis, where the series are the categories); the
// load beside any other x, and on a categorical axis the arrival rate
// and the load, each "—" where the point has none (a replayed trace's λ
// and ρ are not parameters: its points hold 0, printed as if swept); and
// every other swept scenario axis, in name order: those splitting the
// facets, which a heat map's one table merges, and those x determines
// (b-fig1's class needs zipped with the servers), which no column showed.
type tableAxes struct {
	x    string
	cols []string // the columns' axes: x, load, arrival_rate or a swept axis
}

func newTableAxes(pts []aggregate.Point, x string) tableAxes {
	ta := tableAxes{x: x}
	if x == categoryAxis {
		ta.cols = []string{"arrival_rate", "load"}
	} else {
		ta.cols = []string{x}
		if x != "load" { // else the x column is the load, said once
			ta.cols = append(ta.cols, "load")
		}
	}
	set := map[string]bool{}
	for i := range pts {
		for a := range pts[i].Axes {
			set[a] = true
		}
	}
	var more []string
	for a := range set {
		if !slices.Contains(ta.cols, a) && a != "arrival_rate" && a != "load" && !aggregate.IsParamAxis(pts, a) {
			more = append(more, a)
		}
	}
	sort.Strings(more)
	ta.cols = append(ta.cols, more...)
	return ta
}

// heads are the columns' headings.
func (ta tableAxes) heads() []string {
	hs := make([]string, len(ta.cols))
	for i, a := range ta.cols {
		hs[i] = axisLabel(a)
	}
	return hs
}

// cells are p's cells of the columns.
func (ta tableAxes) cells(p *aggregate.Point) []cell {
	num := func(v float64) cell { return numCell(fmtNum(v), v) }
	out := make([]cell, 0, len(ta.cols))
	for _, a := range ta.cols {
		v, swept := p.Axes[a]
		switch {
		case a == ta.x:
			out = append(out, num(xValue(p, a)))
		case !swept && (a == "load" || a == "arrival_rate"):
			r := p.Load
			if a == "arrival_rate" {
				r = p.ArrivalRate
			}
			if !(r > 0) { // a replayed trace's: not a parameter
				out = append(out, numCell("—", math.NaN()))
				continue
			}
			out = append(out, num(aggregate.RoundInput(r)))
		case !swept:
			out = append(out, numCell("—", math.NaN()))
		default:
			if f, ok := aggregate.Number(v); ok {
				if _, isStr := v.(string); !isStr {
					out = append(out, numCell(formatValue(v), f))
					continue
				}
			}
			out = append(out, cell{Text: formatValue(v)})
		}
	}
	return out
}

// limitLines are the vertical lines of f's plots against x: on an
// arrival-rate axis, the work-conserving bound λ* = k / Σ pᵢ nᵢ E[Sᵢ] — the
// rate at offered load 1, ArrivalRate / Load of any point with a load (one
// line per distinct value, e.g. overlaid campaigns of different workloads)
// — and each series' measured λ_max from limits (keyed by campaign tag,
// then policy); on a load axis, ρ = 1. No policy is stable beyond the
// bound, so a curve's rise is read against it.
func (f *facet) limitLines(x string, limits map[string]map[string]float64) []vline {
	switch x {
	case "load":
		return []vline{{x: 1, label: "load ρ = 1", style: -1}}
	case "arrival_rate":
	default:
		return nil
	}
	var ls []vline
	var seen []float64
	for _, p := range f.pts {
		if !(p.Load > 0) || !(p.ArrivalRate > 0) {
			continue
		}
		l := p.ArrivalRate / p.Load
		if !finite(l) || slices.ContainsFunc(seen, func(v float64) bool { return math.Abs(v-l) <= 1e-9*l }) {
			continue
		}
		seen = append(seen, l)
		ls = append(ls, vline{x: l, label: "load 1 (λ = " + fmtNum(l) + ")", style: -1})
	}
	done := map[string]bool{}
	for i, s := range f.series {
		// A limit keyed by the series' label (a policy variant, "msfq
		// threshold=31") is drawn for that series; one keyed by the policy
		// name for the policy's first series.
		k, label := s.tag+"\x00"+s.label, s.label
		lim, ok := limits[s.tag][s.label]
		if !ok {
			k, label = s.tag+"\x00"+s.policy, s.policy
			lim, ok = limits[s.tag][s.policy]
		}
		if !ok || done[k] {
			continue
		}
		done[k] = true
		if s.tag != "" {
			label = s.tag + ": " + label
		}
		ls = append(ls, vline{x: lim, label: label + " λmax = " + fmtNum(lim), style: s.style(f, i)})
	}
	return ls
}

// Campaign is one campaign as Render draws it.
type Campaign struct {
	// Points are the campaign's summary (aggregate.Summarize).
	Points []aggregate.Point
	// Tasks and Records (keyed by task id), if given, are its replications:
	// the report then has the per-replication table.
	Tasks   []sweep.Task
	Records map[string]*record.Record
	// Limits are measured saturation arrival rates λ_max (msjfarm limit, a
	// sweep file's limit block) by series label ("msfq threshold=31": that
	// series) or policy name (that policy's first series), drawn on
	// arrival-rate plots as a dashed vertical line in the series' colour,
	// labelled with its value; empty for none.
	Limits map[string]float64
	// Manifest is manifest.json as stored (nil if none): the page's header
	// (name, description, date, versions, reproducing command) is read
	// from it, and it is shipped beside the report.
	Manifest []byte
	// From is what the page's reproducing commands name: the archive
	// file the report was made from (FromArchive) or the store it was
	// read from; "" names the store the manifest records, where the
	// campaign ran. A report rebuilt from an archive named the author's
	// store, a path on another machine.
	From        string
	FromArchive bool
}

// manifestInfo is the part of manifest.json (archive.Manifest, which
// imports this package) the page's header shows.
type manifestInfo struct {
	Campaign       string    `json:"campaign"`
	Name           string    `json:"name"`
	State          string    `json:"state"`
	MsjfarmVersion string    `json:"msjfarm_version"`
	Created        time.Time `json:"created"`
	Finished       time.Time `json:"finished"`
	Storage        string    `json:"storage"`
	Sweep          *struct {
		Name        string `json:"name"`
		Description string `json:"description"`
	} `json:"sweep"`
	Policies []struct {
		Policy        string `json:"policy"`
		Runner        string `json:"runner"`
		Plugin        string `json:"plugin"`
		PluginVersion string `json:"plugin_version"`
		Engine        string `json:"engine"`
	} `json:"policies"`
}

func parseManifest(b []byte) manifestInfo {
	var m manifestInfo
	_ = json.Unmarshal(b, &m) // a manifest that does not parse is still shipped; the header is then sparse
	if m.Name == "" && m.Sweep != nil {
		m.Name = m.Sweep.Name
	}
	return m
}

func (m manifestInfo) description() string {
	if m.Sweep == nil {
		return ""
	}
	return m.Sweep.Description
}

// date is when the campaign finished (or was created, if unfinished).
func (m manifestInfo) date() string {
	t := m.Finished
	if t.IsZero() {
		t = m.Created
	}
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format("2006-01-02 15:04 MST")
}

// versions lists the code the numbers came from: the engine of the
// campaign and the runner (in-process or plugin) and engine of the
// policies, policies with the same provenance named together.
func (m manifestInfo) versions() []string {
	var out []string
	if m.MsjfarmVersion != "" {
		out = append(out, "msjfarm engine "+m.MsjfarmVersion)
	}
	var order []string
	byProv := map[string][]string{}
	for _, p := range m.Policies {
		var v string
		switch {
		case p.Plugin != "":
			v = "plugin " + p.Plugin
			if p.PluginVersion != "" {
				v += " " + p.PluginVersion
			}
		case p.Runner != "":
			v = p.Runner
		default:
			v = "in-process"
		}
		if p.Engine != "" {
			v += ", engine " + p.Engine
		}
		if _, ok := byProv[v]; !ok {
			order = append(order, v)
		}
		if !slices.Contains(byProv[v], p.Policy) {
			byProv[v] = append(byProv[v], p.Policy)
		}
	}
	for _, v := range order {
		out = append(out, strings.Join(byProv[v], ", ")+": "+v)
	}
	return out
}

// commands are the command lines that regenerate this report and re-run
// the campaign's replications from storage.
func (m manifestInfo) commands(c Campaign) []string {
	if m.Campaign == "" {
		return nil
	}
	if c.FromArchive {
		a := shellQuote(c.From)
		return []string{
			"msjfarm reproduce " + a + " --all   # re-run every replication from the archive and compare",
			"msjfarm report " + a + "   # regenerate this report",
		}
	}
	st := m.storageFlag(c)
	return []string{
		"msjfarm reproduce " + m.Campaign + " --all" + st + "   # re-run every replication from the stored sweep and compare",
		"msjfarm report " + m.Campaign + st + "   # regenerate this report",
	}
}

// storageFlag is the --storage flag naming the store the report was read
// from (Campaign.From), or else the one the manifest records.
func (m manifestInfo) storageFlag(c Campaign) string {
	if s := cmp.Or(c.From, m.Storage); s != "" {
		return " --storage " + shellQuote(s)
	}
	return ""
}

func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./:=@%+,") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// Write renders the report of c (with the overlaid campaigns, if any) into
// dir (created if needed): the files of Render, by their names. Existing
// files of the same names are overwritten, so a re-run replaces the report.
// Each file is written as it is finished (RenderTo with a DirSink); on
// error, some may have been.
func Write(dir string, c Campaign, overlay ...Campaign) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	return RenderTo(DirSink(dir), c, overlay...)
}

// WriteFiles writes files (as Render returns them) into dir, creating it.
func WriteFiles(dir string, files map[string][]byte) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if err := os.WriteFile(filepath.Join(dir, n), files[n], 0o644); err != nil {
			return err
		}
	}
	return nil
}

// dataFiles renders c's tables: summary.csv/json/parquet,
// summary_long.csv/parquet and, with records, replications.csv/parquet.
func dataFiles(files *files, c Campaign) ([]dataFile, error) {
	put := func(name string, write func(w io.Writer) error) error {
		if err := files.write(name, write); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		return nil
	}
	// The point tables are generated as they are written (twice: CSV and
	// Parquet), never held: at 12,000 points the tidy table's cells were
	// 300 MB, the wide one's 120 MB. The per-replication table (≤ 4096
	// tasks) is built when written and dropped after.
	tables := []struct {
		name, doc string
		build     func() *aggregate.Table
	}{
		{"summary", "one row per point, three columns (mean, CI half-width, n) per metric", func() *aggregate.Table { return aggregate.WideTableStream(c.Points) }},
		{"summary_long", "tidy: one row per point × metric × class (mean, hw, n, flags)", func() *aggregate.Table { return aggregate.LongTableStream(c.Points) }},
	}
	if c.Tasks != nil {
		tables = append(tables, struct {
			name, doc string
			build     func() *aggregate.Table
		}{"replications", "one row per replication: its own value of every metric", func() *aggregate.Table {
			return aggregate.ReplicationTable(c.Points, c.Tasks, c.Records)
		}})
	}
	var out []dataFile
	for _, tb := range tables {
		t := struct {
			name, doc string
			t         *aggregate.Table
		}{tb.name, tb.doc, tb.build()}
		noParquet := len(t.t.Columns) > aggregate.MaxParquetColumns
		// At scale (files.gz) the tidy tables are Parquet only: as CSV,
		// even compressed, they doubled a 12,000-point report.
		if files.gz && t.name != "summary" && !noParquet {
			t.doc += "; Parquet only at this size"
		} else if err := put(t.name+".csv", t.t.WriteCSV); err != nil {
			return nil, err
		}
		if noParquet {
			// Thousands of classes or counters: the CSV holds the table,
			// and the report says why its Parquet file is missing.
			t.doc += fmt.Sprintf("; no Parquet file: its %d columns are more than the %d a Parquet file holds", len(t.t.Columns), aggregate.MaxParquetColumns)
		} else if err := put(t.name+".parquet", t.t.WriteParquet); err != nil {
			return nil, err
		}
		out = append(out, dataFile{Name: t.name, Doc: t.doc, Rows: t.t.Len(), NoParquet: noParquet})
	}
	if err := put("summary.json", func(w io.Writer) error { return aggregate.WriteJSON(w, c.Points) }); err != nil {
		return nil, err
	}
	files.put("COLUMNS.md", []byte(aggregate.ColumnsDoc))
	return out, nil
}

// dataFile is one table of the report's data section.
type dataFile struct {
	Name, Doc string
	Rows      int
	NoParquet bool // too wide for Parquet (aggregate.MaxParquetColumns): CSV only
}

// campaignTags names the campaigns of an overlay in the legends: by name,
// with the id's first 8 digits when names repeat or are missing.
func campaignTags(ms []manifestInfo) []string {
	count := map[string]int{}
	for _, m := range ms {
		count[m.Name]++
	}
	tags := make([]string, len(ms))
	for i, m := range ms {
		t := m.Name
		if t == "" || count[t] > 1 {
			id := m.Campaign
			if len(id) > 8 {
				id = id[:8]
			}
			if id == "" {
				id = strconv.Itoa(i + 1)
			}
			if t == "" {
				t = "campaign " + id
			} else {
				t += " (" + id + ")"
			}
		}
		tags[i] = t
	}
	return tags
}

// sections draws the figures of every facet (or, for a campaign too large
// for line plots, of every heat-map group: heatLayout) and builds their
// sections of index.html. The summary and comparison tables are printed
// only up to maxTableRows points (the data files always have them all).
func sections(files *files, pts []aggregate.Point, fs []*facet, tags []string, x string, others []string) ([]facetView, error) {
	var views []facetView
	tables := len(pts) <= maxTableRows
	xl := axisLabel(x)
	if groups := heatLayout(pts, fs, tags, x, others); groups != nil {
		metrics := heatMetrics(groups)
		for i, g := range groups {
			v := facetView{Title: g.title, Anchor: fmt.Sprintf("facet%d", i+1), Facets: len(groups), Heat: true}
			for _, m := range metrics {
				hf, err := g.heatFigure(files, m, xl)
				if err != nil {
					return nil, err
				}
				v.Figures = append(v.Figures, hf...)
			}
			views = append(views, v)
		}
		for i := range views {
			views[i].NoTable = i > 0
		}
		if !tables {
			views[0].TableNote = tableNote(len(pts))
			return views, nil
		}
		for _, f := range fs {
			views[0].TableRows = append(views[0].TableRows, tableRows(f, newTableAxes(pts, x))...)
		}
		return views, nil
	}
	for i, f := range fs {
		figs, skipped, constant, err := f.figures(files, x)
		if err != nil {
			return nil, err
		}
		if f.split != "" {
			// A figure of one facet says which, as its section does: a
			// figure is read, and copied, on its own.
			for i := range figs {
				figs[i].Title += " (" + f.split + ")"
			}
		}
		v := facetView{Title: f.title, Anchor: fmt.Sprintf("facet%d", i+1),
			Figures: figs, Skipped: skipped, Constant: constant, Facets: len(fs)}
		if tables {
			v.TableRows, v.Compare = tableRows(f, newTableAxes(pts, x)), f.comparisons(x)
		} else {
			v.TableNote, v.NoTable = tableNote(len(pts)), i > 0
		}
		views = append(views, v)
	}
	return views, nil
}

// tableNote says where a summary too long for the page is.
func tableNote(points int) string {
	return fmt.Sprintf("%d points: more than the %d a page lists, so the summary and the paired comparisons are in the data files only "+
		"(summary.csv and summary_long.csv, with every comparison; their Parquet files).", points, maxTableRows)
}

// count counts the page's unstable, unconverged and identical-replication
// points and failed replications.
func (page *indexPage) count(pts []aggregate.Point) {
	for _, p := range pts {
		if p.Unstable() {
			page.Unstable++
		}
		if p.Unconverged() {
			page.Unconverged++
		}
		if p.NIdentical > 0 {
			page.Identical++
		}
		page.Failed += p.NFailed
	}
}

// Render builds the files Write writes, in memory, keyed by file name (no
// directories), for a caller that stores them elsewhere (e.g. under
// storage.ReportPrefix(id) in an object store). The links of index.html are
// relative, so the files work from any prefix.
//
// With overlay campaigns, their points are drawn in the same figures and
// listed in the same tables, every series labelled with its campaign's
// name; the data files and manifest.json are c's.
func Render(c Campaign, overlay ...Campaign) (map[string][]byte, error) {
	m := Files{}
	if err := RenderTo(m, c, overlay...); err != nil {
		return nil, err
	}
	return m, nil
}

// RenderTo is Render handing each file to sink as soon as it is finished
// instead of keeping them all: the largest report's memory is then its
// largest file, not its sum. On error, sink may have received some of the
// files.
func RenderTo(sink Sink, c Campaign, overlay ...Campaign) error {
	// The counters the tables keep (aggregate.MaxCounterNames), in the
	// figures too.
	c.Points, _ = aggregate.CapCounters(c.Points)
	overlay = slices.Clone(overlay)
	for i := range overlay {
		overlay[i].Points, _ = aggregate.CapCounters(overlay[i].Points)
	}
	files := &files{sink: sink}
	n := len(c.Points)
	for _, o := range overlay {
		n += len(o.Points)
	}
	files.gz = n > maxTableRows
	data, err := dataFiles(files, c)
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	var manifest string
	if c.Manifest != nil {
		if json.Indent(&buf, c.Manifest, "", "  ") != nil {
			buf.Reset()
			buf.Write(c.Manifest)
		}
		manifest = buf.String()
		files.put("manifest.json", bytes.Clone(buf.Bytes()))
	}

	info := parseManifest(c.Manifest)
	pts := c.Points
	var tags []string
	page := indexPage{Manifest: manifest, HasManifest: c.Manifest != nil, Data: data, CSV: "csv", JSON: "json",
		Replications: c.Tasks != nil, Columns: markdownHTML(aggregate.ColumnsDoc)}
	if files.gz {
		page.CSV, page.JSON = "csv.gz", "json.gz"
	}
	page.Header = header{Title: info.Name, ID: info.Campaign, Description: info.description(), Date: info.date(),
		State: info.State, Versions: info.versions(), Commands: info.commands(c)}
	if len(overlay) > 0 {
		infos := []manifestInfo{info}
		for _, o := range overlay {
			infos = append(infos, parseManifest(o.Manifest))
		}
		names := campaignTags(infos)
		if len(page.Header.Commands) > 0 {
			ids, st := info.Campaign, info.storageFlag(c)
			if c.FromArchive {
				ids, st = shellQuote(c.From), ""
			}
			for _, o := range infos[1:] {
				ids += " " + o.Campaign
			}
			page.Header.Commands = append(page.Header.Commands[:1], "msjfarm report "+ids+st+"   # regenerate this overlay")
		}
		pts = nil
		for i, cc := range append([]Campaign{c}, overlay...) {
			pts = append(pts, cc.Points...)
			for range cc.Points {
				tags = append(tags, names[i])
			}
			page.Header.Overlay = append(page.Header.Overlay, overlayInfo{Tag: names[i], ID: infos[i].Campaign,
				Description: infos[i].description(), Date: infos[i].date(), Points: len(cc.Points)})
		}
	}
	if page.Header.Title == "" {
		page.Header.Title = "msjfarm report"
	}

	// Measured limits by campaign tag ("" without overlays) and policy.
	limits := map[string]map[string]float64{"": c.Limits}
	if tags != nil {
		limits = map[string]map[string]float64{page.Header.Overlay[0].Tag: c.Limits}
		for i, o := range overlay {
			limits[page.Header.Overlay[i+1].Tag] = o.Limits
		}
	}
	x, others := plotAxes(pts)
	fs := facets(pts, tags, x, others)
	for _, f := range fs {
		f.lines = f.limitLines(x, limits)
	}
	xl := axisLabel(x)
	page.XLabel, page.XColumn, page.AxisHeads = xl, x != categoryAxis, newTableAxes(pts, x).heads()
	page.Points = len(pts)
	if page.Facets, err = sections(files, pts, fs, tags, x, others); err != nil {
		_ = files.wait()
		return err
	}
	for _, m := range tableMetrics {
		page.Metrics = append(page.Metrics, metricLabel(m))
	}
	page.count(pts)
	buf.Reset()
	if err := indexTmpl.Execute(&buf, page); err != nil {
		_ = files.wait()
		return err
	}
	files.put("index.html", bytes.Clone(buf.Bytes()))
	return files.wait()
}

type header struct {
	Title, ID, Description, Date, State string
	Versions, Commands                  []string
	Overlay                             []overlayInfo
}

type overlayInfo struct {
	Tag, ID, Description, Date string
	Points                     int
}

type indexPage struct {
	Header           header
	XLabel           string
	XColumn          bool     // the comparison table has an x column (not on a categorical axis)
	AxisHeads        []string // the summary table's columns between the series and n (tableAxes)
	Metrics          []string
	Facets           []facetView
	Data             []dataFile
	Replications     bool
	Columns          template.HTML
	Manifest         string
	HasManifest      bool
	Points           int
	CSV, JSON        string // the data files' extensions: csv or csv.gz (files.gz)
	Unstable, Failed int
	Unconverged      int
	Identical        int // points with replications that repeat another seed's run
}

var indexTmpl = template.Must(template.New("index").Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{.Header.Title}}{{if .Header.ID}} ({{.Header.ID}}){{end}} — msjfarm report</title>
<style>
body { font-family: sans-serif; margin: 1.5em; color: #222; max-width: 1600px; }
header p { margin: 0.3em 0; }
.desc { font-size: 1.05em; max-width: 60em; }
.meta { color: #555; font-size: 0.9em; }
code, pre { font-size: 0.85em; }
pre.cmd { background: #f7f7f7; padding: 0.5em 0.8em; overflow-x: auto; }
nav { background: #fafafa; border: 1px solid #e5e5e5; padding: 0.3em 1em; font-size: 0.9em; }
nav ol { margin: 0.3em 0; }
nav ol ol { columns: 3 16em; }
.scroll { max-width: 100%; max-height: 75vh; overflow: auto; border: 1px solid #ddd; }
table { border-collapse: collapse; font-size: 0.85em; }
th, td { border: 1px solid #ccc; padding: 0.2em 0.5em; text-align: right; white-space: nowrap; }
th { background: #f0f0f0; position: sticky; top: 0; cursor: pointer; user-select: none; }
th[aria-sort=ascending]::after { content: " ▲"; }
th[aria-sort=descending]::after { content: " ▼"; }
td:first-child { text-align: left; }
tr.unstable td { background: #fde2e2; }
tr.cmp-better td.verdict { color: #1a7a1a; font-weight: bold; }
tr.cmp-worse td.verdict { color: #b00; font-weight: bold; }
tr.cmp-undefined td { color: #777; }
tr.failed td.failed { color: #b00; font-weight: bold; }
figure { display: inline-block; margin: 0.5em; vertical-align: top; }
figure img { width: 480px; max-width: 100%; border: 1px solid #eee; }
figure.wide { display: block; }
figure.wide img { width: auto; max-width: 100%; }
figcaption { font-size: 0.85em; }
div.doc { max-width: 70em; font-size: 0.9em; }
div.doc table.doc td, div.doc table.doc th { white-space: normal; text-align: left; vertical-align: top; position: static; cursor: auto; }
div.doc code { font-size: 1em; }
div.doc pre { background: #f7f7f7; padding: 0.6em; overflow-x: auto; }
details pre { background: #f7f7f7; padding: 0.8em; overflow-x: auto; font-size: 0.8em; }
</style>
</head>
<body>
<header>
<h1>{{.Header.Title}}</h1>
{{if .Header.Description}}<p class="desc">{{.Header.Description}}</p>{{end}}
<p class="meta">{{if .Header.ID}}Campaign <code>{{.Header.ID}}</code>{{end}}{{if .Header.State}} ({{.Header.State}}){{end}}{{if .Header.Date}} · {{.Header.Date}}{{end}}{{if .Header.Versions}} · {{range $i, $v := .Header.Versions}}{{if $i}}; {{end}}{{$v}}{{end}}{{end}}</p>
{{if .Header.Overlay}}<p>Overlay of {{len .Header.Overlay}} campaigns, each series labelled with its campaign:</p>
<ul>{{range .Header.Overlay}}<li><strong>{{.Tag}}</strong>{{if .ID}} — <code>{{.ID}}</code>{{end}}{{if .Date}}, {{.Date}}{{end}}, {{.Points}} points{{if .Description}}: {{.Description}}{{end}}</li>{{end}}</ul>
<p class="meta">Data files and manifest below are those of the first campaign.</p>{{end}}
{{if .Header.Commands}}<p class="meta">Reproduce:</p>
<pre class="cmd">{{range .Header.Commands}}{{.}}
{{end}}</pre>{{end}}
</header>
<nav><strong>Contents</strong>
<ol>
{{range .Facets}}<li>{{if gt .Facets 1}}<a href="#{{.Anchor}}">{{.Title}}</a>{{else}}<a href="#{{.Anchor}}">Figures</a>{{end}}
<ol>{{range .Figures}}<li><a href="#fig-{{.Name}}">{{.Title}}</a></li>{{end}}{{if not .NoTable}}<li><a href="#{{.Anchor}}-table">Summary table</a></li>{{end}}</ol></li>
{{end}}<li><a href="#data">Data files</a></li>
<li><a href="#columns">Column reference</a></li>
{{if .HasManifest}}<li><a href="#manifest">Manifest</a></li>{{end}}
</ol></nav>
<p>{{.Points}} points.{{if .Unstable}} <strong>{{.Unstable}} unstable</strong> (pooled verdict not stable, or some replication truncated: shown as ▲ at the top edge of the plots and shaded in the table; their means are lower bounds, printed ≥ x, not estimates).{{end}}{{if .Failed}} <strong>{{.Failed}} failed replications</strong> (see summary.json for the errors).{{end}}{{if .Unconverged}} <strong>{{.Unconverged}} not converged</strong> (a warning: in at least half the replications the MSER-5 truncation point lies beyond half the run, or the policy completed fewer than 30 cycles in the window; the converged column and COLUMNS.md give the evidence; run longer).{{end}}{{if .Identical}} <strong>{{.Identical}} with identical replications</strong> (some replications repeat, to the bit, the result of another seed: the policy's code does not use the seed it is given, so those points are one run counted several times and their ±0 intervals are no precision; n_identical in the table).{{end}}
Dashed vertical lines mark known limits: grey, offered load 1 (the work-conserving bound, beyond which no policy is stable); in a policy's colour, its measured saturation rate λmax.
Error bars and ± are 95% Student-t confidence intervals over independent replications (∞: one replication); on a log axis the bar is the delta-method interval of the log of the mean, m·exp(±hw/m), which stays positive; intervals of bounded quantities (probabilities, utilisation, Jain's index) stop at 1; a bar running past the plotted range is cut at the axis and marked with an open triangle (▽ at the floor, △ at the top).
Figures are drawn for a column (3.3 in, fonts 8–9 pt; name_page.pdf for a page's width) without a title: the caption carries it. Beside each figure, its data as drawn (name.csv) and a matplotlib script that redraws it from that file (python3 name.py).</p>
{{range .Facets}}
<section id="{{.Anchor}}">
<h2>{{.Title}}</h2>
{{range .Figures}}<figure id="fig-{{.Name}}"{{if .Wide}} class="wide"{{end}}><a href="{{.Name}}.svg"><img src="{{.Name}}.png" alt="{{.Title}}"></a><figcaption>{{.Title}} — <a href="{{.Name}}.pdf">PDF</a> · <a href="{{.Name}}.svg">SVG</a> · <a href="{{.Name}}.png">PNG</a>{{if not .Wide}} · page-width <a href="{{.Name}}_page.pdf">PDF</a>{{end}} · data <a href="{{.Name}}.{{$.CSV}}">CSV</a> · <a href="{{.Name}}.py">matplotlib script</a></figcaption></figure>
{{end}}
{{if .Heat}}<p class="meta">Too many points for line plots ({{$.Points}}): each figure is a heat map, x the swept axis, y the second swept dimension, one panel per series; the colour is the mean, in the bins of the key (a logarithmic scale when the means span a decade or more); grey cells are bounds (unstable or truncated points), white cells have no value. Per-class metrics, MSFQ phases and comparisons are in the data files.</p>{{end}}
{{if .Skipped}}<p>Not plotted (zero or undefined at every point): {{range $i, $s := .Skipped}}{{if $i}}, {{end}}{{$s}}{{end}}.</p>{{end}}
{{if .Constant}}<p>Not plotted (constant at every point, a parameter rather than a result): {{range $i, $s := .Constant}}{{if $i}}; {{end}}{{$s}}{{end}}.</p>{{end}}
{{$f := .}}{{with .Compare}}<h3 id="{{$f.Anchor}}-compare">Paired comparisons against {{.Baseline}}</h3>
<p class="meta">Mean response time of each series relative to {{.Baseline}} at the same scenario: the ratio of the means over the pairs of replications with the same seed (common random numbers: the same jobs), E[T]/E[T<sub>{{.Baseline}}</sub>] − 1, with its 95% confidence interval over the pairs by Fieller's method: the ratios the paired t-test does not reject, asymmetric about the estimate, excluding 0 exactly when the unadjusted test rejects, unbounded where the baseline's mean is within its own interval of 0. Verdict from the paired t-test, its p-value Holm-adjusted over every compared point of this figure (family-wise error 5%). Undefined where either side's means are bounds (unstable or truncated). CRN × is the width of the interval independent samples would give (Welch) divided by the paired one{{if .Gain}}: common random numbers narrowed the intervals {{.Gain}}{{end}}. Every metric's comparison is in summary_long.csv.</p>
<div class="scroll"><table class="sortable">
<thead><tr><th>series</th>{{if $.XColumn}}<th>{{$.XLabel}}</th>{{end}}<th>E[T] vs {{.Baseline}}</th><th>verdict</th><th>p (Holm)</th><th>pairs</th><th>CRN ×</th><th>note</th></tr></thead>
<tbody>
{{range .Rows}}<tr class="cmp-{{.Class}}"><td>{{.Series}}</td>{{if $.XColumn}}{{template "td" .X}}{{end}}{{template "td" .Rel}}<td class="verdict">{{.Verdict}}</td>{{template "td" .PHolm}}{{template "td" .Pairs}}{{template "td" .Gain}}<td>{{.Note}}</td></tr>
{{end}}</tbody></table></div>{{end}}
{{if not .NoTable}}<h3 id="{{.Anchor}}-table">Summary</h3>
{{if .TableNote}}<p>{{.TableNote}}</p>{{else}}<p class="meta">Click a column heading to sort.</p>
<div class="scroll">
<table class="sortable">
<thead><tr><th>policy</th>{{range $.AxisHeads}}<th>{{.}}</th>{{end}}<th>n</th><th>failed</th><th>unstable</th><th>truncated</th><th>verdict</th><th>converged</th>{{range $.Metrics}}<th>{{.}}</th>{{end}}</tr></thead>
<tbody>
{{range .TableRows}}<tr{{if .Unstable}} class="unstable"{{else if .Failed}} class="failed"{{end}}>{{range .Cells}}{{template "td" .}}{{end}}</tr>
{{end}}</tbody></table>
</div>{{end}}{{end}}
</section>
{{end}}
<h2 id="data">Data files</h2>
<p>Each table as CSV{{if eq .CSV "csv.gz"}} (gzip-compressed at this size: pandas.read_csv and R's read.csv read it as it is){{end}} and as Parquet (same columns and types); the columns are documented in <a href="#columns">the column reference</a> (also <a href="COLUMNS.md">COLUMNS.md</a>).</p>
<ul>
{{range .Data}}<li>{{if or (eq .Name "summary") (eq $.CSV "csv") .NoParquet}}<a href="{{.Name}}.{{$.CSV}}">{{.Name}}.{{$.CSV}}</a>{{if not .NoParquet}} · {{end}}{{end}}{{if not .NoParquet}}<a href="{{.Name}}.parquet">{{.Name}}.parquet</a>{{end}} — {{.Doc}} ({{.Rows}} rows)</li>
{{end}}<li><a href="summary.{{$.JSON}}">summary.{{$.JSON}}</a> — the summary with class names and failure messages</li>
{{if .HasManifest}}<li><a href="manifest.json">manifest.json</a> — versions, plugin sha256s, seeds: what reproduces these numbers</li>{{end}}
</ul>
<h2 id="columns">Column reference</h2>
<details><summary>What every column of the data files holds (COLUMNS.md)</summary><div class="doc">{{.Columns}}</div></details>
{{if .HasManifest}}<h2 id="manifest">Manifest</h2>
<details><summary>manifest.json</summary><pre>{{.Manifest}}</pre></details>{{end}}
<script>
// Sort a table by the clicked column: numbers (data-v) numerically,
// undefined values (data-v="") last in either direction, text (no data-v)
// alphabetically; a second click reverses.
document.querySelectorAll("table.sortable").forEach(function (table) {
  table.querySelectorAll("thead th").forEach(function (th, col) {
    th.addEventListener("click", function () {
      var asc = th.getAttribute("aria-sort") !== "ascending";
      table.querySelectorAll("thead th").forEach(function (h) { h.removeAttribute("aria-sort"); });
      th.setAttribute("aria-sort", asc ? "ascending" : "descending");
      var body = table.tBodies[0], rows = Array.prototype.slice.call(body.rows);
      var key = function (r) { var c = r.cells[col], v = c.getAttribute("data-v"); return v === null ? c.textContent : v === "" ? null : parseFloat(v); };
      rows.sort(function (a, b) {
        var x = key(a), y = key(b);
        if (x === null || y === null) return (x === null) - (y === null);
        var d = typeof x === "number" && typeof y === "number" ? x - y : String(x).localeCompare(String(y));
        return asc ? d : -d;
      });
      rows.forEach(function (r) { body.appendChild(r); });
    });
  });
});
</script>
</body>
</html>
{{define "td"}}<td{{if .Class}} class="{{.Class}}"{{end}}{{if or .Num .Sort}} data-v="{{.Sort}}"{{end}}>{{.Text}}</td>{{end}}`))
