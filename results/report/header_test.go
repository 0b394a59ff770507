package report

import (
	"bytes"
	"encoding/binary"
	"encoding/csv"
	"html"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"

	"github.com/msjfarm/msjfarm/results/aggregate"
	"github.com/msjfarm/msjfarm/sim"
)

// testManifest is a manifest.json as the coordinator writes it, with the
// fields the header shows.
func testManifest(id, name, desc string) []byte {
	return []byte(`{"campaign":"` + id + `","name":"` + name + `","state":"done","msjfarm_version":"` + sim.Version + `",
"created":"2026-03-01T10:00:00Z","finished":"2026-03-01T10:05:00Z","storage":"file:///data/farm",
"sweep":{"name":"` + name + `","description":"` + desc + `"},
"policies":[{"policy":"fcfs","runner":"in-process","engine":"` + sim.Version + `","results":6}]}`)
}

// TestReportPage renders a simulated campaign with its records and
// manifest and checks what issue #17 asks of the page: a header with name,
// description, date, versions and the reproducing commands; a table of
// contents whose links resolve; every figure in SVG, PNG and PDF; the
// sortable summary table in a scroll container; the three tables in CSV and
// Parquet; and the column documentation embedded in the page itself.
func TestReportPage(t *testing.T) {
	c := simulateCampaign(t, "one-or-all", []policyRun{fcfsRun()}, []float64{0.5, 1, 1.5}, 2, 5000)
	c.Manifest = testManifest("0123456789abcdef", "fcfs-check", "FCFS on one-or-all <light load>")
	dir := t.TempDir()
	if err := Write(dir, c); err != nil {
		t.Fatal(err)
	}
	checkReport(t, dir, []string{"mean_response", "utilization", "class_mean_response"})
	page, _ := os.ReadFile(filepath.Join(dir, "index.html"))
	idx := string(page)
	for _, want := range []string{
		"<title>fcfs-check (0123456789abcdef) — msjfarm report</title>",
		"<h1>fcfs-check</h1>",
		"FCFS on one-or-all &lt;light load&gt;", // escaped, not markup
		"2026-03-01 10:05 UTC",
		"msjfarm engine " + sim.Version,
		"fcfs: in-process, engine " + sim.Version,
		"msjfarm reproduce 0123456789abcdef --all --storage file:///data/farm",
		"msjfarm report 0123456789abcdef --storage file:///data/farm",
		`<nav>`, `href="#fig-mean_response"`, `href="#data"`, `href="#columns"`,
		`<div class="scroll">`, `<table class="sortable">`, `table.querySelectorAll("thead th")`,
		`href="mean_response.pdf"`,
		`href="summary_long.parquet"`, `href="replications.csv"`,
	} {
		if !strings.Contains(idx, want) {
			t.Errorf("index.html lacks %q", want)
		}
	}
	// The column reference is in the page (escaped), and shipped beside it.
	title := strings.TrimPrefix(strings.SplitN(aggregate.ColumnsDoc, "\n", 2)[0], "# ")
	if !strings.Contains(idx, "<h3>"+html.EscapeString(title)+"</h3>") || !strings.Contains(idx, "<tr><td><code>n_unstable</code></td>") {
		t.Errorf("index.html does not embed COLUMNS.md as HTML")
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "COLUMNS.md")); string(b) != aggregate.ColumnsDoc {
		t.Errorf("COLUMNS.md not shipped with the report")
	}
	// Numeric cells carry their sort value.
	if !regexp.MustCompile(`<td data-v="[0-9.e+-]+">[^<]+ ± `).MatchString(idx) {
		t.Errorf("summary table cells lack data-v sort keys")
	}
	// The tables read back: as many rows as points, points × metrics and
	// tasks, in CSV and in Parquet.
	nm := 0
	for _, p := range c.Points {
		nm += len(p.Metrics)
	}
	for name, rows := range map[string]int{"summary": len(c.Points), "summary_long": nm, "replications": len(c.Tasks)} {
		f, err := os.Open(filepath.Join(dir, name+".csv"))
		if err != nil {
			t.Fatal(err)
		}
		recs, err := csv.NewReader(f).ReadAll()
		f.Close()
		if err != nil || len(recs) != rows+1 {
			t.Errorf("%s.csv: %d rows (%v), want %d", name, len(recs)-1, err, rows)
		}
		pq, err := os.ReadFile(filepath.Join(dir, name+".parquet"))
		if err != nil {
			t.Fatal(err)
		}
		pf, err := parquet.OpenFile(bytes.NewReader(pq), int64(len(pq)))
		if err != nil || pf.NumRows() != int64(rows) {
			t.Errorf("%s.parquet: %v, want %d rows", name, err, rows)
		}
	}
}

