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
//	  a − ρ·b = (2 − ρ)·b, so Fieller's condition |ā − ρ·b̄| ≤ t·sd/√3
//	  reads 2·|2 − ρ| ≤ 2.484·|2 − ρ|, true for every ρ (b̄'s own
//	  interval 2 ± 2.484 contains 0): the interval is the whole line;
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
	if !math.IsInf(c.RelDiffLo, -1) || !math.IsInf(c.RelDiffHi, 1) || c.Note == "" {
		t.Errorf("rel interval [%g, %g] (note %q), want unbounded with a note", c.RelDiffLo, c.RelDiffHi, c.Note)
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
	// relative difference 2 (+200%), whose interval is unbounded (b̄'s
	// own, 0.5 ± 12.7·0.5, contains 0), said in the note.
	if z := pairOf("m", "m", []float64{1, 2}, []float64{0, 1}); z.RelDiff != 2 || !math.IsInf(z.RelDiffHi, 1) || z.Note == "" {
		t.Errorf("baseline 0 in one replication: %+v", z)
	}
	// The sign is the means': a = (1, 3), b = (4, 1). The mean of the
	// ratios (0.25 + 3)/2 − 1 = +62.5% said a was higher; the means are 2
	// and 2.5, −20%. b̄'s interval 2.5 ± 12.7·1.5 contains 0: Fieller's set
	// is unbounded (two half-lines, reported as their hull).
	flip := pairOf("m", "m", []float64{1, 3}, []float64{4, 1})
	if !nearRel(flip.RelDiff, -0.2, 1e-12) || !math.IsInf(flip.RelDiffLo, -1) || !math.IsInf(flip.RelDiffHi, 1) || flip.Diff >= 0 {
		t.Errorf("sign: rel %.17g [%g, %g] (diff %g), want −0.2, unbounded", flip.RelDiff, flip.RelDiffLo, flip.RelDiffHi, flip.Diff)
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

// TestFormatRelDiff: the decimals are those of the shorter arm of the
// interval to one significant digit (two when it leads with 1 or 2).
func TestFormatRelDiff(t *testing.T) {
	inf := math.Inf(1)
	for _, c := range []struct {
		rel, lo, hi float64
		want        string
	}{
		{-0.123, -0.127, -0.119, "-12.3% [-12.7%, -11.9%]"},
		{-0.1466, -0.1549, -0.1383, "-14.7% [-15.5%, -13.8%]"},
		{-0.948, -0.963, -0.93, "-94.8% [-96.3%, -93.0%]"}, // arms 1.5 and 1.8: two digits
		{0.5, 0.25, 1.2, "+50.0% [+25.0%, +120.0%]"},       // the shorter arm, 25, decides
		{-0.7295925482584515, -0.7878870702477059, -0.5638567829201011, "-73.0% [-78.8%, -56.4%]"},
		{0.01234, 0.01222, 0.013, "+1.234% [+1.222%, +1.300%]"}, // arm 0.012: three decimals
		{1, 1, 1, "+100.0% [+100.0%, +100.0%]"},                 // no width: one decimal
		{0.1, -inf, inf, "+10.0% (unbounded)"},
		{0.1, -0.05, inf, "+10.0% [-5.0%, +∞)"},
		{-0.2, -inf, 0.3, "-20.0% (-∞, +30.0%]"},
		{0.1, math.NaN(), math.NaN(), "+10.0%"}, // no interval (a summary written before it)
		{math.NaN(), 0.1, 0.2, "—"},
	} {
		if got := FormatRelDiff(c.rel, c.lo, c.hi); got != c.want {
			t.Errorf("FormatRelDiff(%g, %g, %g) = %q, want %q", c.rel, c.lo, c.hi, got, c.want)
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
