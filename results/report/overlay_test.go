package report

import (
	"testing"

	"github.com/msjfarm/msjfarm/plugins/quickswap/approx"
	"github.com/msjfarm/msjfarm/results/aggregate"
)

func oneOrAllPoint(rate float64, service string, threshold any) *aggregate.Point {
	return &aggregate.Point{Policy: "msfq", Servers: 32, ArrivalRate: rate,
		Params: map[string]any{"threshold": threshold},
		Classes: []aggregate.Class{
			{Name: "light", Need: 1, Share: 0.9, Service: service, ServiceMean: 1},
			{Name: "heavy", Need: 32, Share: 0.1, Service: service, ServiceMean: 1},
		}}
}

// TestMSFQOverlay: the overlay is exactly approx.MSFQ for the point's
// parameters (threshold −1 meaning k−1, as the policy reads it), and is
// absent where the approximation does not apply: light load (its §5.2
// premise fails, Consistent false at λ = 2), non-exponential sizes, or a
// workload that is not one-or-all.
func TestMSFQOverlay(t *testing.T) {
	want, err := approx.MSFQ(32, 31, 7, 0.9, 1, 1)
	if err != nil {
		t.Fatal(err)
	}
	for _, th := range []any{31.0, -1.0} {
		got, ok := msfqApprox(oneOrAllPoint(7, "exp", th), "mean_response")
		if !ok || got != want.Overall {
			t.Fatalf("threshold %v: %v, %v; want %v", th, got, ok, want.Overall)
		}
	}
	if got, ok := msfqApprox(oneOrAllPoint(7, "exp", 31.0), "weighted_mean_response"); !ok || got != want.Weighted {
		t.Fatalf("weighted: %v, %v; want %v", got, ok, want.Weighted)
	}
	l16, _ := approx.MSFQ(32, 16, 7, 0.9, 1, 1)
	if got, _ := msfqApprox(oneOrAllPoint(7, "exp", 16.0), "mean_response"); got != l16.Overall {
		t.Fatalf("threshold 16: %v, want %v", got, l16.Overall)
	}
	if _, ok := msfqApprox(oneOrAllPoint(2, "exp", 31.0), "mean_response"); ok {
		t.Fatal("overlay drawn at λ = 2, where the approximation is inconsistent")
	}
	if _, ok := msfqApprox(oneOrAllPoint(7, "hyperexp", 31.0), "mean_response"); ok {
		t.Fatal("overlay drawn for non-exponential sizes")
	}
	p := oneOrAllPoint(7, "exp", 31.0)
	p.Classes[1].Need = 16
	if _, ok := msfqApprox(p, "mean_response"); ok {
		t.Fatal("overlay drawn for a workload that is not one-or-all")
	}
}
