package report

import (
	"bytes"
	"math"
	"testing"

	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// Names come from the sweep, and the figures' font (Liberation Serif) has
// Latin, Greek and common punctuation but no CJK, no check mark and no
// emoji: each of those is drawn as "?". Before, the CJK character and the
// check mark vanished from the title without a trace, and the emoji (past
// U+FFFF) panicked the PDF writer ("index out of range [65536]"), which
// took the run's report down with it.
func TestFigureText(t *testing.T) {
	const name = "小-jobs ✓ α_1 Größe—4 😀"
	if got, want := drawable(name), "?-jobs ? α_1 Größe—4 ?"; got != want {
		t.Errorf("drawable(%q) = %q, want %q", name, got, want)
	}
	if s := "plain (need 1)\nline two"; drawable(s) != s {
		t.Errorf("drawable changed %q to %q", s, drawable(s))
	}
	c := curve{label: name}
	c.add(0.3, 1, 0.1, false)
	c.add(0.6, 2, 0.2, false)
	p := newPlot("class 0: "+name, "load ρ", name, []curve{c}, true)
	cv := newPDFCanvas(3.3*vg.Inch, 2.4*vg.Inch)
	p.Draw(draw.New(cv))
	var b bytes.Buffer
	if err := cv.writeTo(&b); err != nil || b.Len() == 0 {
		t.Fatalf("the PDF: %v (%d bytes)", err, b.Len())
	}
}

// A lone x value gets an axis around it that does not go below 0 for a
// positive quantity on a linear axis (a load of 0.3 had an axis from
// −0.2); a log axis's x is a logarithm and may.
func TestWidenSingle(t *testing.T) {
	for _, c := range []struct {
		x      float64
		logX   bool
		lo, hi float64
	}{
		{0.3, false, 0.15, 0.45}, // d = x/2, not 0.5
		{4, false, 3.5, 4.5},     // d = 0.5 (10% of 4 is less)
		{20, false, 18, 22},      // d = 10%
		{-0.52, true, -1.02, -0.02},
	} {
		lo, hi := widenSingle(c.x, c.logX)
		if math.Abs(lo-c.lo) > 1e-12 || math.Abs(hi-c.hi) > 1e-12 {
			t.Errorf("widenSingle(%v, %v) = [%v, %v], want [%v, %v]", c.x, c.logX, lo, hi, c.lo, c.hi)
		}
	}
}
