package report

import (
	"bytes"
	"compress/gzip"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/msjfarm/msjfarm/internal/pyfind"
	"github.com/msjfarm/msjfarm/results/aggregate"
)

// bigCampaign synthesises a campaign of policies × sizes × rates points
// through the real aggregate types (a real one is measured in
// docs/report.md): one-or-all-like, the load ρ and its heavy class's mean
// size s swept ("class[1].service.mean": every size is a facet).
// E[T] = 1/(1−ρ), λ = ρ/(0.9/32 + 0.1·s); a point with ρ ≥ 0.95 is
// unstable (its mean a bound). Policy i scales E[T] by 1 + i/4 so the
// panels differ.
func bigCampaign(policies, sizes, rates int) Campaign {
	var pts []aggregate.Point
	for pi := 0; pi < policies; pi++ {
		pol := fmt.Sprintf("pol%d", pi)
		for si := 0; si < sizes; si++ {
			s := 0.25 * math.Pow(40, float64(si)/float64(max(1, sizes-1)))
			for ri := 0; ri < rates; ri++ {
				per := 0.9/32 + 0.1*s
				rho := 0.05 + 0.95*float64(ri)/float64(rates)
				lam := rho / per
				p := aggregate.Point{Point: fmt.Sprintf("%s-%d-%d", pol, si, ri), Scenario: fmt.Sprintf("%d-%d", si, ri),
					Workload: "one-or-all", Servers: 32, Policy: pol, Params: map[string]any{},
					Axes:        map[string]any{"load": rho, "class[1].service.mean": s},
					ArrivalRate: lam, Load: rho, Replications: 2, N: 2, Verdict: "stable"}
				mean := (1 + float64(pi)/4) / (1 - rho)
				if rho >= 0.95 {
					p.Verdict, p.NUnstable, mean = "unstable", 2, 100*mean
				}
				p.Metrics = []aggregate.Metric{
					aggregate.NewMetric(aggregate.MetricDesc{Name: "mean_response", Base: "mean_response", Class: -1}, mean, 0.05*mean, 2),
					aggregate.NewMetric(aggregate.MetricDesc{Name: "mean_wait", Base: "mean_wait", Class: -1}, mean-1, 0.05*mean, 2),
					aggregate.NewMetric(aggregate.MetricDesc{Name: "utilization", Base: "utilization", Class: -1}, math.Min(rho, 1), 0.01, 2),
				}
				pts = append(pts, p)
			}
		}
	}
	return Campaign{Points: pts}
}

// TestReportAtScale: a campaign of 5 policies × 40 sizes × 60 rates
// (12,000 points, 40 facets) gets one heat-map figure per metric (5
// panels each) instead of 40 sets of line plots: a few dozen files, a
// few MB, the summary in the data files only; every cell in the figure's
// CSV, the unstable ones as lower bounds.
func TestReportAtScale(t *testing.T) {
	if testing.Short() {
		t.Skip("renders 12,000 points")
	}
	c := bigCampaign(5, 40, 60)
	files, err := Render(c)
	if err != nil {
		t.Fatal(err)
	}
	checkScaleFiles(t, files)
	zr, err := gzip.NewReader(bytes.NewReader(files["heat_mean_response.csv.gz"]))
	if err != nil {
		t.Fatal(err)
	}
	raw, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	csv := string(raw)
	if n := strings.Count(csv, "\n") - 1; n != 12000 {
		t.Errorf("heat_mean_response.csv has %d rows, want 12000", n)
	}
	// ρ = 0.05 + 0.95 i/60 ≥ 0.95 ⇔ i ≥ 56.8: 3 loads × 40 sizes × 5
	// policies.
	if n := strings.Count(csv, aggregate.ReadLowerBound); n != 600 {
		t.Errorf("%d lower bounds in heat_mean_response.csv, want 600", n)
	}
	checkScalePage(t, files)
}

