package report

import (
	"math"
	"strings"
	"testing"
)

// TestLogXAxis: which swept x values get a log axis. Gap ratios (largest
// gap / smallest) derived by hand:
//   - b-fig1's servers 32, 128, 256, 2048: gaps 96, 128, 1792 → 18.7 in
//     x; 0.602, 0.301, 0.903 → 3 in log10 x: log.
//   - k-fig5's λ = 0.1 … 2.0 in steps of 0.1: 1 in x: linear.
//   - q-fig3's λ = 1, 2, 4, 6, 7, 7.5, 7.7: gaps 1, 2, 2, 1, 0.5, 0.2 →
//     10 in x; log10 gaps 0.301 … 0.0113 → 26.6: linear (and 7.7 < 10).
//   - 1, 10, 100: a decade each, 1 in log x, 10 in x: log.
//   - 2, 4, 8 spans less than a decade: linear.
func TestLogXAxis(t *testing.T) {
	grid := make([]float64, 20)
	for i := range grid {
		grid[i] = float64(i+1) / 10
	}
	for _, tc := range []struct {
		name string
		xs   []float64
		want bool
	}{
		{"b-fig1 servers", []float64{32, 128, 256, 2048}, true},
		{"k-fig5 rates", grid, false},
		{"q-fig3 rates", []float64{1, 2, 4, 6, 7, 7.5, 7.7}, false},
		{"decades", []float64{1, 10, 100}, true},
		{"under a decade", []float64{2, 4, 8}, false},
		{"two values", []float64{1, 1000}, false},
		{"zero", []float64{0, 10, 100}, false},
	} {
		if got := logXAxis(tc.xs); got != tc.want {
			t.Errorf("%s %v: log x %v, want %v", tc.name, tc.xs, got, tc.want)
		}
	}
}

// TestLogXPlot: on a log x axis every swept k is a labelled tick at
// log10 k, the curve's points sit there, and the x range covers them.
func TestLogXPlot(t *testing.T) {
	c := curve{label: "fcfs"}
	for _, k := range []float64{32, 128, 256, 2048} {
		c.add(k, k/10, 0.1, false)
	}
	p := newPlot("", "servers k", "E[T]", []curve{c}, true)
	if !(p.X.Min < math.Log10(32) && p.X.Max > math.Log10(2048) && p.X.Max < 4) {
		t.Errorf("x range [%g, %g], want just around [log10 32, log10 2048] = [1.51, 3.31]", p.X.Min, p.X.Max)
	}
	labels := map[string]float64{}
	for _, tk := range p.X.Tick.Marker.Ticks(p.X.Min, p.X.Max) {
		if tk.Label != "" {
			labels[tk.Label] = tk.Value
		}
	}
	for _, k := range []float64{32, 128, 256, 2048} {
		l := map[float64]string{32: "32", 128: "128", 256: "256", 2048: "2048"}[k]
		if v, ok := labels[l]; !ok || math.Abs(v-math.Log10(k)) > 1e-12 {
			t.Errorf("tick %q at %v (present %v), want at log10 %g = %.4f", l, v, ok, k, math.Log10(k))
		}
	}
}

// TestComparisonLegendAvoidsBands: the comparison figure's legend keeps
// clear of the CI bands, not only of the lines and the intervals at the
// points. k-fig5f's comparison at its default size (values from its
// compare_mean_response.csv, rounded): K=17's band rises from +22 at
// λ = 1.2 to +100 at 1.6, through the top-left box a four-line legend
// needs, which holds no line and no point's interval; the legend was
// drawn there, over the band. Every corner holds data, so it goes under
// the axes.
func TestComparisonLegendAvoidsBands(t *testing.T) {
	xs := []float64{0.4, 0.8, 1.2, 1.6, 2}
	rows := []struct {
		label    string
		mean, hw []float64
	}{
		{"killsmart-multiclass K=3 nu=1024", []float64{-46.3, -24.3, -20.4, -21.2, -18.2}, []float64{15.5, 56.5, 56.7, 38.1, 32.4}},
		{"killsmart-multiclass K=5 nu=512", []float64{-47.3, -25.4, -33.1, -25.9, -19.6}, []float64{16.4, 52.7, 67.1, 40.8, 29.2}},
		{"killsmart-multiclass K=9 nu=256", []float64{-41.8, -11.7, -46.2, -18.1, -7.9}, []float64{34.8, 48.8, 81.2, 52.6, 34.8}},
		{"killsmart-multiclass K=17 nu=128", []float64{1.1, 9.1, 9.7, 20.8, 4.9}, []float64{2.9, 34.6, 12.8, 79.1, 59.2}},
	}
	var cs []curve
	for i, r := range rows {
		c := curve{label: r.label, style: i + 1}
		for j, x := range xs {
			c.add(x, r.mean[j], r.hw[j], false)
		}
		cs = append(cs, c)
	}
	p := newComparisonPlot("arrival rate λ", "E[T] relative to fcfs (%)", cs)
	_, below := crowded.LoadAndDelete(p)
	legends.Delete(p)
	if !below && p.Legend.Top && p.Legend.Left {
		t.Errorf("legend drawn top left, over K=17's band")
	}
}

