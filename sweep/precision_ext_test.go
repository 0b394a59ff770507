package sweep_test

import (
	"testing"

	"github.com/msjfarm/msjfarm/results/metric"
	"github.com/msjfarm/msjfarm/sim"
	"github.com/msjfarm/msjfarm/sweep"
)

// TestPrecisionAcceptsSummaryMetrics: every base and per-class metric stem
// the summary produces (results/metric) is a valid precision metric, and a
// class stem is built from the expanded workload's class names the way the
// summary builds it.
func TestPrecisionAcceptsSummaryMetrics(t *testing.T) {
	f, err := sweep.Parse([]byte("name: p\nworkload: one-or-all\naxes: {load: [0.5]}\npolicies: [fcfs]\nreplications: 2\nrun: {arrivals: 10}\n"), "yaml")
	if err != nil {
		t.Fatal(err)
	}
	c, err := sweep.Expand(f, testCat{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, m := range metric.Base {
		names = append(names, m.Name)
	}
	classes := c.Tasks[0].Workload.Classes
	if len(classes) == 0 {
		t.Fatal("one-or-all expanded without classes")
	}
	for ci, cl := range classes {
		for _, m := range metric.Class {
			names = append(names, metric.ClassPrefix(ci, metric.ClassName(ci, cl.Name))+m.Name)
		}
	}
	for _, n := range append(names, metric.CounterColumn("Phase 1 time")) {
		g := *f
		g.Precision = &sweep.Precision{Metric: n, RelHalfWidth: 0.1, MaxReplications: 2}
		if _, err := sweep.Expand(&g, testCat{}); err != nil {
			t.Errorf("metric %s: %v", n, err)
		}
	}
	g := *f
	g.Precision = &sweep.Precision{Metric: "class9_nosuch_mean_response", RelHalfWidth: 0.1, MaxReplications: 2}
	if _, err := sweep.Expand(&g, testCat{}); err == nil {
		t.Error("a class metric of a class the workload lacks was accepted")
	}
}

type testCat struct{}

func (testCat) Schema(string) ([]sim.Param, error) { return nil, nil }