// checkScaleFiles checks the file set of bigCampaign(5, 40, 60)'s report:
// its size and count, a heat map per metric in every format, no line
// plots, the tables compressed (the tidy ones Parquet only).
func checkScaleFiles(t *testing.T, files map[string][]byte) {
	t.Helper()
	total := 0
	for _, b := range files {
		total += len(b)
	}
	t.Logf("%d files, %.1f MB", len(files), float64(total)/1e6)
	if len(files) >= 300 || total >= 50<<20 {
		t.Errorf("%d files, %d bytes: want under 300 files and 50 MB", len(files), total)
	}
	for _, m := range []string{"mean_response", "mean_wait", "utilization"} {
		for _, ext := range []string{".svg", ".pdf", ".png", ".csv.gz", ".py"} {
			if files["heat_"+m+ext] == nil {
				t.Errorf("no heat_%s%s", m, ext)
			}
		}
	}
	if files["mean_response.svg"] != nil || files["f1_mean_response.svg"] != nil {
		t.Errorf("line plots drawn for a 40-facet campaign")
	}
	for _, f := range []string{"summary.csv.gz", "summary_long.parquet", "summary.json.gz", "heat_mean_response.csv.gz"} {
		if files[f] == nil {
			t.Errorf("no %s: a large campaign's tables are compressed (the tidy ones Parquet only)", f)
		}
	}
	if files["summary_long.csv.gz"] != nil || files["summary_long.csv"] != nil {
		t.Errorf("summary_long as CSV at scale")
	}
}

// checkScalePage checks bigCampaign(5, 40, 60)'s index.html (no
// 12,000-row table, links to the compressed files) and its heat map's SVG
// (labelled outlines, one image per panel).
func checkScalePage(t *testing.T, files map[string][]byte) {
	t.Helper()
	idx := string(files["index.html"])
	if !strings.Contains(idx, "12000 points: more than the 2000 a page lists") || strings.Count(idx, "<tr") > 100 {
		t.Errorf("index.html lists the 12,000-row summary")
	}
	if !strings.Contains(idx, `href="summary.csv.gz"`) || !strings.Contains(idx, `href="heat_mean_response.csv.gz"`) || strings.Contains(idx, `href="summary_long.csv`) {
		t.Errorf("index.html does not link the compressed tables")
	}
	svg := files["heat_mean_response.svg"]
	for _, s := range []string{"<title>pol0</title>", "<title>class[1].service.mean</title>", "<title>load ρ</title>", "<title>bound (unstable)</title>"} {
		if !bytes.Contains(svg, []byte(s)) {
			t.Errorf("heat_mean_response.svg lacks %s", s)
		}
	}
	// The cells are one image per panel, not 12,000 rectangles.
	if n := bytes.Count(svg, []byte("<image ")); n != 5 || len(svg) > 200<<10 {
		t.Errorf("heat_mean_response.svg: %d images, %d bytes; want 5 and under 200 kB", n, len(svg))
	}
}

// TestHeatForManyVariants: one policy with 40 variants of a parameter
// beside a baseline is drawn as heat maps, a panel per policy, the
// variants as rows in the parameter's numeric order (not as text:
// threshold=10 after threshold=9).
func TestHeatForManyVariants(t *testing.T) {
	var pts []aggregate.Point
	add := func(pol string, params map[string]any, lam, mean float64) {
		pts = append(pts, aggregate.Point{Workload: "one-or-all", Servers: 32, Policy: pol, Params: params,
			Axes: map[string]any{"arrival_rate": lam}, ArrivalRate: lam, Load: lam / 7.8, Replications: 2, N: 2,
			Verdict: "stable", Metrics: []aggregate.Metric{aggregate.NewMetric(aggregate.MetricDesc{Name: "mean_response", Base: "mean_response", Class: -1}, mean, 0.1, 2)}})
	}
	for _, lam := range []float64{1, 2, 3} {
		add("fcfs", map[string]any{}, lam, 10*lam)
		for th := 0; th < 40; th++ {
			add("msfq", map[string]any{"threshold": float64(th)}, lam, lam+float64(th)/10)
		}
	}
	x, others := xAxis(pts)
	groups := heatLayout(pts, facets(pts, nil, x, others), nil, x, others)
	if len(groups) != 1 || len(groups[0].panels) != 2 {
		t.Fatalf("groups %+v: want one group, panels fcfs and msfq", groups)
	}
	msfq := groups[0].panels[1]
	if msfq.title != "msfq" || len(msfq.rows) != 40 || msfq.rows[9] != "threshold=9" || msfq.rows[10] != "threshold=10" {
		t.Errorf("msfq panel %q rows %v", msfq.title, msfq.rows)
	}
	if fcfs := groups[0].panels[0]; len(fcfs.rows) != 1 || fcfs.rows[0] != "fcfs" {
		t.Errorf("fcfs panel rows %v", fcfs.rows)
	}
	files, err := Render(Campaign{Points: pts})
	if err != nil {
		t.Fatal(err)
	}
	if files["heat_mean_response.svg"] == nil || files["mean_response.svg"] != nil {
		t.Errorf("want a heat map, not a 41-curve line plot")
	}
}

