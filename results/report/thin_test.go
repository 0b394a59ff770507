package report

import (
	"math"
	"testing"
)

// TestThinnedCurve thins a curve of 10^5 points: mean(i) = i mod 100
// (a saw tooth of period 100, so every run of 200 points holds a 0 and
// a 99), one spike of 10^6 at i = 54,321, a NaN mean at every
// i ≡ 7 (mod 1000) and points 90,000 on unstable. Derived by hand:
// maxMarks/2 = 500 runs of 200 points; run r covers [200r, 200r+200).
// A stable run draws its minimum and its maximum: the first i ≡ 0
// (mean 0, at 200r) and the first i ≡ 99 (200r+99), except run 271
// (54,200–54,399), whose maximum is the spike. Runs 450–499 are
// unstable from their start: each is drawn by its first point only.
// So 450·2 + 50 = 950 points, in x order; a curve of maxMarks points
// is drawn whole.
func TestThinnedCurve(t *testing.T) {
	var c curve
	for i := range 100000 {
		mean := float64(i % 100)
		switch {
		case i == 54321:
			mean = 1e6
		case i%1000 == 7:
			mean = math.NaN()
		}
		c.add(float64(i), mean, 0.5, i >= 90000)
	}
	d := c.thinned()
	if len(d.x) != 950 {
		t.Fatalf("%d points drawn, want 950", len(d.x))
	}
	want := func(k int) (x float64, unstable bool) {
		if k >= 900 {
			return float64(90000 + 200*(k-900)), true
		}
		r := k / 2
		if k%2 == 0 {
			return float64(200 * r), false
		}
		if r == 271 {
			return 54321, false
		}
		return float64(200*r + 99), false
	}
	for k := range d.x {
		x, u := want(k)
		i := int(x)
		if d.x[k] != x || d.unstable[k] != u || d.mean[k] != c.mean[i] || d.hw[k] != 0.5 {
			t.Fatalf("point %d drawn is (%g, %g, unstable %v), want x %g unstable %v mean %g", k, d.x[k], d.mean[k], d.unstable[k], x, u, c.mean[i])
		}
	}
	var small curve
	for i := range maxMarks {
		small.add(float64(i), float64(i), 0, false)
	}
	if s := small.thinned(); len(s.x) != maxMarks {
		t.Fatalf("a curve of maxMarks points drawn with %d", len(s.x))
	}
}
