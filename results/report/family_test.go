package report

import (
	"testing"

	"github.com/msjfarm/msjfarm/results/aggregate"
)

// TestFamilyStyles: k-fig4's FCFS and Kill-Smart K ∈ {7, 14} × ν ∈ {1, 5}
// share one set of axes; each K is a colour (FCFS keeps its own) and ν
// the marker and dash within it. Styles by hand (style = colour + 7 ×
// variant): fcfs 0; K=14 ν=1 → 1, K=14 ν=5 → 1+7 = 8; K=7 ν=1 → 2,
// K=7 ν=5 → 9 (series in the points' order).
func TestFamilyStyles(t *testing.T) {
	var pts []aggregate.Point
	add := func(pol string, params map[string]any) {
		pts = append(pts, aggregate.Point{Workload: "killsmart-one-or-all", Servers: 2048, Policy: pol, Params: params,
			Axes: map[string]any{"arrival_rate": 1.0}, ArrivalRate: 1})
	}
	add("fcfs", map[string]any{})
	for _, K := range []float64{14, 7} {
		for _, nu := range []float64{1, 5} {
			add("killsmart", map[string]any{"K": K, "nu": nu})
		}
	}
	x, others := xAxis(pts)
	fs := facets(pts, nil, x, others)
	if len(fs) != 1 || len(fs[0].series) != 5 {
		t.Fatalf("facets %+v: want one facet of 5 series (FCFS with Kill-Smart)", fs)
	}
	want := map[string]int{"fcfs": 0, "killsmart K=14 nu=1": 1, "killsmart K=14 nu=5": 8, "killsmart K=7 nu=1": 2, "killsmart K=7 nu=5": 9}
	for i, s := range fs[0].series {
		if got := s.style(fs[0], i); got != want[s.label] {
			t.Errorf("%s: style %d, want %d", s.label, got, want[s.label])
		}
	}
	// The colours follow K; the markers within a K differ.
	c1, m1, _ := styleOf(1)
	c8, m8, _ := styleOf(8)
	if c1 != c8 || m1 == m8 {
		t.Errorf("K=14's variants: colours %v %v (want equal), markers %T %T (want different)", c1, c8, m1, m8)
	}
}
