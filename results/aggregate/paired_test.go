package aggregate

import (
	"github.com/msjfarm/msjfarm/results/record"
	"math"
	"testing"
)

func nearRel(a, b, tol float64) bool { return math.Abs(a-b) <= tol*math.Max(1, math.Abs(b)) }

// TestPairOf: a = (2, 4, 6) against b = (1, 2, 3).
//
//	differences (1, 2, 3): mean 2, sd 1, hw = t(0.975, 2)·1/√3, where for
//	  df = 2 t(0.975, 2) = 0.95·√(2/(1 − 0.95²)) = 4.302652729749463,
//	  so hw = 4.302652729749463/1.7320508075688772 = 2.4841377117503294;
//	means 4 and 2: relative difference 4/2 − 1 = 1 (+100%); R = 2, and
//	  a − R·b = (0, 0, 0): hw 0;
//	paired t = 2/(1/√3) = 2√3, df 2: p = 1 − t/√(2+t²) = 1 − 2√3/√14
//	  = 0.07417990022744858;
//	unpaired (Welch): s_a = 2, s_b = 1, se² = 4/3 + 1/3 = 5/3,
//	  df = (5/3)²/((16/9 + 1/9)/2) = 50/17 ≈ 2.94 → 2,
//	  hw = 4.302652729749463·√(5/3) = 5.5547007889445146.
func TestPairOf(t *testing.T) {
	c := pairOf("mean_response", "mean_response", []float64{2, 4, 6}, []float64{1, 2, 3})
	for _, f := range []struct {
		name      string
		got, want float64
	}{
		{"diff", c.Diff, 2},
		{"diff_hw", c.DiffHW, 2.4841377117503294},
		{"rel_diff", c.RelDiff, 1},
		{"rel_diff_hw", c.RelDiffHW, 0},
		{"p", c.P, 0.07417990022744858},
		{"unpaired_hw", c.UnpairedHW, 5.5547007889445146},
	} {
		if !nearRel(f.got, f.want, 1e-12) {
			t.Errorf("%s = %.17g, want %.17g", f.name, f.got, f.want)
		}
	}
	if c.N != 3 {
		t.Errorf("n = %d", c.N)
	}
	// One pair: no interval, undefined with the reason.
	one := pairOf("m", "m", []float64{2}, []float64{1})
	if one.Verdict != CmpUndefined || one.Note == "" || one.Diff != 1 || !math.IsNaN(one.DiffHW) {
		t.Errorf("one pair: %+v", one)
	}
	// A baseline whose mean is 0: differences, no ratio.
	z := pairOf("m", "m", []float64{1, 2}, []float64{0, 0})
	if !math.IsNaN(z.RelDiff) || math.IsNaN(z.Diff) || z.Note == "" {
		t.Errorf("zero baseline: %+v", z)
	}
	// A baseline of 0 in one replication only (a policy counter): the
	// means' ratio is defined. a = (1, 2), b = (0, 1): means 1.5 and 0.5,
	// relative difference 2 (+200%).
	if z := pairOf("m", "m", []float64{1, 2}, []float64{0, 1}); z.RelDiff != 2 || z.Note != "" {
		t.Errorf("baseline 0 in one replication: %+v", z)
	}
	// The sign is the means': a = (1, 3), b = (4, 1). The mean of the
	// ratios (0.25 + 3)/2 − 1 = +62.5% said a was higher; the means are 2
	// and 2.5, −20%. R = 0.8, a − R·b = (−2.2, 2.2): sd 2.2·√2, so hw =
	// t(0.975, 1)·2.2·√2/(√2·2.5) = 12.706204736174707·2.2/2.5.
	flip := pairOf("m", "m", []float64{1, 3}, []float64{4, 1})
	if !nearRel(flip.RelDiff, -0.2, 1e-12) || !nearRel(flip.RelDiffHW, 12.706204736174707*2.2/2.5, 1e-9) || flip.Diff >= 0 {
		t.Errorf("sign: rel %.17g ± %.17g (diff %g), want −0.2 ± %.17g", flip.RelDiff, flip.RelDiffHW, flip.Diff, 12.706204736174707*2.2/2.5)
	}
	// Identical in every replication: p = 1, indistinguishable.
	same := pairOf("m", "m", []float64{1, 2}, []float64{1, 2})
	if same.P != 1 {
		t.Errorf("identical: p = %g", same.P)
	}
}

