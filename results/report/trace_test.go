package report

import (
	"strings"
	"testing"

	"github.com/msjfarm/msjfarm/results/aggregate"
)

// TestTraceReportGolden: a campaign replaying a trace (no swept axis; its
// points' λ and ρ are 0, not parameters) was drawn against "load ρ", every
// policy at a fake ρ = 0 on an axis from −0.4 to 0.4, and its tables read
// λ 0, ρ 0. Its figures now put the policies side by side on a categorical
// axis (each with its interval, no line joining them), every figure the
// report makes (per metric, per class, the comparison, MSFQ's phase panels
// for phase counters), their scripts name the categories, and the tables
// print λ and ρ as "—". The points are a real trace campaign's summary
// (fcfs, msf, serverfilling on an 8-server SWF trace), with two phase
// counters added to draw the phase figure.
func TestTraceReportGolden(t *testing.T) {
	pts := loadSummary(t, "trace_summary.json")
	for i := range pts {
		for z, v := range []float64{1.5, 2.5} {
			name := "counter_phase" + string(rune('1'+z)) + "_mean"
			pts[i].Metrics = append(pts[i].Metrics, aggregate.NewMetric(aggregate.MetricDesc{Name: name, Base: name, Class: -1},
				v*float64(i+1), 0.1, 2))
		}
	}
	files, err := Render(Campaign{Points: pts})
	if err != nil {
		t.Fatal(err)
	}
	figs := 0
	for name, b := range files {
		base, ok := strings.CutSuffix(name, ".svg")
		if !ok {
			continue
		}
		figs++
		if strings.Contains(string(b), "load ρ") {
			t.Errorf("%s: drawn against the load (a trace has none)", name)
		}
		if !strings.Contains(string(b), "<title>serverfilling</title>") {
			t.Errorf("%s: no category axis naming the policies", name)
		}
		if py := string(files[base+".py"]); !strings.Contains(py, `XTICKS = json.loads("[\"fcfs\",\"msf\",\"serverfilling\"]")`) {
			t.Errorf("%s.py does not name the categories", base)
		}
	}
	for _, want := range []string{"msfq_phases.svg", "compare_mean_response.svg", "class_mean_response.svg", "mean_response.svg"} {
		if files[want] == nil {
			t.Errorf("no %s", want)
		}
	}
	idx := string(files["index.html"])
	for _, want := range []string{"<th>policy</th><th>arrival rate λ</th><th>load ρ</th><th>n</th>",
		"<tr><td>fcfs</td><td data-v=\"\">—</td><td data-v=\"\">—</td><td data-v=\"2\">2/2</td>", "<th>series</th><th>E[T] vs fcfs</th>"} {
		if !strings.Contains(idx, want) {
			t.Errorf("index.html lacks %q", want)
		}
	}
	t.Logf("%d figures", figs)
	checkGolden(t, "trace.golden", reportDigest(files))
}

// TestSweptServersGolden: a swept servers axis. The section heading read
// "halfin-whitt (k = 32)" for a campaign whose k is 32 and 128 (the first
// point's); it names k only when every point has the same. Every swept
// axis is a column of the summary table: servers beside the load when the
// servers split the figures into facets (the heading names the facet's
// value too, and so do its figures' captions), and the load beside
// servers on the x axis.
func TestSweptServersGolden(t *testing.T) {
	all := loadSummary(t, "servers_summary.json")
	var half []aggregate.Point
	for _, p := range all {
		if v, _ := aggregate.Number(p.Axes["load"]); v == 0.5 {
			half = append(half, p)
		}
	}
	for _, c := range []struct {
		name     string
		pts      []aggregate.Point
		headings []string
		head     string
	}{
		{"servers on x", half, []string{"<h2>halfin-whitt</h2>"}, "<th>policy</th><th>servers k</th><th>load ρ</th><th>n</th>"},
		{"servers facets", all, []string{"<h2>halfin-whitt, servers = 32</h2>", "<h2>halfin-whitt, servers = 128</h2>"},
			"<th>policy</th><th>load ρ</th><th>servers k</th><th>n</th>"},
	} {
		files, err := Render(Campaign{Points: c.pts})
		if err != nil {
			t.Fatal(err)
		}
		idx := string(files["index.html"])
		if strings.Contains(idx, "k = 32") {
			t.Errorf("%s: a heading names k = 32 while k is swept", c.name)
		}
		if c.name == "servers facets" {
			c.headings = append(c.headings, `<figcaption>mean response time E[T] (servers = 128) — `)
		}
		for _, want := range append(c.headings, c.head) {
			if !strings.Contains(idx, want) {
				t.Errorf("%s: index.html lacks %q", c.name, want)
			}
		}
		checkGolden(t, "servers_"+strings.ReplaceAll(c.name, " ", "_")+".golden", reportDigest(files))
	}
}
