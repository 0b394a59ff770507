package report

import (
	"bytes"
	"encoding/csv"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/msjfarm/msjfarm/plugins/killsmart"
	"github.com/msjfarm/msjfarm/results/aggregate"
	"github.com/msjfarm/msjfarm/results/metric"
	"github.com/msjfarm/msjfarm/sim"
)

// TestClassCounters: the report groups the counters aggregate marked per
// class (Metric.ClassCounter; which ones is TestMarkClassCounters), by
// their base column, a column per class, in the order of names; an
// unmarked counter that ends like a class is not grouped.
func TestClassCounters(t *testing.T) {
	mk := func(name, base string, class int) aggregate.Metric {
		return aggregate.NewMetric(aggregate.MetricDesc{Name: name, Base: base, Class: -1, ClassCounter: base != name, CounterClass: class}, 0, 0, 0)
	}
	f := &facet{pts: []*aggregate.Point{{Classes: []aggregate.Class{{Name: "1"}, {Name: "cores-1"}, {Name: "cores-2"}},
		Metrics: []aggregate.Metric{mk("counter_x", "counter_x", 0), mk("counter_x_cores_1", "counter_x", 1),
			mk("counter_x_cores_2", "counter_x", 2), mk("counter_solo_1", "counter_solo", 0), mk("counter_z_cores_2", "counter_z_cores_2", 0)}}}}
	names := []string{"mean_response", "counter_x", "counter_solo_1", "counter_x_cores_1", "counter_x_cores_2", "counter_z_cores_2"}
	groups, by := f.classCounters(names)
	if len(groups) != 2 || groups[0].base != "counter_solo" || groups[1].base != "counter_x" ||
		!mapsEqual(groups[0].columns, map[int]string{0: "counter_solo_1"}) ||
		!mapsEqual(groups[1].columns, map[int]string{1: "counter_x_cores_1", 2: "counter_x_cores_2"}) {
		t.Fatalf("groups %v", groups)
	}
	for _, g := range groups {
		for _, m := range g.columns {
			if by[m] != g {
				t.Errorf("column %s not mapped to its group", m)
			}
		}
	}
	if by["counter_x"] != nil || by["counter_z_cores_2"] != nil {
		t.Errorf("an unmarked counter grouped: %v", by)
	}
	if n := (&classCounter{base: "counter_x"}).name([]string{"counter_x", "counter_x_cores_1"}); n != "counter_x_by_class" {
		t.Errorf("name beside an aggregate counter: %s", n)
	}
	if n := (&classCounter{base: "counter_x"}).name([]string{"counter_x_cores_1"}); n != "counter_x" {
		t.Errorf("name of a per-class counter alone: %s", n)
	}
}

