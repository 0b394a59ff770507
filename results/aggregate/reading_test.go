package aggregate

import (
	"testing"

	"github.com/msjfarm/msjfarm/sim"
)

// At an unstable point the quantities an overload drives up are lower
// bounds; the others are not bounds of anything and stay estimates.
// Before, every metric of the point was "≥ x": a saturation throughput
// of 3.0 drawn off scale, Jain's index "≥ 1". At a stable point every
// measured metric is an estimate; an unmeasured one is absent either way.
func TestReadingPerMetric(t *testing.T) {
	m := func(name, base string, class int, counter bool) Metric {
		return NewMetric(MetricDesc{Name: name, Base: base, Class: class, ClassCounter: counter}, 1, 0.1, 3)
	}
	unstable := &Point{Verdict: string(sim.VerdictUnstable)}
	stable := &Point{Verdict: string(sim.VerdictStable)}
	for _, c := range []struct {
		m    Metric
		want string // at the unstable point
	}{
		{m("mean_response", "mean_response", -1, false), ReadLowerBound},
		{m("weighted_mean_response", "weighted_mean_response", -1, false), ReadLowerBound},
		{m("mean_wait", "mean_wait", -1, false), ReadLowerBound},
		{m("p_wait", "p_wait", -1, false), ReadLowerBound},
		{m("mean_in_system", "mean_in_system", -1, false), ReadLowerBound},
		{m("mean_in_queue", "mean_in_queue", -1, false), ReadLowerBound},
		{m("class1_big_mean_response", "mean_response", 1, false), ReadLowerBound},
		{m("utilization", "utilization", -1, false), ReadEstimate},
		{m("throughput", "throughput", -1, false), ReadEstimate},
		{m("jain", "jain", -1, false), ReadEstimate},
		{m("preemptions", "preemptions", -1, false), ReadEstimate},
		{m("counter_kills", "counter_kills", -1, false), ReadEstimate},
		{m("class1_big_counter_x", "counter_x", 1, true), ReadEstimate},
	} {
		if got := unstable.Reading(c.m); got != c.want {
			t.Errorf("%s at an unstable point: %s, want %s", c.m.Name, got, c.want)
		}
		if got := stable.Reading(c.m); got != ReadEstimate {
			t.Errorf("%s at a stable point: %s", c.m.Name, got)
		}
		absent := c.m
		absent.N = 0
		if got := unstable.Reading(absent); got != ReadAbsent {
			t.Errorf("%s unmeasured: %s", c.m.Name, got)
		}
	}
	// lower_bound alone (a replication ended with measured jobs inside)
	// makes the same bounds.
	lb := &Point{Verdict: string(sim.VerdictStable), LowerBound: true}
	if lb.Reading(m("mean_response", "mean_response", -1, false)) != ReadLowerBound || lb.Reading(m("throughput", "throughput", -1, false)) != ReadEstimate {
		t.Error("lower_bound: want E[T] a bound and throughput an estimate")
	}
}
