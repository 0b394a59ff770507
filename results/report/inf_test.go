package report

import (
	"math"
	"strings"
	"testing"

	"github.com/msjfarm/msjfarm/results/aggregate"
)

// TestInfinityForms: an infinity is written one way per kind of output
// (aggregate.FormatInf, FormatFloat): "∞" and "-∞" in what is read
// (index.html; was "-Inf" for −∞), "inf" in every CSV file (a heat map's
// CSV wrote one replication's half-width "+Inf"), float("inf") and
// float("-inf") in a script (Go's "-Inf" is no Python).
func TestInfinityForms(t *testing.T) {
	if got := fmtNum(math.Inf(1)) + " " + fmtNum(math.Inf(-1)); got != "∞ -∞" {
		t.Errorf("fmtNum(±Inf) = %q, want \"∞ -∞\"", got)
	}
	if got := pyFloat(math.Inf(-1)); got != `float("-inf")` {
		t.Errorf("pyFloat(-Inf) = %s", got)
	}
	// A heat map (41 series) of points of one replication each.
	var pts []aggregate.Point
	for _, lam := range []float64{1, 2} {
		for th := 0; th < 41; th++ {
			pts = append(pts, aggregate.Point{Workload: "one-or-all", Servers: 32, Policy: "msfq",
				Params: map[string]any{"threshold": float64(th)}, Axes: map[string]any{"arrival_rate": lam},
				ArrivalRate: lam, Load: lam / 7.8, Replications: 1, N: 1, Verdict: "stable",
				Metrics: []aggregate.Metric{aggregate.NewMetric(aggregate.MetricDesc{Name: "mean_response", Base: "mean_response", Class: -1}, lam+float64(th), math.Inf(1), 1)}})
		}
	}
	files, err := Render(Campaign{Points: pts})
	if err != nil {
		t.Fatal(err)
	}
	heat := string(files["heat_mean_response.csv"])
	if heat == "" {
		t.Fatal("no heat_mean_response.csv")
	}
	if !strings.Contains(heat, ",inf,estimate\n") || strings.Contains(heat, "Inf") {
		t.Errorf("heat map CSV's half-widths are not inf:\n%.300s", heat)
	}
}
