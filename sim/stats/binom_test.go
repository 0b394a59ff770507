package stats

import (
	"math"
	"testing"
)

// binomDirect is P(X >= k) by the textbook sum with exact binomial
// coefficients (small n only).
func binomDirect(n, k int, p float64) float64 {
	var s float64
	for i := k; i <= n; i++ {
		c := 1.0
		for j := 0; j < i; j++ {
			c = c * float64(n-j) / float64(j+1)
		}
		s += c * math.Pow(p, float64(i)) * math.Pow(1-p, float64(n-i))
	}
	return s
}

func TestBinomTail(t *testing.T) {
	for _, n := range []int{1, 2, 5, 10, 31} {
		for k := -1; k <= n+1; k++ {
			for _, p := range []float64{0, 1e-3, 0.01, 0.3, 0.5, 0.99, 1} {
				want := binomDirect(n, max(k, 0), p)
				if k > n {
					want = 0
				}
				if got := BinomTail(n, k, p); math.Abs(got-want) > 1e-10*want {
					t.Errorf("BinomTail(%d,%d,%g) = %g, want %g", n, k, p, got, want)
				}
			}
		}
	}
	// The majority vote of the engine's point verdict, n = 10: five false
	// alarms at 10^-3 each: C(10,5)·10^-15·(1−10^-3)^5 + ... ≈ 2.5e-13.
	if got := BinomTail(10, 5, 1e-3); math.Abs(got/2.5075e-13-1) > 1e-3 {
		t.Errorf("BinomTail(10,5,1e-3) = %g, want about 2.5075e-13", got)
	}
	if !math.IsNaN(BinomTail(5, 2, 1.5)) || !math.IsNaN(BinomTail(-1, 0, 0.5)) {
		t.Error("bad arguments must give NaN")
	}
}

func TestBinomUpper(t *testing.T) {
	// x = 0: 1 − 0.05^{1/n}; 3000 clean trials bound the rate below 0.1%.
	if got, want := BinomUpper(0, 3000, 0.95), 1-math.Pow(0.05, 1.0/3000); math.Abs(got-want) > 1e-15 {
		t.Errorf("BinomUpper(0,3000) = %g, want %g", got, want)
	}
	if BinomUpper(0, 2995, 0.95) > 1e-3 || BinomUpper(0, 2990, 0.95) < 1e-3 {
		t.Error("the 0-of-n bound crosses 0.1% between n = 2990 and 2995")
	}
	// x > 0: the bound p solves P(X <= x | p) = 0.05.
	for _, c := range [][2]int{{1, 10}, {3, 560}, {7, 20}, {19, 20}} {
		p := BinomUpper(c[0], c[1], 0.95)
		if cdf := 1 - binomDirect(c[1], c[0]+1, p); math.Abs(cdf-0.05) > 1e-9 {
			t.Errorf("BinomUpper(%d,%d) = %g: P(X <= x) = %g, want 0.05", c[0], c[1], p, cdf)
		}
	}
	if BinomUpper(4, 4, 0.95) != 1 || !math.IsNaN(BinomUpper(5, 4, 0.95)) || !math.IsNaN(BinomUpper(0, 0, 0.95)) {
		t.Error("edge cases")
	}
}