func mapsEqual(a, b map[int]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// TestClassCounterFigure: Kill-Smart's preempted_fraction/<class> is one
// figure set, counter_preempted_fraction_by_class (preempted_fraction, the
// aggregate, keeps its own name), with a panel per class whose counter is
// drawn, the classes' own figures gone, and the index listing it once.
// Kill-Smart multi-class (K = 2, ν = 2) on powers-of-two (needs 1, 2, 4,
// 8 on k = 8; the needs 1 and 2 get preempted, so two panels) at λ = 1, 2,
// 2 replications of 3000 arrivals.
//
// Complexity 25: a sequence of flat checks (each an if/t.Fatalf) on one scenario's
// outputs; split into helpers, the sequence a reader follows would scatter.
func TestClassCounterFigure(t *testing.T) {
	spec := killsmart.Policies[1]
	run := policyRun{name: spec.Name, params: map[string]any{"K": 2, "nu": 2}, new: func() sim.Policy { return spec.New() }}
	c := simulateCampaign(t, "powers-of-two", []policyRun{run}, []float64{1, 2}, 2, 3000)
	pts, dir := describedReport(t, c, spec.New())
	// The classes whose counter is non-zero somewhere: each is a panel.
	var want []string
	for _, cl := range pts[0].Classes {
		for _, p := range pts {
			if m, ok := p.Metric(metric.CounterColumn("preempted_fraction/" + cl.Name)); ok && m.Mean != 0 {
				want = append(want, cl.Name)
				break
			}
		}
	}
	t.Logf("classes %v, drawn %v", pts[0].Classes, want)
	if len(want) == 0 {
		t.Fatalf("no class has a non-zero preempted fraction: nothing to test (classes %v)", pts[0].Classes)
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	for _, ext := range []string{".svg", ".png", ".pdf", ".csv", ".py"} {
		if !slices.Contains(names, "counter_preempted_fraction_by_class"+ext) {
			t.Errorf("no counter_preempted_fraction_by_class%s among %v", ext, names)
		}
		if !slices.Contains(names, "counter_preempted_fraction"+ext) {
			t.Errorf("the aggregate counter_preempted_fraction%s is gone", ext)
		}
	}
	for _, n := range names {
		if rest, ok := strings.CutPrefix(n, "counter_preempted_fraction_"); ok && !strings.HasPrefix(rest, "by_class") && !strings.HasPrefix(rest, "page") {
			t.Errorf("a per-class file %s is still written", n)
		}
	}
	// One panel per drawn class, titled by the class, in class order.
	fh, err := os.Open(filepath.Join(dir, "counter_preempted_fraction_by_class.csv"))
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	rows, err := csv.NewReader(fh).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	var panels []string
	for _, r := range rows[1:] {
		if !slices.Contains(panels, r[0]) {
			panels = append(panels, r[0])
		}
	}
	t.Logf("panels %q", panels)
	if len(panels) != len(want) {
		t.Fatalf("panels %q, want one for each of %v", panels, want)
	}
	for i, p := range panels {
		if !strings.Contains(p, ": "+want[i]+" (need ") {
			t.Errorf("panel %d is %q, want class %s", i, p, want[i])
		}
	}
	idx := readFile(t, filepath.Join(dir, "index.html"))
	if n := strings.Count(idx, `id="fig-counter_preempted_fraction_by_class"`); n != 1 {
		t.Errorf("index.html lists the per-class figure %d times", n)
	}
	if !strings.Contains(idx, "policy counter per class: jobs preempted. preemptions over departures") {
		t.Errorf("index.html: no caption for the per-class figure")
	}
	if py := readFile(t, filepath.Join(dir, "counter_preempted_fraction_by_class.py")); !strings.Contains(py, `"jobs preempted"`) {
		t.Errorf("the script's y axis is not the counter's label without the class")
	}
}

// TestClassCounterOneClass: a per-class counter with one class left to
// draw (the other is zero everywhere, as Kill-Smart's large class in
// k-fig4) is a figure of its own at column width (3.3 in = 237.6 pt) with
// the class in its axis label, not a one-panel grid whose legend takes
// half the width.
func TestClassCounterOneClass(t *testing.T) {
	var pts []aggregate.Point
	for _, pol := range []string{"a", "b"} {
		for _, lam := range []float64{1, 2, 3} {
			m := func(name string, class int, v float64) aggregate.Metric {
				return aggregate.NewMetric(aggregate.MetricDesc{Name: name, Base: "counter_k", Class: -1, ClassCounter: true, CounterClass: class}, v, 0.01, 3)
			}
			pts = append(pts, aggregate.Point{Point: pol + fmt.Sprint(lam), Workload: "w", Servers: 4, Policy: pol, Params: map[string]any{},
				Classes: []aggregate.Class{{Name: "small", Need: 1}, {Name: "large", Need: 4}},
				Axes:    map[string]any{"arrival_rate": lam}, ArrivalRate: lam, Load: lam / 4, Replications: 3, N: 3, Verdict: "stable",
				Metrics: []aggregate.Metric{aggregate.NewMetric(aggregate.MetricDesc{Name: "mean_response", Base: "mean_response", Class: -1}, lam, 0.1, 3),
					m("counter_k_small", 0, lam/10), m("counter_k_large", 1, 0)}})
		}
	}
	files, err := Render(Campaign{Points: pts})
	if err != nil {
		t.Fatal(err)
	}
	svg := string(files["counter_k.svg"])
	if !strings.Contains(svg, `<svg width="237.6pt"`) {
		t.Fatalf("counter_k.svg is not a column-width figure of its own")
	}
	if files["counter_k_page.pdf"] == nil {
		t.Errorf("no page-width PDF")
	}
	rows, err := csv.NewReader(bytes.NewReader(files["counter_k.csv"])).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rows[1:] {
		if r[0] != "" {
			t.Fatalf("counter_k.csv has a panel %q", r[0])
		}
	}
	if !regexp.MustCompile(`YLABEL = ".*small"`).Match(files["counter_k.py"]) {
		t.Errorf("the axis label does not name the class")
	}
}
