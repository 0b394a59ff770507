package stats

import (
	"math"
	"testing"
)

// TestTTwoSided checks the p-value against the quantile it inverts
// (TTwoSided(TQuantile(1−α/2, df), df) = α) and against closed forms:
// for df = 1 (Cauchy) P(|T| > t) = 1 − (2/π)·atan(t), so t = 1 gives 0.5;
// for df = 2, P(|T| > t) = 1 − t/√(2+t²), so t = √2 gives 1 − 1/√2.
func TestTTwoSided(t *testing.T) {
	for _, df := range []int{1, 2, 4, 9, 29, 100, 5000} {
		for _, alpha := range []float64{0.5, 0.05, 0.01, 1e-6} {
			q := TQuantile(1-alpha/2, df)
			if got := TTwoSided(q, df); math.Abs(got-alpha) > 1e-9*alpha {
				t.Errorf("df %d: TTwoSided(TQuantile(1-%g/2)) = %g, want %g", df, alpha, got, alpha)
			}
			if got := TTwoSided(-q, df); math.Abs(got-alpha) > 1e-9*alpha {
				t.Errorf("df %d: TTwoSided(-t) = %g, want %g (symmetric)", df, got, alpha)
			}
		}
	}
	closed := []struct {
		t    float64
		df   int
		want float64
	}{
		{1, 1, 0.5},
		{math.Sqrt2, 2, 1 - 1/math.Sqrt2},
		{0, 7, 1},
		{math.Inf(1), 3, 0},
	}
	for _, c := range closed {
		if got := TTwoSided(c.t, c.df); math.Abs(got-c.want) > 1e-14 {
			t.Errorf("TTwoSided(%g, %d) = %.17g, want %.17g", c.t, c.df, got, c.want)
		}
	}
	if !math.IsNaN(TTwoSided(1, 0)) || !math.IsNaN(TTwoSided(math.NaN(), 3)) {
		t.Error("want NaN for df < 1 or NaN t")
	}
}