// TestConstantCounterOmitted: a counter with the same value and a zero
// interval at every point (a parameter echoed back) is listed with its
// value, not plotted; a counter that varies is plotted.
func TestConstantCounterOmitted(t *testing.T) {
	var pts []aggregate.Point
	for i, lam := range []float64{1, 2, 3} {
		pts = append(pts, aggregate.Point{Point: string(rune('a' + i)), Workload: "w", Servers: 4, Policy: "nmsr",
			Params: map[string]any{"cycle": 100}, Axes: map[string]any{"arrival_rate": lam}, ArrivalRate: lam,
			Replications: 2, N: 2, Metrics: []aggregate.Metric{
				aggregate.NewMetric(aggregate.MetricDesc{Name: "mean_response", Class: -1, Base: "mean_response"}, lam, 0.1, 2),
				aggregate.NewMetric(aggregate.MetricDesc{Name: "counter_cycle_time", Class: -1, Base: "counter_cycle_time"}, 100, 0, 2),
				aggregate.NewMetric(aggregate.MetricDesc{Name: "counter_cycles", Class: -1, Base: "counter_cycles"}, 10*lam, 0, 2),
			}})
	}
	files, err := Render(Campaign{Points: pts})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := files["counter_cycle_time.png"]; ok {
		t.Errorf("constant counter plotted")
	}
	if _, ok := files["counter_cycles.png"]; !ok {
		t.Errorf("varying counter not plotted")
	}
	if !bytes.Contains(files["index.html"], []byte("counter_cycle_time (nmsr: 100)")) {
		t.Errorf("index.html does not list the constant counter with its value")
	}
}

// TestSweptLabels: swept values print as written when short; computed
// ones (a limit sweep's rates) with the fewest digits, at least 3, that
// keep them apart.
func TestSweptLabels(t *testing.T) {
	for _, c := range []struct {
		in   []float64
		want []string
	}{
		{[]float64{0.1, 0.25, 1, 2048}, []string{"0.1", "0.25", "1", "2048"}},
		// q-fig3-limit's rates: 3 digits tell them apart.
		{[]float64{2.982192528589757, 3.053135051375026, 3.125737194875385}, []string{"2.98", "3.05", "3.13"}},
		// 3 digits would merge 1.0001 and 1.0002 (both "1"): 5 are needed.
		{[]float64{1.00012345678, 1.00023456789}, []string{"1.0001", "1.0002"}},
	} {
		got := sweptLabels(c.in)
		if strings.Join(got, " ") != strings.Join(c.want, " ") {
			t.Errorf("sweptLabels(%v) = %q, want %q", c.in, got, c.want)
		}
	}
}

// TestSweptTicks: the x axis is labelled at the swept values, a label
// that would overlap its neighbour moves to a second row, and one that
// would overlap on both rows keeps an unlabelled tick.
func TestSweptTicks(t *testing.T) {
	p := plot.New()
	vals := []float64{1, 2, 4, 6, 7, 7.5, 7.7}
	st := &sweptTicks{values: vals, width: 5 * vg.Inch, font: p.X.Tick.Label}
	ts := st.Ticks(0.8, 7.9)
	if len(ts) != len(vals) {
		t.Fatalf("%d ticks, want one per swept value (%d)", len(ts), len(vals))
	}
	labels := map[float64]string{}
	for i, tk := range ts {
		if tk.Value != vals[i] {
			t.Errorf("tick %d at %v, want %v", i, tk.Value, vals[i])
		}
		labels[tk.Value] = tk.Label
	}
	for _, v := range []float64{1, 2, 4, 6, 7, 7.5} {
		if labels[v] != strings.TrimSpace(labels[v]) || labels[v] == "" {
			t.Errorf("label of %v = %q, want it on the first row", v, labels[v])
		}
	}
	if labels[7.7] != "\n7.7" {
		t.Errorf("label of 7.7 = %q, want it on the second row", labels[7.7])
	}
	// Far too narrow: some ticks lose their labels, none is dropped.
	st.width = vg.Points(40)
	ts = st.Ticks(0.8, 7.9)
	empty := 0
	for _, tk := range ts {
		if tk.Label == "" {
			empty++
		}
	}
	if len(ts) != len(vals) || empty == 0 {
		t.Errorf("narrow axis: %d ticks, %d unlabelled; want %d ticks, some unlabelled", len(ts), empty, len(vals))
	}
}

