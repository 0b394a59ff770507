package report

import (
	"slices"
	"strings"
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

// approxPoints is an MSFQ series (threshold 31) on one-or-all at λ = 6,
// 7, 7.5, stable, with a mean response time, as a campaign's summary.
func approxPoints(threshold any) []aggregate.Point {
	var pts []aggregate.Point
	for _, lam := range []float64{6, 7, 7.5} {
		p := oneOrAllPoint(lam, "exp", threshold)
		p.Workload, p.Axes, p.N, p.Replications, p.Verdict = "one-or-all", map[string]any{"arrival_rate": lam}, 2, 2, "stable"
		p.Metrics = []aggregate.Metric{aggregate.NewMetric(aggregate.MetricDesc{Name: "mean_response", Base: "mean_response", Class: -1}, 2*lam, 0.1, 2)}
		pts = append(pts, *p)
	}
	return pts
}

// legendEntries are the texts of svg that name an approximation curve.
func approxEntries(svg []byte) []string {
	var out []string
	for _, m := range svgTitle.FindAllStringSubmatch(string(svg), -1) {
		if strings.HasSuffix(m[1], approxSuffix) {
			out = append(out, m[1])
		}
	}
	return out
}

// TestMSFQOverlayOnce: overlaid campaigns of the same workload, rates and
// threshold share the approximation — a function of those, not of a
// campaign. Each campaign drew it, so the figure had the same curve twice
// and its legend two approximation entries for one curve. It is one
// curve now, labelled without a campaign's name; a campaign whose
// approximation differs (another threshold) keeps its own.
func TestMSFQOverlayOnce(t *testing.T) {
	a := Campaign{Points: approxPoints(31.0), Manifest: testManifest("aaaaaaaaaaaaaaaa", "q3a", "")}
	b := Campaign{Points: approxPoints(31.0), Manifest: testManifest("bbbbbbbbbbbbbbbb", "q3b", "")}
	files, err := Render(a, b)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := approxEntries(files["mean_response.svg"]), []string{"msfq" + approxSuffix}; !slices.Equal(got, want) {
		t.Errorf("legend's approximation entries %q, want %q", got, want)
	}
	if n := strings.Count(string(files["mean_response.csv"]), approxSuffix+","); n != 3 {
		t.Errorf("mean_response.csv has %d approximation rows, want 3 (one curve)", n)
	}
	c := Campaign{Points: approxPoints(16.0), Manifest: testManifest("cccccccccccccccc", "q3c", "")}
	files, err = Render(a, b, c)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := approxEntries(files["mean_response.svg"]), []string{"msfq" + approxSuffix, "q3c: msfq" + approxSuffix}; !slices.Equal(got, want) {
		t.Errorf("legend's approximation entries %q, want %q", got, want)
	}
}

// TestSeriesLabelsUnique: two MSFQ series whose thresholds print alike (31
// and "31") were both labelled "msfq threshold=31": two legend entries of
// one name, their approximation curves too, and a single series in the
// figure's CSV and script, which group rows by label.
func TestSeriesLabelsUnique(t *testing.T) {
	pts := append(approxPoints(31.0), approxPoints("31")...)
	files, err := Render(Campaign{Points: pts})
	if err != nil {
		t.Fatal(err)
	}
	got := approxEntries(files["mean_response.svg"])
	if len(got) != 2 || got[0] == got[1] {
		t.Errorf("legend's approximation entries %q, want two different ones", got)
	}
}
