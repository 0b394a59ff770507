package sweep_test

import (
	"testing"

	"github.com/msjfarm/msjfarm/results/aggregate"
	"github.com/msjfarm/msjfarm/sim"
	"github.com/msjfarm/msjfarm/sweep"
)

// TestPrecisionMetricsMatchAggregate: the metric names sweep accepts are
// those aggregate produces (sweep cannot import aggregate).
func TestPrecisionMetricsMatchAggregate(t *testing.T) {
	if len(sweep.PrecisionBaseMetrics) != len(aggregate.BaseMetrics) {
		t.Fatalf("%d vs %d base metrics", len(sweep.PrecisionBaseMetrics), len(aggregate.BaseMetrics))
	}
	for i, m := range aggregate.BaseMetrics {
		if sweep.PrecisionBaseMetrics[i] != m.Name {
			t.Fatalf("base metric %d: %q vs %q", i, sweep.PrecisionBaseMetrics[i], m.Name)
		}
	}
	// Class stems: a one-or-all sweep names its classes as aggregate does.
	f, err := sweep.Parse([]byte("name: p\nworkload: one-or-all\naxes: {load: [0.5]}\npolicies: [fcfs]\nreplications: 2\nrun: {arrivals: 10}\n"), "yaml")
	if err != nil {
		t.Fatal(err)
	}
	c, err := sweep.Expand(f, testCat{})
	if err != nil {
		t.Fatal(err)
	}
	for ci, cl := range c.Tasks[0].Workload.Classes {
		name := cl.Name
		if name == "" {
			name = "class" + string(rune('0'+ci))
		}
		for _, m := range aggregate.ClassMetrics {
			g := *f
			g.Precision = &sweep.Precision{Metric: aggregate.ClassPrefix(ci, name) + m.Name, RelHalfWidth: 0.1, MaxReplications: 2}
			if _, err := sweep.Expand(&g, testCat{}); err != nil {
				t.Errorf("class metric: %v", err)
			}
		}
	}
}

type testCat struct{}

func (testCat) Schema(string) ([]sim.Param, error) { return nil, nil }