// TestClippedIntervalMarked: on a log axis an interval reaching below zero
// is cut at the floor and the figure says so in its legend.
func TestClippedIntervalMarked(t *testing.T) {
	c := curve{label: "x"}
	for i, m := range []float64{1, 10, 100, 1000} {
		hw := 0.1 * m
		if i == 3 {
			hw = 2 * m // lower end below zero
		}
		c.add(float64(i+1), m, hw, false)
	}
	out := renderCurve(t, "f", c)
	if !bytes.Contains(out["f.svg"], []byte("CI cut at the axis")) {
		t.Errorf("legend lacks the clipped-interval entry")
	}
	c.hw[3] = 0.1 * c.mean[3]
	out = renderCurve(t, "g", c)
	if bytes.Contains(out["g.svg"], []byte("CI cut at the axis")) {
		t.Errorf("clipped-interval legend entry without a clipped interval")
	}
	// One replication: every half-width is +Inf, and no bar is drawn (each
	// was a bar across the whole axis, cut at both ends).
	for i := range c.hw {
		c.hw[i] = math.Inf(1)
	}
	out = renderCurve(t, "h", c)
	if bytes.Contains(out["h.svg"], []byte("CI cut at the axis")) {
		t.Errorf("infinite half-widths drawn as intervals cut at the axis")
	}
}

// renderCurve renders curve c as a one-panel column figure named name and
// returns its files (name.svg, name.png, ...).
func renderCurve(t *testing.T, name string, c curve) map[string][]byte {
	t.Helper()
	files := newFiles()
	if err := render(files, name, [][]*plot.Plot{{newPlot("t", "x", "y", []curve{c}, true)}}, colW, colH, true); err != nil {
		t.Fatal(err)
	}
	out, err := collect(files)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestOverlay renders two campaigns in one report: both appear in the
// header, each series is labelled with its campaign, and the summary table
// lists the points of both.
func TestOverlay(t *testing.T) {
	a := simulateCampaign(t, "one-or-all", []policyRun{fcfsRun()}, []float64{0.5, 1}, 2, 3000)
	b := simulateCampaign(t, "one-or-all", []policyRun{fcfsRun()}, []float64{0.5, 1, 1.5}, 2, 3000)
	a.Manifest = testManifest("aaaaaaaaaaaaaaaa", "run-a", "first")
	b.Manifest = testManifest("bbbbbbbbbbbbbbbb", "run-b", "second")
	files, err := Render(a, b)
	if err != nil {
		t.Fatal(err)
	}
	idx := string(files["index.html"])
	for _, want := range []string{"Overlay of 2 campaigns", "<strong>run-a</strong>", "<strong>run-b</strong>",
		"msjfarm report aaaaaaaaaaaaaaaa bbbbbbbbbbbbbbbb --storage file:///data/farm"} {
		if !strings.Contains(idx, want) {
			t.Errorf("index.html lacks %q", want)
		}
	}
	if n := strings.Count(idx, "<td>run-a: fcfs</td>"); n != 2 {
		t.Errorf("%d table rows of run-a, want 2", n)
	}
	if n := strings.Count(idx, "<td>run-b: fcfs</td>"); n != 3 {
		t.Errorf("%d table rows of run-b, want 3", n)
	}
	svg := string(files["mean_response.svg"])
	if !strings.Contains(svg, "run-a: fcfs") || !strings.Contains(svg, "run-b: fcfs") {
		t.Errorf("mean_response.svg legend lacks a campaign's series")
	}
	// Same names: the legends add the id.
	b.Manifest = testManifest("bbbbbbbbbbbbbbbb", "run-a", "second")
	files, err = Render(a, b)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(files["index.html"]), "run-a (bbbbbbbb): fcfs") {
		t.Errorf("campaigns of the same name not told apart")
	}
}

// TestMarkdownHTML covers the Markdown subset of the column reference.
func TestMarkdownHTML(t *testing.T) {
	md := "# Title <x>\n\nSome **bold** and `a|b` text\nwrapped, **`inf`**.\n\n| col | meaning |\n|---|---|\n| `x|y` | one <b> |\n\n```python\nif a < b: pass\n```\n"
	want := "<h3>Title &lt;x&gt;</h3>\n<p>Some <strong>bold</strong> and <code>a|b</code> text wrapped, <strong><code>inf</code></strong>.</p>\n" +
		"<table class=\"doc\">\n<tr><th>col</th><th>meaning</th></tr>\n<tr><td><code>x|y</code></td><td>one &lt;b&gt;</td></tr>\n</table>\n" +
		"<pre>if a &lt; b: pass</pre>\n"
	if got := string(markdownHTML(md)); got != want {
		t.Errorf("markdownHTML:\n got %q\nwant %q", got, want)
	}
}