// TestHeatScale: bins with round edges, hand-checked. Means 1.5 … 900
// span 2.8 decades: a log scale with edges 1, 2, 5, 10, …, 1000 (9
// bins); 3 … 7.5 a linear one with niceTicks' step 0.5 (6 labels).
func TestHeatScale(t *testing.T) {
	sc, ok := newHeatScale([]float64{1.5, 30, 900})
	if !ok || !sc.log {
		t.Fatalf("scale %+v: want log", sc)
	}
	want := []float64{1, 2, 5, 10, 20, 50, 100, 200, 500, 1000}
	if fmt.Sprint(sc.edges) != fmt.Sprint(want) {
		t.Errorf("edges %v, want %v", sc.edges, want)
	}
	if sc.bin(1.5) != 0 || sc.bin(2) != 1 || sc.bin(900) != 8 || sc.bin(1e6) != 8 {
		t.Errorf("bins of 1.5, 2, 900, 1e6: %d %d %d %d", sc.bin(1.5), sc.bin(2), sc.bin(900), sc.bin(1e6))
	}
	lin, ok := newHeatScale([]float64{3, 5, 7.5})
	if !ok || lin.log || lin.edges[0] > 3 || lin.edges[len(lin.edges)-1] <= 7.5 || lin.bins() > 12 {
		t.Errorf("linear scale %+v", lin)
	}
	if c0, c1 := lin.colour(0), lin.colour(lin.bins()-1); c0 == c1 {
		t.Errorf("first and last bins share a colour")
	}
}

// BenchmarkRenderAtScale renders bigCampaign's 12,000 points (the target
// is under 60 s: docs/report.md).
func BenchmarkRenderAtScale(b *testing.B) {
	c := bigCampaign(5, 40, 60)
	for b.Loop() {
		if _, err := Render(c); err != nil {
			b.Fatal(err)
		}
	}
}

// TestHeatScript runs a heat map's matplotlib script (python3 with
// matplotlib; skipped without) on a compressed-CSV report and compares the
// grid it drew with the CSV: every estimate in its cell, bounds left out.
func TestHeatScript(t *testing.T) {
	python := pyfind.With("matplotlib")
	if python == "" {
		t.Skip("no python3 with matplotlib (apt-get install python3-matplotlib; or set MSJFARM_PYTHON)")
	}
	// 3 × 10 × 70 = 2,100 points, past maxTableRows: the CSV is
	// compressed and the script reads name.csv.gz.
	c := bigCampaign(3, 10, 70)
	files, err := Render(c)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := WriteFiles(dir, files); err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(dir, "heat_mean_response.py")
	dump := filepath.Join(dir, "drawn.json")
	if out, err := exec.Command(python, script, "--dump", dump).CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", script, err, out)
	}
	var drawn []struct {
		Panel string
		X     []float64
		Rows  []string
		Z     [][]*float64
	}
	b, err := os.ReadFile(dump)
	if err != nil {
		t.Fatal(err)
	}
	// json has no NaN: the script writes NaN, which Go's decoder refuses.
	if err := json.Unmarshal(bytes.ReplaceAll(b, []byte("NaN"), []byte("null")), &drawn); err != nil {
		t.Fatal(err)
	}
	zr, err := gzip.NewReader(bytes.NewReader(files["heat_mean_response.csv.gz"]))
	if err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(zr).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]float64{}
	for _, r := range rows[1:] {
		if r[5] == aggregate.ReadEstimate {
			x, _ := strconv.ParseFloat(r[2], 64)
			want[fmt.Sprint(r[0], r[1], x)], _ = strconv.ParseFloat(r[3], 64)
		}
	}
	cells := 0
	for _, d := range drawn {
		for j, r := range d.Rows {
			for i, x := range d.X {
				z := d.Z[j][i]
				if z == nil {
					continue
				}
				cells++
				if w, ok := want[fmt.Sprint(d.Panel, r, x)]; !ok || w != *z {
					t.Errorf("%s row %s x %g: drew %g, CSV %g (%v)", d.Panel, r, x, *z, w, ok)
				}
			}
		}
	}
	if len(drawn) != 3 || cells != len(want) {
		t.Errorf("drew %d panels, %d cells; want 3 panels and the CSV's %d estimates", len(drawn), cells, len(want))
	}
}

