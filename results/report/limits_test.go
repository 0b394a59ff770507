package report

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/msjfarm/msjfarm/results/aggregate"
	"github.com/msjfarm/msjfarm/sim"
)

// limitPoints is a small hand-made campaign on one-or-all (k = 32,
// p₁ = 0.9, unit means): load ρ = λ (0.9/32 + 0.1), so λ* = 7.8049. FCFS
// diverges from λ = 5 (verdict unstable); MSF is stable but its λ = 7.5
// point was truncated (a lower bound); its λ = 7 point is not converged
// (three of four replications), its lower rates are, and FCFS's points
// carry no converged verdict.
func limitPoints() []aggregate.Point {
	per := 0.9/32 + 0.1
	var pts []aggregate.Point
	for _, pol := range []string{"fcfs", "msf"} {
		for _, lam := range []float64{3, 5, 7, 7.5} {
			p := aggregate.Point{Point: pol + "-" + fmtNum(lam), Scenario: fmtNum(lam), Workload: "one-or-all",
				Servers: 32, Policy: pol, Axes: map[string]any{"arrival_rate": lam}, ArrivalRate: lam,
				Load: lam * per, Replications: 4, N: 4, Verdict: "stable"}
			mean := 1 / (1 - lam*per)
			switch {
			case pol == "fcfs" && lam >= 5:
				p.Verdict, p.NUnstable, mean = "unstable", 4, 1e4*lam
			case pol == "msf" && lam == 7.5:
				p.Verdict, p.NTruncated, p.LowerBound, mean = "truncated", 3, true, 28.6
			case pol == "msf" && lam == 7:
				p.Convergence = &sim.ConvergenceVerdict{N: 4, Unconverged: 3, MSERLate: 3, MinCycles: -1}
			case pol == "msf":
				p.Convergence = &sim.ConvergenceVerdict{N: 4, Converged: true, MinCycles: -1}
			}
			p.Metrics = []aggregate.Metric{aggregate.NewMetric(aggregate.MetricDesc{Name: "mean_response", Base: "mean_response", Class: -1}, mean, 0.05*mean, 4)}
			pts = append(pts, p)
		}
	}
	return pts
}

// Complexity 21: a sequence of flat checks (each an if/t.Fatalf) on one scenario's
// outputs; split into helpers, the sequence a reader follows would scatter.
func TestLimitLines(t *testing.T) {
	pts := limitPoints()
	x, others := xAxis(pts)
	if x != "arrival_rate" {
		t.Fatalf("x axis %q, want arrival_rate", x)
	}
	fs := facets(pts, nil, x, others)
	if len(fs) != 1 {
		t.Fatalf("%d facets, want 1", len(fs))
	}
	f := fs[0]
	want := 1 / (0.9/32 + 0.1)
	ls := f.limitLines(x, map[string]map[string]float64{"": {"fcfs": 3.03}})
	if len(ls) != 2 {
		t.Fatalf("lines %+v, want the load-1 bound and fcfs's λmax", ls)
	}
	if math.Abs(ls[0].x-want) > 1e-12*want || ls[0].style >= 0 {
		t.Errorf("bound line %+v, want grey at %.6g", ls[0], want)
	}
	if math.Abs(want-7.8049) > 5e-5 {
		t.Errorf("λ* = %.6g, want 7.8049", want)
	}
	if ls[1].x != 3.03 || ls[1].style != f.series[0].style(f, 0) || !strings.Contains(ls[1].label, "fcfs") {
		t.Errorf("measured line %+v, want fcfs's colour at 3.03", ls[1])
	}
	// Without measured limits only the bound; on a load axis ρ = 1.
	if ls := f.limitLines(x, nil); len(ls) != 1 || math.Abs(ls[0].x-want) > 1e-12*want {
		t.Errorf("no limits: %+v", ls)
	}
	if ls := f.limitLines("load", nil); len(ls) != 1 || ls[0].x != 1 {
		t.Errorf("load axis: %+v, want one line at 1", ls)
	}
	if ls := f.limitLines("servers", nil); len(ls) != 0 {
		t.Errorf("servers axis: %+v, want none", ls)
	}

	// The plot's x range is stretched to show λ* just past the last rate
	// (7.5), and not for a limit far beyond.
	cs, _ := curvesFor(f, x, "mean_response")
	p := newPlot("t", "λ", "E[T]", cs, true, ls...)
	if p.X.Max < want || p.X.Max > want+0.2 {
		t.Errorf("x range [%g, %g], want it to end just past λ* = %g", p.X.Min, p.X.Max, want)
	}
	far := newPlot("t", "λ", "E[T]", cs, true, vline{x: 20, label: "far", style: -1})
	if far.X.Max > 8 {
		t.Errorf("a limit at 20 stretched the axis to %g", far.X.Max)
	}
	if got := visibleLines([]vline{{x: 2.4}, {x: 2.2}, {x: 7.9}, {x: 8.3}, {x: math.NaN()}}, 3, 7.5); len(got) != 2 ||
		got[0].x != 2.4 || got[1].x != 7.9 {
		t.Errorf("visibleLines: %+v, want 2.4 and 7.9 (within 15%% of the span 4.5)", got)
	}
}

