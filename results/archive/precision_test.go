package archive

import (
	"math"
	"testing"

	"github.com/msjfarm/msjfarm/results/aggregate"
	"github.com/msjfarm/msjfarm/sweep"
)

// TestPrecisionFromRecords: the precision outcome a reader shows is
// decided from the records' summary, not taken from the manifest, which
// no checksum covers. An archive whose manifest said point a's mean was
// 0.1357 with a half-width of 1e-05 (its records: 1.3577 ± 0.05) had
// those numbers in precision.csv and the report, after verify and import
// said OK.
//
// Rule: rel_half_width 0.05, max_replications 8. Point a: 4 replications,
// mean 1.3577 ± 0.05, rel = 0.05/1.3577 = 0.0368 <= 0.05: met. Point b:
// 8 replications, ± 0.2 on 1.0: 0.2 > 0.05 at the cap: max_replications.
// Point c: one replication flagged unstable: unstable. Point d: no
// records: pending. Point e: 5 records, 4 initial and one of a batch of
// 2 under way (decisions at 4, 6 and 8): pending, though its interval is
// narrow (a running campaign's report said "met" at 9 of a batch of 12,
// a decision no coordinator made).
func TestPrecisionFromRecords(t *testing.T) {
	rule := sweep.Precision{Metric: "mean_response", RelHalfWidth: 0.05, MaxReplications: 8, Batch: 2}
	metric := func(mean, hw float64, n int) []aggregate.Metric {
		return []aggregate.Metric{{MetricDesc: &aggregate.MetricDesc{Name: "mean_response"}, Mean: mean, HalfWidth: hw, N: n}}
	}
	pts := []aggregate.Point{
		{Point: "a", Replications: 4, N: 4, Metrics: metric(1.3577, 0.05, 4)},
		{Point: "b", Replications: 8, N: 8, Metrics: metric(1.0, 0.2, 8)},
		{Point: "c", Replications: 4, N: 4, NUnstable: 1, Metrics: metric(9, 1, 4)},
		{Point: "e", Replications: 5, N: 5, Metrics: metric(2, 0.01, 5)},
	}
	forged := func(x float64) *float64 { return &x }
	man := &PrecisionSummary{Precision: rule, Initial: 4, Met: 4, Points: []PointPrecision{
		{Point: "a", Replications: 4, N: 4, Mean: forged(0.1357), HalfWidth: forged(1e-5), Status: PrecisionMet},
		{Point: "b", Replications: 8, N: 8, Mean: forged(1), HalfWidth: forged(1e-5), Status: PrecisionMet},
		{Point: "c", Replications: 4, N: 4, Status: PrecisionMet},
		{Point: "d", Replications: 4, N: 4, Status: PrecisionMet},
		{Point: "e", Replications: 6, N: 5, Status: PrecisionPending},
	}}
	got := man.FromRecords(pts)
	want := []struct {
		status   string
		mean, hw float64
	}{{PrecisionMet, 1.3577, 0.05}, {PrecisionCapped, 1.0, 0.2}, {PrecisionUnstable, 9, 1}, {PrecisionPending, math.NaN(), math.NaN()},
		{PrecisionPending, math.NaN(), math.NaN()}}
	for i, w := range want {
		p := got.Points[i]
		if p.Status != w.status {
			t.Errorf("point %s: status %s, want %s", p.Point, p.Status, w.status)
		}
		if math.IsNaN(w.mean) {
			if p.Mean != nil {
				t.Errorf("point %s: mean %v without records", p.Point, *p.Mean)
			}
			continue
		}
		if p.Mean == nil || *p.Mean != w.mean || p.HalfWidth == nil || *p.HalfWidth != w.hw {
			t.Errorf("point %s: mean %v ± %v, want the records' %v ± %v", p.Point, p.Mean, p.HalfWidth, w.mean, w.hw)
		}
	}
	if got.Met != 1 || got.Capped != 1 || got.Unstable != 1 || got.Pending != 2 || got.Undefined != 0 {
		t.Errorf("counts met %d capped %d unstable %d pending %d undefined %d, want 1 1 1 2 0", got.Met, got.Capped, got.Unstable, got.Pending, got.Undefined)
	}
	if (*PrecisionSummary)(nil).FromRecords(pts) != nil {
		t.Error("no precision rule: want nil")
	}
}