// TestHolm: one family of three p-values (0.01, 0.04, 0.03) of a
// lower-is-better metric, all with negative differences. Sorted 0.01,
// 0.03, 0.04 the adjusted values are 3·0.01 = 0.03, max(0.03, 2·0.03) =
// 0.06, max(0.06, 1·0.04) = 0.06: only the first is below 0.05 (better);
// the others are indistinguishable although 0.03 and 0.04 alone would
// pass. A point of another workload (another figure) is its own family of
// one: 0.04 stays 0.04 and is significant; a positive difference there is
// worse.
func TestHolm(t *testing.T) {
	pt := func(workload string, p, diff float64) Point {
		return Point{Workload: workload, Axes: map[string]any{"arrival_rate": 1.0},
			Metrics: []Metric{NewMetric(MetricDesc{Name: "mean_response", Base: "mean_response", Class: -1}, 0, 0, 0)},
			Compare: &Comparison{Metrics: []Paired{{Name: "mean_response", P: p, Diff: diff}}}}
	}
	pts := []Point{pt("w", 0.01, -1), pt("w", 0.04, -1), pt("w", 0.03, -1), pt("v", 0.04, 1)}
	holm(pts, nil)
	want := []struct {
		adj     float64
		verdict string
	}{{0.03, CmpBetter}, {0.06, CmpIndistinguishable}, {0.06, CmpIndistinguishable}, {0.04, CmpWorse}}
	for i, w := range want {
		m := pts[i].Compare.Metrics[0]
		if !nearRel(m.PHolm, w.adj, 1e-12) || m.Verdict != w.verdict {
			t.Errorf("point %d: p_holm %g %s, want %g %s", i, m.PHolm, m.Verdict, w.adj, w.verdict)
		}
	}
}

func TestFormatRelDiff(t *testing.T) {
	for _, c := range []struct {
		rel, hw float64
		want    string
	}{
		{-0.123, 0.004, "-12.3% ± 0.4%"},
		{-0.1466, 0.0083, "-14.7% ± 0.8%"},
		{-0.948, 0.015, "-94.8% ± 1.5%"},
		{0.5, 0.25, "+50.0% ± 25.0%"},
		{0.5, 0.45, "+50.0% ± 45.0%"},
		{0.01234, 0.000123, "+1.234% ± 0.012%"},
		{0.1, math.Inf(1), "+10.0% ± ∞"},
		{math.NaN(), 0.1, "—"},
	} {
		if got := FormatRelDiff(c.rel, c.hw); got != c.want {
			t.Errorf("FormatRelDiff(%g, %g) = %q, want %q", c.rel, c.hw, got, c.want)
		}
	}
}

// A baseline point whose replications all failed leaves its comparisons
// undefined and says why in compare_note (empty before, with every _cmp
// "undefined"); so does a point of its own with none.
func TestUnpairableFailed(t *testing.T) {
	none := []*record.Record{} // the replications Summarize kept: none succeeded
	base := Point{Point: "b", Policy: "fcfs", Scenario: "s", N: 0, NFailed: 3, Replications: 3, recs: none}
	p := Point{Point: "p", Policy: "msf", Scenario: "s", N: 3, Replications: 3, recs: none}
	pts := []Point{base, p}
	if err := Compare(pts, "fcfs"); err != nil {
		t.Fatal(err)
	}
	if got := pts[1].Compare.Undefined; got != "the baseline has no successful replication at this scenario (3 failed)" {
		t.Errorf("compare_note %q", got)
	}
	if v, note := pts[1].Compare.Verdict("mean_response"); v != CmpUndefined || note == "" {
		t.Errorf("verdict %q, note %q", v, note)
	}
	pts = []Point{{Point: "b", Policy: "fcfs", Scenario: "s", N: 3, Replications: 3, recs: none}, {Point: "p", Policy: "msf", Scenario: "s", N: 0, NFailed: 2, Replications: 2, recs: none}}
	if err := Compare(pts, "fcfs"); err != nil {
		t.Fatal(err)
	}
	if got := pts[1].Compare.Undefined; got != "this point has no successful replication (2 failed)" {
		t.Errorf("compare_note %q", got)
	}
}
