// Package report renders a campaign's summary (aggregate.Point values) as
// plots and an index.html a researcher can open in a browser or copy into a
// paper's supplementary material (DESIGN.md §6: campaigns/<id>/report/).
//
// Layout of the plots, chosen to match the papers' figures:
//   - x is the swept scenario axis: arrival_rate if swept, else load, else
//     the first other scenario axis (servers, class[i].…), else the load.
//     Other swept scenario axes split the points into facets (one set of
//     plots per combination), since one cannot read three dimensions from a
//     line plot.
//   - one line per policy and parameter setting (the legend names the
//     parameters that differ between the lines of a policy);
//   - vertical bars: the 95% Student-t CI over independent replications;
//   - log y when the plotted means span two decades or more (response times
//     near saturation), linear otherwise;
//   - a point with any replication flagged unstable is not drawn on the
//     line: a filled triangle in the series colour is pinned to the top
//     edge at its x, meaning "diverges / off scale";
//   - metrics identically zero or undefined over a facet (e.g. preemptions
//     of non-preemptive policies) are listed in index.html, not plotted.
//
// Files: <metric>.svg/.png per base metric and counter, class_<metric>
// panels (one panel per class), msfq_phases when phase counters
// (counter_phase<z>_*) are present, summary.csv, summary.json,
// manifest.json and index.html. With several facets every file name is
// prefixed by f<i>_.
package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"html/template"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"

	"github.com/msjfarm/msjfarm/results/aggregate"
	"github.com/msjfarm/msjfarm/results/metric"
)

// metricLabels are the y-axis labels of the base and class metrics.
var metricLabels = map[string]string{
	"mean_response":          "mean response time E[T]",
	"weighted_mean_response": "weighted mean response time Σ(ρᵢ/ρ)E[Tᵢ]",
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
		return c
	}
	return name
}

var xLabels = map[string]string{"arrival_rate": "arrival rate λ", "load": "load ρ", "servers": "servers k"}

// series is one policy and parameter setting within a facet.
type series struct {
	key, label, policy string
	params             map[string]any
	pts                []*aggregate.Point
}

// facet is the set of points sharing every swept scenario axis but x.
type facet struct {
	key, title, prefix string
	pts                []*aggregate.Point
	series             []*series
}

// Figure is one rendered figure (both formats) for index.html.
type figure struct {
	Name, Title string
	Wide        bool // a grid of panels: shown at full page width
}

type facetView struct {
	Title     string
	Figures   []figure
	Skipped   []string
	Facets    int
	TableRows []tableRow
}

type tableRow struct {
	Cells    []string
	Unstable bool
	Failed   bool
}

// isParamAxis reports whether axis a is a policy parameter (it then labels
// the series, not the x axis or the facet).
func isParamAxis(pts []aggregate.Point, a string) bool {
	for _, p := range pts {
		if _, in := p.Axes[a]; in {
			if _, isParam := p.Params[a]; !isParam {
				return false
			}
		}
	}
	return true
}

func toFloat(v any) (float64, bool) {
	switch x := v.(type) {
	case float64:
		return x, true
	case float32:
		return float64(x), true
	case int:
		return float64(x), true
	case int64:
		return float64(x), true
	case uint64:
		return float64(x), true
	case json.Number:
		f, err := x.Float64()
		return f, err == nil
	case string:
		f, err := strconv.ParseFloat(x, 64)
		return f, err == nil
	}
	return 0, false
}

