package archive

import (
	"math"

	"github.com/msjfarm/msjfarm/results/aggregate"
	"github.com/msjfarm/msjfarm/sim/stats"
	"github.com/msjfarm/msjfarm/sweep"
)

// Point statuses of a precision campaign (PointPrecision.Status).
const (
	PrecisionPending   = "pending"          // more replications queued or running
	PrecisionMet       = "met"              // relative half-width <= target
	PrecisionCapped    = "max_replications" // cap reached above the target
	PrecisionUnstable  = "unstable"         // a replication was flagged unstable
	PrecisionUndefined = "undefined"        // no replication measured the metric
)

// Decision is a precision point decided from its replications: its status
// ("" while more replications are due) and the metric over them (NaN
// where undefined).
type Decision struct {
	Status             string
	N                  int
	Mean, HW, Relative float64
}

// Decide decides the point pt (summarised over its reps replications,
// every one with a record) under rule p: the coordinator's rule as it
// grows a campaign, and the readers' as they check its outcome.
func Decide(pt *aggregate.Point, reps int, p *sweep.Precision) Decision {
	d := Decision{Mean: math.NaN(), HW: math.NaN(), Relative: math.NaN()}
	m, ok := pt.Metric(p.Metric)
	if ok {
		d.N, d.Mean, d.HW = m.N, m.Mean, m.HalfWidth
		d.Relative = stats.Summary{N: m.N, Mean: m.Mean, HalfWidth: m.HalfWidth}.RelHalfWidth()
	}
	switch {
	case pt.NUnstable > 0:
		d.Status = PrecisionUnstable
	case !ok || m.N == 0 || math.IsNaN(m.Mean):
		d.Status = PrecisionUndefined
	case d.Relative <= p.RelHalfWidth:
		d.Status = PrecisionMet
	case reps >= p.MaxReplications:
		d.Status = PrecisionCapped
	}
	return d
}

// FromRecords is s (its rule and its points, in order) with each point's
// outcome decided again from pts, the points as the records summarise
// them; nil for a nil s. The manifest's outcome is covered by no
// checksum: an archive whose manifest said a point's mean was a tenth of
// its records' had that number in precision.csv and in the report, after
// verify and import said OK. A point without records, or with records of
// a batch under way, is pending.
func (s *PrecisionSummary) FromRecords(pts []aggregate.Point) *PrecisionSummary {
	if s == nil {
		return nil
	}
	byID := make(map[string]*aggregate.Point, len(pts))
	for i := range pts {
		byID[pts[i].Point] = &pts[i]
	}
	out := &PrecisionSummary{Precision: s.Precision, Initial: s.Initial}
	for _, old := range s.Points {
		pp := PointPrecision{Point: old.Point, Policy: old.Policy, Params: old.Params, Axes: old.Axes, Status: PrecisionPending}
		if pt := byID[old.Point]; pt != nil && pt.N+pt.NFailed == pt.Replications && s.decidedAt(pt.Replications) {
			d := Decide(pt, pt.Replications, &s.Precision)
			pp.Replications, pp.N = pt.Replications, d.N
			pp.Mean, pp.HalfWidth, pp.RelHalfWidth = Finite(d.Mean), Finite(d.HW), Finite(d.Relative)
			if d.Status != "" {
				pp.Status = d.Status
			}
		}
		out.Count(pp.Status)
		out.Points = append(out.Points, pp)
	}
	return out
}

// decidedAt reports whether the coordinator decides a point at reps
// replications: the initial ones, each batch after them, or the cap. A
// running or interrupted campaign's report decided a point at 9 of a
// batch of 12 under way ("met"), a decision no coordinator made.
func (s *PrecisionSummary) decidedAt(reps int) bool {
	added := reps - s.Initial
	return added == 0 || added > 0 && (added%s.BatchSize() == 0 || reps == s.MaxReplications)
}

// Count adds a point of status to the counts.
func (s *PrecisionSummary) Count(status string) {
	switch status {
	case PrecisionPending:
		s.Pending++
	case PrecisionMet:
		s.Met++
	case PrecisionCapped:
		s.Capped++
	case PrecisionUnstable:
		s.Unstable++
	case PrecisionUndefined:
		s.Undefined++
	}
}

// Finite is x, or nil where it is NaN or infinite (JSON has no NaN).
func Finite(x float64) *float64 {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return nil
	}
	return &x
}