// TestHeatClassCounters: a heat-map report groups a per-class counter as
// the line-plot report does (TestClassCounterFigure): one figure for
// Kill-Smart-like kills/<class> (counter_kills_by_class, beside the
// whole-system counter_kills), a panel per series and class, not a figure
// per class's column. 41 variants of one policy at 3 rates make it a
// heat-map report (maxCurves).
func TestHeatClassCounters(t *testing.T) {
	var pts []aggregate.Point
	for _, lam := range []float64{1, 2, 3} {
		for th := range 41 {
			m := func(name, base string, class int, v float64) aggregate.Metric {
				return aggregate.NewMetric(aggregate.MetricDesc{Name: name, Base: base, Class: -1, ClassCounter: base != name, CounterClass: class}, v, 0.1, 2)
			}
			pts = append(pts, aggregate.Point{Workload: "two", Servers: 4, Policy: "ks", Params: map[string]any{"K": float64(th)},
				Classes: []aggregate.Class{{Name: "small", Need: 1}, {Name: "large", Need: 4}},
				Axes:    map[string]any{"arrival_rate": lam}, ArrivalRate: lam, Load: lam / 4, Replications: 2, N: 2, Verdict: "stable",
				Metrics: []aggregate.Metric{m("mean_response", "mean_response", 0, lam+float64(th)), m("counter_kills", "counter_kills", 0, lam),
					m("counter_kills_small", "counter_kills", 0, lam*2), m("counter_kills_large", "counter_kills", 1, lam*3)}})
		}
	}
	files, err := Render(Campaign{Points: pts})
	if err != nil {
		t.Fatal(err)
	}
	if files["heat_counter_kills_by_class.svg"] == nil || files["heat_counter_kills.svg"] == nil {
		t.Fatalf("no heat_counter_kills_by_class / heat_counter_kills figure")
	}
	for _, col := range []string{"counter_kills_small", "counter_kills_large"} {
		if files["heat_"+col+".svg"] != nil {
			t.Errorf("heat_%s: a figure per class's column", col)
		}
	}
	rows, err := csv.NewReader(bytes.NewReader(files["heat_counter_kills_by_class.csv"])).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	// 41 rows × 3 columns per panel; panels ks, class small (kills 2λ)
	// and ks, class large (3λ).
	count := map[string]int{}
	for _, r := range rows[1:] {
		count[r[0]]++
		lam, _ := strconv.ParseFloat(r[2], 64)
		v, _ := strconv.ParseFloat(r[3], 64)
		if want := map[string]float64{"ks, class small": 2, "ks, class large": 3}[r[0]] * lam; v != want {
			t.Errorf("panel %s at λ=%g: %g, want %g", r[0], lam, v, want)
		}
	}
	if len(count) != 2 || count["ks, class small"] != 123 || count["ks, class large"] != 123 {
		t.Errorf("panels %v, want ks, class small and ks, class large with 123 cells each", count)
	}
}