func formatValue(v any) string {
	if f, ok := toFloat(v); ok {
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

// xAxis chooses the x axis of the plots and the other scenario axes.
func xAxis(pts []aggregate.Point) (x string, others []string) {
	set := map[string]bool{}
	for _, p := range pts {
		for a := range p.Axes {
			set[a] = true
		}
	}
	var scen []string
	for a := range set {
		if !isParamAxis(pts, a) {
			scen = append(scen, a)
		}
	}
	sort.Strings(scen)
	switch {
	case set["arrival_rate"]:
		x = "arrival_rate"
	case set["load"]:
		x = "load"
	case len(scen) > 0:
		x = scen[0]
	default:
		x = "load"
	}
	for _, a := range scen {
		if a != x {
			others = append(others, a)
		}
	}
	return x, others
}

func xValue(p *aggregate.Point, x string) float64 {
	switch x {
	case "arrival_rate":
		return p.ArrivalRate
	case "load":
		return p.Load
	}
	if f, ok := toFloat(p.Axes[x]); ok {
		return f
	}
	return math.NaN()
}

func paramsKey(p map[string]any) string {
	b, _ := json.Marshal(p) // sorted keys
	return string(b)
}

// facets groups the points (in order of first appearance) by workload and
// the scenario axes other than x, and each facet's points by series.
func facets(pts []aggregate.Point, x string, others []string) []*facet {
	var out []*facet
	byKey := map[string]*facet{}
	for i := range pts {
		p := &pts[i]
		parts := []string{p.Workload}
		var title []string
		for _, a := range others {
			v, ok := p.Axes[a]
			s := "–"
			if ok {
				s = formatValue(v)
			}
			parts = append(parts, a+"="+s)
			title = append(title, a+" = "+s)
		}
		key := strings.Join(parts, "\x00")
		f := byKey[key]
		if f == nil {
			t := fmt.Sprintf("%s (k = %d)", p.Workload, p.Servers)
			if len(title) > 0 {
				t += ", " + strings.Join(title, ", ")
			}
			f = &facet{key: key, title: t}
			byKey[key] = f
			out = append(out, f)
		}
		f.pts = append(f.pts, p)
	}
	for i, f := range out {
		if len(out) > 1 {
			f.prefix = fmt.Sprintf("f%d_", i+1)
		}
		bySeries := map[string]*series{}
		for _, p := range f.pts {
			k := p.Policy + " " + paramsKey(p.Params)
			s := bySeries[k]
			if s == nil {
				s = &series{key: k, policy: p.Policy, params: p.Params}
				bySeries[k] = s
				f.series = append(f.series, s)
			}
			s.pts = append(s.pts, p)
		}
		labelSeries(f.series)
	}
	return out
}

// labelSeries names each series by its policy and the parameters whose
// values differ between the series of that policy ("msfq threshold=31").
func labelSeries(ss []*series) {
	byPolicy := map[string][]*series{}
	for _, s := range ss {
		byPolicy[s.policy] = append(byPolicy[s.policy], s)
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
			for _, k := range keys {
				if v, ok := s.params[k]; ok {
					l += " " + k + "=" + formatValue(v)
				}
			}
			s.label = l
		}
	}
}

// curvesFor builds one curve per series for the metric named m.
func curvesFor(f *facet, x, m string) (cs []curve, any bool) {
	for i, s := range f.series {
		c := curve{label: s.label, style: i}
		for _, p := range s.pts {
			mt, ok := p.Metric(m)
			if !ok {
				continue
			}
			if finite(mt.Mean) && mt.Mean != 0 {
				any = true
			}
			c.add(xValue(p, x), mt.Mean, mt.HalfWidth, p.Unstable())
		}
		if len(c.x) > 0 {
			c.sortByX()
			cs = append(cs, c)
		}
	}
	return cs, any
}

var phaseRE = regexp.MustCompile(`^counter_phase(\d+)_(.+)$`)

const (
	tileW = 6 * vg.Inch
	tileH = 4 * vg.Inch
	panW  = 4.6 * vg.Inch
	panH  = 3.3 * vg.Inch
)

func (f *facet) figures(out *files, x string) (figs []figure, skipped []string, err error) {
	xl := xLabels[x]
	if xl == "" {
		xl = x
	}
	// The union of metric names over the facet, in the points' order.
	var names []string
	seen := map[string]bool{}
	classes := 0
	for _, p := range f.pts {
		classes = max(classes, len(p.Classes))
		for _, m := range p.Metrics {
			if m.Class < 0 && !seen[m.Name] {
				seen[m.Name] = true
				names = append(names, m.Name)
			}
		}
	}
	for _, m := range names {
		cs, nonzero := curvesFor(f, x, m)
		if !nonzero {
			skipped = append(skipped, m)
			continue
		}
		if x == "arrival_rate" {
			cs = append(cs, msfqOverlay(f, m)...)
		}
		title := metricLabel(m)
		if strings.HasPrefix(m, metric.CounterPrefix) {
			title = "counter " + strings.TrimPrefix(m, metric.CounterPrefix)
		}
		p := newPlot(title+" — "+f.title, xl, metricLabel(m), cs, true)
		name := f.prefix + m
		if err := render(out, name, [][]*plot.Plot{{p}}, tileW, tileH, true); err != nil {
			return nil, nil, err
		}
		figs = append(figs, figure{Name: name, Title: title})
	}
	// Per-class panels, one figure per class metric.
	if classes > 0 {
		for _, cm := range metric.Class {
			var panels []*plot.Plot
			nonzero := false
			for ci := 0; ci < classes; ci++ {
				var name, cname string
				need := 0
				for _, p := range f.pts {
					if ci < len(p.Classes) {
						cname, need = p.Classes[ci].Name, p.Classes[ci].Need
						name = metric.ClassPrefix(ci, cname) + cm.Name
						break
					}
				}
				cs, nz := curvesFor(f, x, name)
				nonzero = nonzero || nz
				t := fmt.Sprintf("class %d: %s (need %d)", ci, cname, need)
				panels = append(panels, newPlot(t, xl, metricLabel(cm.Name), cs, true))
			}
			if !nonzero {
				skipped = append(skipped, "class_"+cm.Name)
				continue
			}
			name := f.prefix + "class_" + cm.Name
			if err := render(out, name, grid(panels), panW, panH, true); err != nil {
				return nil, nil, err
			}
			figs = append(figs, figure{Name: name, Title: "per class: " + metricLabel(cm.Name), Wide: len(panels) > 1})
		}
	}
	// MSFQ phases: one panel per (phase statistic, series), one line per phase.
	fig, err := f.phaseFigure(out, x, xl, names)
	if err != nil {
		return nil, nil, err
	}
	if fig != nil {
		figs = append(figs, *fig)
	}
	return figs, skipped, nil
}

func (f *facet) phaseFigure(out *files, x, xl string, names []string) (*figure, error) {
	type key struct {
		phase int
		stat  string
	}
	var stats []string
	phases := map[string][]int{}
	metric := map[key]string{}
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
	}
	if len(stats) == 0 {
		return nil, nil
	}
	var rows [][]*plot.Plot
	for _, st := range stats {
		sort.Ints(phases[st])
		var row []*plot.Plot
		for _, s := range f.series {
			var cs []curve
			for zi, z := range phases[st] {
				c := curve{label: fmt.Sprintf("phase %d", z), style: zi}
				for _, p := range s.pts {
					if mt, ok := p.Metric(metric[key{z, st}]); ok {
						c.add(xValue(p, x), mt.Mean, mt.HalfWidth, p.Unstable())
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
			row = append(row, newPlot(s.label+": phase "+st, xl, "phase "+st, cs, true))
		}
		if len(row) > 0 {
			rows = append(rows, row)
		}
	}
	if len(rows) == 0 {
		return nil, nil
	}
	name := f.prefix + "msfq_phases"
	if err := render(out, name, rows, panW, panH, true); err != nil {
		return nil, err
	}
	return &figure{Name: name, Title: "MSFQ phases (Quickswap Fig. 4)", Wide: len(rows) > 1 || len(rows[0]) > 1}, nil
}

// grid lays panels out in rows of at most 3 (4 beyond 9 panels, 6 beyond 24).
func grid(ps []*plot.Plot) [][]*plot.Plot {
	cols := 3
	switch {
	case len(ps) <= 2:
		cols = len(ps)
	case len(ps) > 24:
		cols = 6
	case len(ps) > 9:
		cols = 4
	}
	var out [][]*plot.Plot
	for i := 0; i < len(ps); i += cols {
		out = append(out, ps[i:min(i+cols, len(ps))])
	}
	return out
}

// tableMetrics are the metrics of the HTML summary table (all of them are
// in summary.csv).
var tableMetrics = []string{"mean_response", "weighted_mean_response", "mean_wait", "p_wait",
	"mean_in_system", "utilization", "throughput", "jain"}

func fmtNum(x float64) string {
	switch {
	case math.IsNaN(x):
		return "—"
	case math.IsInf(x, 1):
		return "∞"
	}
	return strconv.FormatFloat(x, 'g', 4, 64)
}

func tableRows(f *facet, x string) []tableRow {
	var rows []tableRow
	for _, s := range f.series {
		ps := append([]*aggregate.Point(nil), s.pts...)
		sort.SliceStable(ps, func(i, j int) bool { return xValue(ps[i], x) < xValue(ps[j], x) })
		for _, p := range ps {
			r := tableRow{Unstable: p.Unstable(), Failed: p.NFailed > 0}
			r.Cells = []string{s.label, fmtNum(xValue(p, x)), fmtNum(p.Load),
				fmt.Sprintf("%d/%d", p.N, p.Replications), strconv.Itoa(p.NFailed), strconv.Itoa(p.NUnstable)}
			for _, m := range tableMetrics {
				mt, ok := p.Metric(m)
				switch {
				case !ok || math.IsNaN(mt.Mean):
					r.Cells = append(r.Cells, "—")
				default:
					r.Cells = append(r.Cells, fmtNum(mt.Mean)+" ± "+fmtNum(mt.HalfWidth))
				}
			}
			rows = append(rows, r)
		}
	}
	return rows
}

// Write renders the report of pts into dir (created if needed): plots in
// SVG and PNG, summary.csv and summary.json (aggregate.WriteCSV/WriteJSON),
// manifest.json (manifestJSON as given, indented if it is valid JSON;
// omitted if nil) and index.html linking all of them by relative names.
// Existing files of the same names are overwritten, so a re-run replaces
// the report.
func Write(dir string, pts []aggregate.Point, manifestJSON []byte) error {
	files, err := Render(pts, manifestJSON)
	if err != nil {
		return err
	}
	return WriteFiles(dir, files)
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

// Render builds the files Write writes, in memory, keyed by file name (no
// directories), for a caller that stores them elsewhere (e.g. under
// storage.ReportPrefix(id) in an object store). The links of index.html are
// relative, so the files work from any prefix.
func Render(pts []aggregate.Point, manifestJSON []byte) (map[string][]byte, error) {
	files := newFiles()
	var buf bytes.Buffer
	if err := aggregate.WriteCSV(&buf, pts); err != nil {
		return nil, err
	}
	files.put("summary.csv", bytes.Clone(buf.Bytes()))
	buf.Reset()
	if err := aggregate.WriteJSON(&buf, pts); err != nil {
		return nil, err
	}
	files.put("summary.json", bytes.Clone(buf.Bytes()))
	var manifest string
	if manifestJSON != nil {
		buf.Reset()
		if json.Indent(&buf, manifestJSON, "", "  ") != nil {
			buf.Reset()
			buf.Write(manifestJSON)
		}
		manifest = buf.String()
		files.put("manifest.json", bytes.Clone(buf.Bytes()))
	}

	x, others := xAxis(pts)
	fs := facets(pts, x, others)
	xl := xLabels[x]
	if xl == "" {
		xl = x
	}
	page := indexPage{XLabel: xl, Manifest: manifest, HasManifest: manifestJSON != nil, Points: len(pts)}
	for _, f := range fs {
		figs, skipped, err := f.figures(files, x)
		if err != nil {
			_, _ = files.wait()
			return nil, err
		}
		page.Facets = append(page.Facets, facetView{Title: f.title, Figures: figs, Skipped: skipped,
			Facets: len(fs), TableRows: tableRows(f, x)})
	}
	for _, m := range tableMetrics {
		page.Metrics = append(page.Metrics, metricLabel(m))
	}
	for _, p := range pts {
		page.Unstable += min(p.NUnstable, 1)
		page.Failed += p.NFailed
	}
	buf.Reset()
	if err := indexTmpl.Execute(&buf, page); err != nil {
		_, _ = files.wait()
		return nil, err
	}
	files.put("index.html", bytes.Clone(buf.Bytes()))
	return files.wait()
}

type indexPage struct {
	XLabel           string
	Metrics          []string
	Facets           []facetView
	Manifest         string
	HasManifest      bool
	Points           int
	Unstable, Failed int
}

var indexTmpl = template.Must(template.New("index").Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>msjfarm report</title>
<style>
body { font-family: sans-serif; margin: 1.5em; color: #222; }
table { border-collapse: collapse; font-size: 0.85em; }
th, td { border: 1px solid #ccc; padding: 0.2em 0.5em; text-align: right; white-space: nowrap; }
th { background: #f0f0f0; }
td:first-child { text-align: left; }
tr.unstable td { background: #fde2e2; }
tr.failed td:nth-child(5) { color: #b00; font-weight: bold; }
figure { display: inline-block; margin: 0.5em; vertical-align: top; }
figure img { width: 720px; max-width: 100%; border: 1px solid #eee; }
figure.wide { display: block; }
figure.wide img { width: auto; max-width: 100%; }
figcaption { font-size: 0.85em; }
pre { background: #f7f7f7; padding: 0.8em; overflow-x: auto; font-size: 0.8em; }
</style>
</head>
<body>
<h1>msjfarm report</h1>
<p>{{.Points}} points.{{if .Unstable}} <strong>{{.Unstable}} unstable</strong> (some replication flagged by the engine: shown as ▲ at the top edge of the plots and shaded in the table; their values are lower bounds, not estimates).{{end}}{{if .Failed}} <strong>{{.Failed}} failed replications</strong> (see summary.json for the errors).{{end}}
Error bars and ± are 95% Student-t confidence intervals over independent replications (∞: one replication).</p>
<ul>
<li><a href="summary.csv">summary.csv</a> — every metric, one row per point (columns documented in aggregate/COLUMNS.md)</li>
<li><a href="summary.json">summary.json</a> — the same, with class names and failure messages</li>
{{if .HasManifest}}<li><a href="manifest.json">manifest.json</a> — versions, plugin sha256s, seeds: what reproduces these numbers</li>{{end}}
</ul>
{{range .Facets}}
<h2>{{.Title}}</h2>
{{range .Figures}}<figure{{if .Wide}} class="wide"{{end}}><a href="{{.Name}}.svg"><img src="{{.Name}}.png" alt="{{.Title}}"></a><figcaption>{{.Title}} — <a href="{{.Name}}.svg">SVG</a> · <a href="{{.Name}}.png">PNG</a></figcaption></figure>
{{end}}
{{if .Skipped}}<p>Not plotted (zero or undefined at every point): {{range $i, $s := .Skipped}}{{if $i}}, {{end}}{{$s}}{{end}}.</p>{{end}}
<h3>Summary</h3>
<table>
<tr><th>policy</th><th>{{$.XLabel}}</th><th>load ρ</th><th>n</th><th>failed</th><th>unstable</th>{{range $.Metrics}}<th>{{.}}</th>{{end}}</tr>
{{range .TableRows}}<tr{{if .Unstable}} class="unstable"{{else if .Failed}} class="failed"{{end}}>{{range .Cells}}<td>{{.}}</td>{{end}}</tr>
{{end}}</table>
{{end}}
{{if .HasManifest}}<h2>Manifest</h2>
<details><summary>manifest.json</summary><pre>{{.Manifest}}</pre></details>{{end}}
</body>
</html>
`))
