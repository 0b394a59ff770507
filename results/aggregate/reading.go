package aggregate

import (
	"github.com/msjfarm/msjfarm/results/metric"
	"github.com/msjfarm/msjfarm/sim"
)

// How a mean is read, decided by one rule for every output (terminal
// table, report, summary tables, live page):
//
//   - absent: no replication measured it (n = 0);
//   - lower bound: the point's pooled verdict is not stable (unstable or
//     truncated) or some replication stopped with measured jobs still in
//     the system (lower_bound), and the metric is one such a run drives up
//     (Point.Bound): the mean is printed "≥ x", without a confidence
//     interval (the replications' spread says nothing about a quantity
//     that diverges), and drawn off the curve;
//   - estimate: otherwise, printed "x ± hw".
//
// A paired comparison involving a bound is undefined (Compare).
const (
	ReadAbsent     = "absent"
	ReadLowerBound = "lower bound"
	ReadEstimate   = "estimate"
)

// IsBound is the rule: a point's means are lower bounds when its pooled
// verdict is known and not stable, or lowerBound is set. (A summary
// without verdicts, written before they existed, passes "" and its
// n_unstable > 0 as lowerBound.)
func IsBound(verdict string, lowerBound bool) bool {
	return (verdict != "" && verdict != string(sim.VerdictStable)) || lowerBound
}

// Reading is how the point's value of m is to be read: ReadAbsent,
// ReadLowerBound or ReadEstimate.
func (p *Point) Reading(m Metric) string {
	switch {
	case m.N == 0:
		return ReadAbsent
	case p.Bound(m):
		return ReadLowerBound
	}
	return ReadEstimate
}

// Bound reports whether the point's mean of m is a lower bound: the point
// is unstable or truncated (Unstable) and m is a quantity such a run
// drives up (metric.BoundWhenUnstable: response and waiting times,
// numbers in system and queue, P(wait)). Throughput, utilisation, Jain's
// index and the counts were read "≥ x" too, and drawn off scale, though
// they are not bounds: an overloaded system's throughput is its
// saturation throughput, which a figure of it is drawn to show.
func (p *Point) Bound(m Metric) bool {
	return p.Unstable() && m.MetricDesc != nil && !m.ClassCounter && metric.BoundWhenUnstable(m.Base)
}