func TestRenderLimitsAndBounds(t *testing.T) {
	files, err := Render(Campaign{Points: limitPoints(), Limits: map[string]float64{"fcfs": 3.03}})
	if err != nil {
		t.Fatal(err)
	}
	svg := string(files["mean_response.svg"])
	for _, s := range []string{"load 1 (λ = 7.805)", "fcfs λmax = 3.03"} {
		if !strings.Contains(svg, s) {
			t.Errorf("mean_response.svg lacks the legend entry %q", s)
		}
	}
	html := string(files["index.html"])
	for _, s := range []string{"<th>truncated</th><th>verdict</th>", "<td>truncated</td>", "<td>unstable</td>",
		`<td data-v="28.6">≥ 28.6</td>`, `<td data-v="50000">≥ 5e&#43;04</td>`, "4 unstable",
		"<th>verdict</th><th>converged</th>", "<td>stable</td><td>NO (3 of 4)</td>", "<td>stable</td><td>yes</td>",
		"<td>unstable</td><td>—</td>", "1 not converged"} {
		if !strings.Contains(html, s) {
			t.Errorf("index.html lacks %q", s)
		}
	}
	// A stable point keeps its interval, the mean to its decimals.
	if !strings.Contains(html, "1.62437 ± 0.08122") {
		t.Errorf("index.html lacks the stable estimate 1.62437 ± 0.08122")
	}
}

// TestLimitLinesByLabel: a limit keyed by a series label (a policy
// variant, as a limit search names it) is drawn for that series only, in
// its colour; one keyed by the policy name for the policy's first series.
func TestLimitLinesByLabel(t *testing.T) {
	var pts []aggregate.Point
	for _, th := range []int{1, 31} {
		for _, lam := range []float64{3, 6} {
			pts = append(pts, aggregate.Point{Point: fmt.Sprintf("q%d-%v", th, lam), Scenario: fmtNum(lam), Workload: "one-or-all",
				Servers: 32, Policy: "msfq", Params: map[string]any{"threshold": th}, Axes: map[string]any{"arrival_rate": lam},
				ArrivalRate: lam, Load: lam * (0.9/32 + 0.1), Replications: 2, N: 2, Verdict: "stable",
				Metrics: []aggregate.Metric{aggregate.NewMetric(aggregate.MetricDesc{Name: "mean_response", Base: "mean_response", Class: -1}, lam, 0.1, 2)}})
		}
	}
	x, others := xAxis(pts)
	f := facets(pts, nil, x, others)[0]
	if len(f.series) != 2 {
		t.Fatalf("%d series", len(f.series))
	}
	ls := f.limitLines(x, map[string]map[string]float64{"": {"msfq threshold=31": 7.8}})
	if len(ls) != 2 || ls[1].x != 7.8 || ls[1].label != "msfq threshold=31 λmax = 7.8" {
		t.Fatalf("lines %+v, want the bound and threshold=31's λmax", ls)
	}
	var want int
	for i, s := range f.series {
		if s.label == "msfq threshold=31" {
			want = s.style(f, i)
		}
	}
	if ls[1].style != want {
		t.Errorf("line style %d, want the threshold=31 series' %d", ls[1].style, want)
	}
	if ls := f.limitLines(x, map[string]map[string]float64{"": {"msfq": 7}}); len(ls) != 2 || ls[1].label != "msfq λmax = 7" {
		t.Errorf("by policy name: %+v", ls)
	}
}