// TestLegendAvoidsLimitLines: a limit line is data the legend keeps off.
// A curve from (1, 1) to (5, 5) leaves the top-left and bottom-right
// corners empty; a line at λ = 1.2 runs through the top left, so the
// legend goes bottom right.
func TestLegendAvoidsLimitLines(t *testing.T) {
	c := curve{label: "fcfs"}
	for x := 1.0; x <= 5; x++ {
		c.add(x, x, 0.05, false)
	}
	p := newPlot("", "λ", "E[T]", []curve{c}, true, vline{x: 1.2, label: "load 1", style: -1})
	legends.Delete(p)
	crowded.Delete(p)
	if p.Legend.Top || p.Legend.Left {
		t.Errorf("legend top=%v left=%v, want bottom right (the limit line crosses the top left)", p.Legend.Top, p.Legend.Left)
	}
}

// TestComparisonLegendAvoidsZeroLine: q-fig3's comparison at its default
// size (two rates with both sides estimated; relative differences from
// its compare_mean_response.csv, rounded): every series falls from about
// −10 % to −40 %, so the top right is free of curves and bands but holds
// the zero line; the legend sat on it. It goes elsewhere.
func TestComparisonLegendAvoidsZeroLine(t *testing.T) {
	var cs []curve
	for i, r := range [][4]float64{{-10.7, -41.6, 0.5, 2}, {-10.5, -41.7, 0.5, 2}, {-10.2, -39, 0.8, 2.5}, {-3.7, -35.3, 0.5, 5}} {
		c := curve{label: []string{"first-fit", "msf", "nmsr", "msfq"}[i], style: i + 1}
		c.add(1, r[0], r[2], false)
		c.add(2, r[1], r[3], false)
		cs = append(cs, c)
	}
	p := newComparisonPlot("arrival rate λ", "E[T] relative to fcfs (%)", cs)
	_, below := crowded.LoadAndDelete(p)
	legends.Delete(p)
	if !below && p.Legend.Top {
		t.Errorf("legend drawn at the top (left %v), over the zero line", p.Legend.Left)
	}
}

// TestComparisonBandFloor: k-fig5's comparison at its default size had
// K=3's band at λ = 0.4 from −46.3 − 95.1 to −46.3 + 95.1 % (five pairs:
// t·s/√5 wide), its axis down to −200 %: a mean response time below
// zero. E[T]/E[T_fcfs] − 1 > −100 %, so the band, the axis and the
// figure's CSV stop at −100 %; the upper end (48.8 %) is kept.
func TestComparisonBandFloor(t *testing.T) {
	c := curve{label: "killsmart-multiclass K=3 nu=1024", style: 1}
	c.addInterval(0.4, -46.3, -46.3-95.1, -46.3+95.1)
	c.addInterval(0.8, -24.3, -34.3, -14.3)
	lo, hi, _, _ := comparisonRange([]curve{c})
	// band [−100, 48.8]: padded by 5% of 148.8 = 7.44 each way.
	if want := -100 - 0.05*148.8; math.Abs(lo-want) > 1e-9 {
		t.Errorf("axis from %v, want %v (the floor −100 %% padded)", lo, want)
	}
	if want := 48.8 + 0.05*148.8; math.Abs(hi-want) > 1e-9 {
		t.Errorf("axis to %v, want %v", hi, want)
	}
	for _, e := range bandEdges([]curve{c}, lo, hi) {
		for i, y := range e.mean {
			if y < relFloor {
				t.Errorf("band edge %v at x=%v below −100 %%", y, e.x[i])
			}
		}
	}
	tab := figureTable([]panelData{{cs: []curve{c}}}, []panelScale{scaleOf([]curve{c}, true)})
	if got := tab.Rows[0][5].(float64); got != relFloor {
		t.Errorf("CSV y_low %v, want −100", got)
	}
	if got := tab.Rows[0][6].(float64); math.Abs(got-48.8) > 1e-9 {
		t.Errorf("CSV y_high %v, want 48.8", got)
	}
}

