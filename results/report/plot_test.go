package report

import (
	"bytes"
	"image"
	"image/color"
	"math"
	"strings"
	"testing"

	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

func TestYRange(t *testing.T) {
	c := func(mean, hw []float64, unstable ...bool) []curve {
		u := make([]bool, len(mean))
		copy(u, unstable)
		x := make([]float64, len(mean))
		for i := range x {
			x[i] = float64(i)
		}
		return []curve{{x: x, mean: mean, hw: hw, unstable: u}}
	}
	cases := []struct {
		name    string
		cs      []curve
		log     bool
		lo, hi  float64 // expected range before padding checks: lo <= want lo, hi >= want hi
		maxHi   float64 // hi must stay below this (CI capping)
		wantLoZ bool    // lo clamped at 0
	}{
		// 1 .. 1000 spans three decades → log.
		{"decades", c([]float64{1, 10, 1000}, []float64{0.1, 1, 10}), true, 1, 1010, 1e4, false},
		// 2 .. 50 spans 1.4 decades → linear, non-negative so lo >= 0.
		{"linear", c([]float64{2, 20, 50}, []float64{1, 1, 1}), false, 1, 51, 100, true},
		// A zero forbids log even over many decades.
		{"zero", c([]float64{0, 1, 1000}, []float64{0, 0, 0}), false, 0, 1000, 2000, true},
		// A wild CI (two replications) may stretch the axis by one span of the means at most.
		{"wild CI", c([]float64{10, 20}, []float64{1, 1e6}), false, 9, 21, 20 + 10*1.2, true},
		// 1.5 … 57 spans 1.6 decades but most means sit near the bottom
		// (median 3 < 1.5 + 0.1 × 55.5 = 7.05): a linear axis would
		// squash them under one policy's blow-up → log.
		{"squashed", c([]float64{1.5, 2, 2.5, 3, 4, 5, 57}, []float64{0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 1}), true, 1.5, 57, 600, false},
		// Means within their (typical) intervals: utilisation 0.799,
		// 0.8, 0.801 ± 0.01 — the axis shows the intervals whole,
		// [0.789, 0.811] (the median half-width beyond the means), not
		// one span (0.002) around them.
		{"noise", c([]float64{0.799, 0.8, 0.801}, []float64{0.01, 0.01, 0.01}), false, 0.789, 0.811, 0.82, true},
		// Constant up to rounding: a 10% band around the value.
		{"constant", c([]float64{83.4, math.Nextafter(83.4, 100)}, []float64{0, 0}), false, 80, 87, 100, false},
		// Unstable points do not set the range: 1..3 is linear although the unstable mean is 1e6.
		{"unstable ignored", c([]float64{1, 3, 1e6}, []float64{0.1, 0.1, 5}, false, false, true), false, 0.9, 3.1, 4, false},
	}
	for _, k := range cases {
		lo, hi, logY, ok := yRange(k.cs)
		if !ok || logY != k.log || lo > k.lo || hi < k.hi || hi > k.maxHi || (k.wantLoZ && lo < 0) {
			t.Errorf("%s: range [%v, %v] log=%v ok=%v; want log=%v, [≤%v, ≥%v], hi ≤ %v", k.name, lo, hi, logY, ok, k.log, k.lo, k.hi, k.maxHi)
		}
	}
	if _, _, _, ok := yRange(c([]float64{math.NaN()}, []float64{math.NaN()})); ok {
		t.Errorf("all-NaN curve: ok = true")
	}
}

// TestUnstableMarker: an unstable point is pinned to the top edge (normalised
// y = 1) and nothing is drawn at its (finite-looking) mean.
func TestUnstableMarker(t *testing.T) {
	cs := []curve{{label: "p", x: []float64{1, 2, 3}, mean: []float64{1, 2, 1.5}, hw: []float64{0.1, 0.1, 0.1}, unstable: []bool{false, false, true}}}
	p := newPlot("t", "x", "y", cs, true)
	xn := p.X.Norm(3)
	top, atMean := false, false
	for _, b := range p.GlyphBoxes(p) {
		if math.Abs(b.X-xn) > 1e-9 {
			continue
		}
		switch {
		case math.Abs(b.Y-1) < 1e-9:
			top = true
		case math.Abs(b.Y-p.Y.Norm(1.5)) < 0.02:
			atMean = true
		}
	}
	if !top || atMean {
		t.Errorf("unstable point: marker at top %v, drawn at its mean %v; want true, false", top, atMean)
	}
}

func TestTicks(t *testing.T) {
	var labels []string
	for _, tk := range (niceTicks{}).Ticks(0.8, 7.7) {
		if tk.Label != "" {
			labels = append(labels, tk.Label)
		}
	}
	if got := len(labels); got < 3 || got > 8 || labels[0] != "2" {
		t.Errorf("linear ticks on [0.8, 7.7]: %v", labels)
	}
	// A range of a few ULPs (a metric constant up to rounding) must not
	// loop forever.
	if ts := (niceTicks{}).Ticks(83.4, math.Nextafter(math.Nextafter(83.4, 100), 100)); len(ts) == 0 || len(ts) > 3 {
		t.Errorf("ticks on a range of 2 ULPs: %v", ts)
	}
	labels = nil
	for _, tk := range (logTicks{}).Ticks(-0.1, 3.2) {
		if tk.Label != "" {
			labels = append(labels, tk.Label)
		}
	}
	if want := "1 10 100 1000"; strings.Join(labels, " ") != want {
		t.Errorf("log ticks on [10^-0.1, 10^3.2]: %q, want %q", strings.Join(labels, " "), want)
	}
	// Fewer than two decades in range: 2 and 5 are labelled too; within
	// one decade (3 to 8: no power of ten, and only 5 of 1-2-5), every
	// mantissa.
	for _, c := range []struct {
		lo, hi float64
		want   string
	}{
		{math.Log10(1.5), math.Log10(60), "2 5 10 20 50"},
		// 1.7 … 110: 1.8 decades with two powers of ten inside; 2 and 5
		// are labelled too, so the values at 1.8–3.1 have a label near
		// them (they had only 10 and 100).
		{math.Log10(1.7), math.Log10(110), "2 5 10 20 50 100"},
		// Two decades or more: the powers of ten only.
		{math.Log10(1.7), math.Log10(180), "10 100"},
		{math.Log10(3), math.Log10(8), "3 4 5 6 7 8"},
		{math.Log10(0.004), math.Log10(0.03), "0.005 0.01 0.02"},
		// 1e-8 … 100: 11 decades, more than maxLogLabels = 6, so every
		// ⌈11/6⌉ = 2nd decade, 10^0 among them; 10^-4 in the
		// e-notation of its neighbours below (TestLogLabelsOneNotation).
		{-8.2, 2.3, "1e-8 1e-6 1e-4 0.01 1 100"},
		// 0.001 … 1e4: 8 decades → every 2nd.
		{-3, 4, "0.01 1 100 10000"},
	} {
		labels = nil
		for _, tk := range (logTicks{}).Ticks(c.lo, c.hi) {
			if tk.Label != "" {
				labels = append(labels, tk.Label)
			}
		}
		if got := strings.Join(labels, " "); got != c.want {
			t.Errorf("log ticks on [%g, %g]: %q, want %q", math.Pow(10, c.lo), math.Pow(10, c.hi), got, c.want)
		}
	}
	// Past a million a linear axis writes mantissa and the axis's power
	// of ten, to the step's precision: 0 … 2e6 in steps of 5e5.
	labels = nil
	for _, tk := range (niceTicks{}).Ticks(0, 2.1e6) {
		if tk.Label != "" {
			labels = append(labels, tk.Label)
		}
	}
	if got, want := strings.Join(labels, " "), "0 0.5e6 1.0e6 1.5e6 2.0e6"; got != want {
		t.Errorf("linear ticks on [0, 2.1e6]: %q, want %q", got, want)
	}
	// A thinned axis has a tick per decade and no minor ticks: 10^-8 …
	// 10^2, 11 ticks.
	if n := len((logTicks{}).Ticks(-8.2, 2.3)); n != 11 {
		t.Errorf("%d ticks on [1e-8.2, 1e2.3], want 11 (decades only)", n)
	}
}

// TestLogMinorTicks: minor ticks are drawn only when the narrowest gap
// between them, log10(10/9) = 0.045757 of a decade, is at least 1.5 pt on
// the page, i.e. a decade at least 1.5/0.045757 = 32.78 pt long.
func TestLogMinorTicks(t *testing.T) {
	for _, c := range []struct {
		name   string
		length vg.Length
		lo, hi float64
		want   int // ticks
	}{
		// Length unknown: 1, 2, …, 9 and 10 on [1, 10].
		{"unknown length", 0, 0, 1, 10},
		// One decade in 33 pt: gap 33·0.045757 = 1.51 pt ≥ 1.5, kept.
		{"one decade in 33 pt", 33, 0, 1, 10},
		// One decade in 32 pt: gap 1.46 pt < 1.5, only the labelled
		// 1, 2, 5 and 10 (an axis under two decades labels 2 and 5).
		{"one decade in 32 pt", 32, 0, 1, 4},
		// Column figure (2.4 in less 0.55 in of x axis = 133.2 pt), 3
		// decades: 44.4 pt a decade, gap 2.03 pt, 3·9+1 = 28 ticks.
		{"column, 3 decades", 133.2, 0, 3, 28},
		// Grid panel (1.9 in less 0.55 in and an 8 pt title ≈ 87 pt),
		// 10^-3 … 10^2.5 as in MSFQ's phase panels: 15.8 pt a decade,
		// gap 0.72 pt, decades only: 10^-3 … 10^2, 6 ticks.
		{"panel, 5.5 decades", 87, -3, 2.5, 6},
		// Under two decades 2·10^k and 5·10^k are labelled: they stay
		// when the minor ticks go (1, 2, 5 on [1, 8] in 5 pt).
		{"labelled 2 and 5 stay", 5, 0, math.Log10(8), 3},
	} {
		if got := len(logTicks{length: c.length}.Ticks(c.lo, c.hi)); got != c.want {
			t.Errorf("%s: %d ticks on [1e%g, 1e%g] over %v, want %d", c.name, got, c.lo, c.hi, c.length, c.want)
		}
	}
}

// TestAxisLengths: a plot drawn in a grid tile has its log axis's length
// set from the tile, so the rule above applies as drawn. A 2.3 × 1.9 in
// panel with a title: 136.8 − 39.6 (x axis) − about 10 (title) ≈ 87 pt of
// y axis; means 10^-3 … 10^2.5 fill it with 5.5 decades, 16 pt each:
// no minor ticks.
func TestAxisLengths(t *testing.T) {
	c := curve{label: "a"}
	for i, m := range []float64{1e-3, 1, math.Pow(10, 2.5)} {
		c.add(float64(i+1), m, 0, false)
	}
	p := newPlot("panel", "x", "y", []curve{c}, true)
	if _, ok := p.Y.Tick.Marker.(logTicks); !ok {
		t.Fatalf("y axis over 5.5 decades is not logarithmic: %T", p.Y.Tick.Marker)
	}
	axisLengths(p, draw.Canvas{Rectangle: vg.Rectangle{Max: vg.Point{X: panW, Y: panH}}})
	lt := p.Y.Tick.Marker.(logTicks)
	if lt.length < 80 || lt.length > 97 {
		t.Errorf("y axis length %v, want about 87 pt", lt.length)
	}
	for _, tk := range lt.Ticks(p.Y.Min, p.Y.Max) {
		if d := tk.Value - math.Round(tk.Value); math.Abs(d) > 1e-9 {
			t.Errorf("minor tick at 10^%g on a 5.5-decade panel", tk.Value)
		}
	}
}

// TestNewRaster: the raster canvas made without NewWith's image copy draws
// exactly what vgimg.NewWith(UseWH, UseDPI, white) draws (same pixels), so
// the context options it sets by hand are all NewWith sets.
func TestNewRaster(t *testing.T) {
	cs := []curve{{label: "a", x: []float64{1, 2, 3}, mean: []float64{1, 4, 2}, hw: []float64{0.2, 0.5, 0.3},
		unstable: []bool{false, false, true}}}
	w, h := 3*vg.Inch, 2*vg.Inch
	want := vgimg.NewWith(vgimg.UseWH(w, h), vgimg.UseDPI(pngDPI), vgimg.UseBackgroundColor(color.White))
	newPlot("t", "x", "y", cs, true).Draw(draw.New(want))
	got := newRaster(w, h)
	newPlot("t", "x", "y", cs, true).Draw(draw.New(got))
	a, b := want.Image().(*image.RGBA), got.Image().(*image.RGBA)
	if a.Bounds() != b.Bounds() {
		t.Fatalf("bounds %v, want %v", b.Bounds(), a.Bounds())
	}
	if !bytes.Equal(a.Pix, b.Pix) {
		n := 0
		for i := range a.Pix {
			if a.Pix[i] != b.Pix[i] {
				n++
			}
		}
		t.Fatalf("%d of %d bytes differ", n, len(a.Pix))
	}
}
