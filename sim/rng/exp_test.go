package rng

import (
	"math"
	"testing"
)

// TestZigguratTables: the constants r and v and the recursion agree. The
// layers are built from the base up with x_{i+1} = f⁻¹(f(x_i) + v/x_i) and
// the top one is closed by x_256 = 0, so the top layer's area,
// x_255·(1 − f(x_255)), must come out as v; any error in r or v shows there
// first. Every other layer has area v by construction, and the base strip
// r·f(r) + (tail e^{−r}) = (1 + r)e^{−r} = v by the choice of v.
func TestZigguratTables(t *testing.T) {
	if base := (1 + zigR) * math.Exp(-zigR); math.Abs(base-zigV) > 1e-15*zigV {
		t.Errorf("base strip area %v, v = %v", base, zigV)
	}
	x255 := zigX[zigN-1] / zigW
	if top := x255 * (1 - math.Exp(-x255)); math.Abs(top-zigV) > 1e-9*zigV {
		t.Errorf("top layer area %v, v = %v (relative error %.2g)", top, zigV, (top-zigV)/zigV)
	}
	for i := 1; i < zigN; i++ {
		xi, xj := zigX[i]/zigW, 0.0
		if i+1 < zigN {
			xj = zigX[i+1] / zigW
		}
		if !(xj < xi) || zigF[i+1] <= zigF[i] {
			t.Fatalf("layer %d: x %v then %v, f %v then %v: not stacked", i, xi, xj, zigF[i], zigF[i+1])
		}
		if zigK[i] > uint64(xj/xi*zigM) {
			t.Fatalf("layer %d: fast-path bound %d beyond x_{i+1}/x_i", i, zigK[i])
		}
	}
	lo, hi := ExpBounds()
	if !(lo > 0 && lo < 1e-17 && hi > 45 && hi < 45.2) {
		t.Errorf("ExpBounds = %v, %v", lo, hi)
	}
}

// TestExpDistribution: 2²² draws of ExpFill against Exp(1).
//
//   - Chi-square over 256 equiprobable cells (edges −ln(1 − c/256)): under
//     Exp(1) the statistic is χ²(255), whose 1 − 10⁻⁶ quantile is ≈ 377
//     (Wilson–Hilferty: 255·(1 − 2/2295 + 4.753·√(2/2295))³).
//   - The first three moments, 1, 2 and 6, each within 5 standard errors
//     (the variances of X, X² and X³ under Exp(1) are 1, 20 and 684).
//   - The tail the ziggurat handles apart, X > r: probability e^{−r}
//     (≈ 4.53·10⁻⁴, ≈ 1900 draws), within 5 binomial standard deviations.
//
// The seed is fixed, so the test is deterministic; the bounds are what a
// correct sampler passes with probability above 1 − 10⁻⁵.
func TestExpDistribution(t *testing.T) {
	const n = 1 << 22
	s := Derive(11, 5)
	buf := make([]float64, 4096)
	var cells [256]int
	var m1, m2, m3 float64
	tail := 0
	for done := 0; done < n; done += len(buf) {
		s.ExpFill(buf)
		for _, x := range buf {
			if !(x > 0) || math.IsInf(x, 0) {
				t.Fatalf("variate %v", x)
			}
			c := int(-math.Expm1(-x) * 256) // F(x)·256
			cells[min(c, 255)]++
			m1 += x
			m2 += x * x
			m3 += x * x * x
			if x > zigR {
				tail++
			}
		}
	}
	chi := 0.0
	for _, c := range cells {
		d := float64(c) - n/256.0
		chi += d * d / (n / 256.0)
	}
	if chi > 377 {
		t.Errorf("chi-square %.1f over 256 equiprobable cells (χ²(255) 1−10⁻⁶ quantile ≈ 377)", chi)
	}
	for k, c := range []struct{ got, want, variance float64 }{
		{m1 / n, 1, 1}, {m2 / n, 2, 20}, {m3 / n, 6, 684},
	} {
		if se := math.Sqrt(c.variance / n); math.Abs(c.got-c.want) > 5*se {
			t.Errorf("moment %d: %v, want %v ± %v", k+1, c.got, c.want, 5*se)
		}
	}
	p := math.Exp(-zigR)
	if sd := math.Sqrt(n * p * (1 - p)); math.Abs(float64(tail)-n*p) > 5*sd {
		t.Errorf("%d draws beyond r, want %.0f ± %.0f", tail, n*p, 5*sd)
	}
}

// TestExpSlowPaths: draws that miss the fast path (a wedge test or the
// tail) give the same numbers through Exp and ExpFill, and both kinds
// occur in the run, so TestFillMatchesDraws-style equality covers them.
func TestExpSlowPaths(t *testing.T) {
	a, b, probe := Derive(3, 9), Derive(3, 9), Derive(3, 9)
	buf := make([]float64, 50000)
	a.ExpFill(buf)
	wedges, tails := 0, 0
	for i, x := range buf {
		if y := b.Exp(); x != y {
			t.Fatalf("ExpFill[%d] = %v, Exp %v", i, x, y)
		}
		u := probe.Uint64()
		if _, ok := zig(u); !ok {
			if u&zigL == 0 {
				tails++
			} else {
				wedges++
			}
		}
		for probe.hi != b.hi || probe.lo != b.lo { // skip what the slow path drew
			probe.Uint64()
		}
	}
	if a.Uint64() != b.Uint64() {
		t.Fatal("streams out of step")
	}
	// Expected about 50000·2.2% ≈ 1100 slow draws, 50000/2200 ≈ 23 of them tails.
	if wedges < 600 || tails < 5 {
		t.Fatalf("slow paths taken %d (wedge) and %d (tail) times: not exercised", wedges, tails)
	}
	t.Logf("%d wedge and %d tail draws of 50000", wedges, tails)
}