// TestComparisonBandUnbounded: a Fieller interval is asymmetric, and
// unbounded where the baseline's mean is within its own interval of 0.
// The axis ranges over the finite ends (a +∞ end does not stretch it), the
// band runs to the axis' top, and the figure's CSV keeps the truth: inf.
func TestComparisonBandUnbounded(t *testing.T) {
	c := curve{label: "killsmart K=7 nu=19", style: 1}
	c.addInterval(1.4, -73, -78.8, -56.4)
	c.addInterval(1.2, -40, -60, math.Inf(1))
	c.sortByX()
	if c.x[0] != 1.2 || c.lo[0] != -60 || !math.IsInf(c.hi[0], 1) || c.lo[1] != -78.8 {
		t.Fatalf("sortByX lost the intervals: %+v", c)
	}
	lo, hi, _, _ := comparisonRange([]curve{c})
	// finite ends −78.8 … −40 and 0: [−78.8, 0] padded by 5% of 78.8.
	if want := -78.8 - 0.05*78.8; math.Abs(lo-want) > 1e-9 {
		t.Errorf("axis from %v, want %v", lo, want)
	}
	if want := 0.05 * 78.8; math.Abs(hi-want) > 1e-9 {
		t.Errorf("axis to %v, want %v (an unbounded end does not stretch it)", hi, want)
	}
	for _, e := range bandEdges([]curve{c}, lo, hi) {
		for _, y := range e.mean {
			if !finite(y) || y > hi || y < lo {
				t.Errorf("band edge %v outside the axis [%v, %v]", y, lo, hi)
			}
		}
	}
	tab := figureTable([]panelData{{cs: []curve{c}}}, []panelScale{scaleOf([]curve{c}, true)})
	if got := tab.Rows[0][6].(float64); !math.IsInf(got, 1) {
		t.Errorf("CSV y_high %v, want +inf", got)
	}
	if l, h := tab.Rows[1][5].(float64), tab.Rows[1][6].(float64); l != -78.8 || h != -56.4 {
		t.Errorf("CSV [%v, %v], want the asymmetric [−78.8, −56.4]", l, h)
	}
	newComparisonPlot("arrival rate λ", "E[T] relative to fcfs (%)", []curve{c}) // draws without panicking
}

// TestFigureTableLinearFloor: a linear axis from 0 stops an interval at 0
// (yAxis.interval); the figure's CSV, which the matplotlib script draws,
// says the same. Jobs preempted 0.0002 ± 0.0005 has y_low 0, not −0.0003.
func TestFigureTableLinearFloor(t *testing.T) {
	c := curve{label: "K=3", style: 1}
	c.add(0.4, 0.0002, 0.0005, false)
	c.add(0.8, 0.004, 0.001, false)
	c.add(1.2, 0.006, 0.001, false)
	s := scaleOf([]curve{c}, false)
	if s.LogY {
		t.Fatal("a linear axis expected (0.0002 to 0.006, squashed is not the case)")
	}
	tab := figureTable([]panelData{{cs: []curve{c}}}, []panelScale{s})
	if got := tab.Rows[0][5].(float64); got != 0 {
		t.Errorf("CSV y_low %v, want 0", got)
	}
	if got := tab.Rows[1][5].(float64); math.Abs(got-0.003) > 1e-12 {
		t.Errorf("CSV y_low %v, want 0.003 (not clipped)", got)
	}
}

// TestLogLabelsOneNotation: k-fig6f's class 1 panel (jobs preempted from
// about 8e-6 to 0.01) read 0.01, 0.001, 0.0001, 1e-5 down its axis. From
// 10^-3 out it is now e-notation throughout: 0.01, 1e-3, 1e-4, 1e-5. An
// axis with no decade past 10^±4 is unchanged (0.001 … 100).
func TestLogLabelsOneNotation(t *testing.T) {
	labels := func(lo, hi float64) []string {
		var out []string
		for _, tk := range (logTicks{}).Ticks(math.Log10(lo), math.Log10(hi)) {
			if tk.Label != "" {
				out = append(out, tk.Label)
			}
		}
		return out
	}
	for _, c := range []struct {
		lo, hi float64
		want   string
	}{
		{8e-6, 0.012, "1e-5 1e-4 1e-3 0.01"},
		{0.0008, 120, "0.001 0.01 0.1 1 10 100"},
		{500, 2e6, "1e3 1e4 1e5 1e6"},
		// k-fig5's response times, 150 to 2e5: no decade past 10^5
		// inside the axis, so none in e-notation.
		{150, 2e5, "1000 10000 100000"},
		{3e-5, 0.5, "0.0001 0.001 0.01 0.1"},
	} {
		if got := strings.Join(labels(c.lo, c.hi), " "); got != c.want {
			t.Errorf("[%g, %g]: labels %q, want %q", c.lo, c.hi, got, c.want)
		}
	}
}