// TestLinearFloorNotCut: on a linear axis from 0 (a non-negative
// quantity) an interval reaching below 0 stops at 0 unmarked — the floor
// is the quantity's, as a bound is — where on a log axis it is a cut.
// Means 1, 2, 3, 4 (one decade: linear), the first ± 3: its bar runs
// from 0 (not −2) to 4.
func TestLinearFloorNotCut(t *testing.T) {
	c := curve{label: "x"}
	for i, m := range []float64{1, 2, 3, 4} {
		c.add(float64(i+1), m, 0.1, false)
	}
	c.hw[0] = 3
	ax, _ := newYAxis([]curve{c}, false)
	if ax.log || ax.lo != 0 {
		t.Fatalf("axis log %v from %g, want linear from 0", ax.log, ax.lo)
	}
	m := ax.marks(c, 0)
	if len(m.clipLo) != 0 {
		t.Errorf("interval below the floor marked as cut: %v", m.clipLo)
	}
	if e := m.bars.YErrors[0]; e.Low != 1 || e.High != 3 {
		t.Errorf("bar of 1 ± 3 drawn as −%g/+%g, want −1/+3 (0 to 4)", e.Low, e.High)
	}
}

// collect runs f's drawings and returns the files its in-memory sink
// (newFiles) kept.
func collect(f *files) (Files, error) {
	if err := f.wait(); err != nil {
		return nil, err
	}
	return f.sink.(Files), nil
}

// The page's reproducing commands name what the report was read from: a
// report rebuilt from an archive, or from another store than the one the
// campaign ran on, named the author's store (the manifest's), a path on
// another machine.
func TestReportCommandsFrom(t *testing.T) {
	m := parseManifest(testManifest("0123456789abcdef", "x", ""))
	for _, c := range []struct {
		from    Campaign
		want    []string
		wantNot string
	}{
		{Campaign{}, []string{"msjfarm reproduce 0123456789abcdef --all --storage file:///data/farm"}, ""},
		{Campaign{From: "file:///home/reader/store"}, []string{"msjfarm reproduce 0123456789abcdef --all --storage file:///home/reader/store",
			"msjfarm report 0123456789abcdef --storage file:///home/reader/store"}, "/data/farm"},
		{Campaign{From: "paper's fig 3.msjar", FromArchive: true}, []string{`msjfarm reproduce 'paper'\''s fig 3.msjar' --all`,
			`msjfarm report 'paper'\''s fig 3.msjar'`}, "--storage"},
	} {
		got := strings.Join(m.commands(c.from), "\n")
		for _, w := range c.want {
			if !strings.Contains(got, w) {
				t.Errorf("from %+v: commands lack %q:\n%s", c.from, w, got)
			}
		}
		if c.wantNot != "" && strings.Contains(got, c.wantNot) {
			t.Errorf("from %+v: commands name %q:\n%s", c.from, c.wantNot, got)
		}
	}
}

// With the load as the swept axis the summary table has one load column:
// it had two, headed "load ρ | load ρ", the second repeating the first.
// Every row has a cell per header.
func TestSummaryTableLoadOnce(t *testing.T) {
	c := simulateCampaign(t, "one-or-all", []policyRun{fcfsRun()}, []float64{0.5, 1}, 2, 2000)
	for i := range c.Points {
		c.Points[i].Axes = map[string]any{"load": aggregate.RoundInput(c.Points[i].Load)}
	}
	files, err := Render(Campaign{Points: c.Points})
	if err != nil {
		t.Fatal(err)
	}
	page := string(files["index.html"])
	table := page[strings.Index(page, `<table class="sortable">`):]
	table = table[:strings.Index(table, "</table>")]
	head := table[:strings.Index(table, "</thead>")]
	if n := strings.Count(head, "<th>load ρ</th>"); n != 1 {
		t.Errorf("%d load columns in %s", n, head)
	}
	ths := strings.Count(head, "<th>")
	for _, row := range strings.Split(table[strings.Index(table, "<tbody>"):], "<tr")[1:] {
		if tds := strings.Count(row, "<td"); tds != ths {
			t.Errorf("a row of %d cells under %d headers: %s", tds, ths, row)
		}
	}
}

// TestPNGResolution: the PNGs say they are 300 dpi (a pHYs chunk of 11811
// pixels per metre) and still decode. They said nothing, and a column
// figure placed without a width came out 13.75 in wide, at 72 dpi.
func TestPNGResolution(t *testing.T) {
	c := curve{label: "x"}
	c.add(1, 1, 0.1, false)
	c.add(2, 2, 0.1, false)
	data := renderCurve(t, "f", c)["f.png"]
	img, err := png.Decode(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("decode: %v", err)
	}
	// 3.3 in at 300 dpi: 990 pixels.
	if w := img.Bounds().Dx(); w != 990 {
		t.Errorf("width %d px, want 990", w)
	}
	i := bytes.Index(data, []byte("pHYs"))
	if i != 37 || len(data) < i+13 {
		t.Fatalf("pHYs at %d, want 37 (right after IHDR)", i)
	}
	x, y, unit := binary.BigEndian.Uint32(data[i+4:]), binary.BigEndian.Uint32(data[i+8:]), data[i+12]
	if x != 11811 || y != 11811 || unit != 1 {
		t.Errorf("pHYs %d × %d per unit %d, want 11811 per metre (300 dpi)", x, y, unit)
	}
}
