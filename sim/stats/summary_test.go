package stats

import (
	"math"
	"testing"
)

func TestMeanCI(t *testing.T) {
	inf, nan := math.Inf(1), math.NaN()
	cases := []struct {
		name  string
		xs    []float64
		level float64
		want  Summary
	}{
		{"empty", nil, 0.95, Summary{0, nan, nan, nan}},
		{"one", []float64{3}, 0.95, Summary{1, 3, nan, inf}},
		// {1, 3}: mean 2, s² = (1+1)/1 = 2, s = √2; t(0.975,1) = 12.7062047362,
		// half-width = 12.7062047362·√2/√2 = 12.7062047362.
		{"two", []float64{1, 3}, 0.95, Summary{2, 2, math.Sqrt2, 12.706204736174693}},
		// 1..10: mean 5.5, s² = 82.5/9 = 9.1666..., s = 3.0276503540974917;
		// half-width = t(0.975,9)·s/√10 = 2.2621571627982·3.0276503541/3.16227766 = 2.1658506...
		{"1..10", []float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, 0.95,
			Summary{10, 5.5, 3.0276503540974917, 2.2621571627982050 * 3.0276503540974917 / math.Sqrt(10)}},
		// 90%: t(0.95, 9) = 1.8331129326562366.
		{"1..10 90%", []float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, 0.90,
			Summary{10, 5.5, 3.0276503540974917, 1.8331129326562366 * 3.0276503540974917 / math.Sqrt(10)}},
		{"constant", []float64{7, 7, 7}, 0.95, Summary{3, 7, 0, 0}},
		{"bad level", []float64{1, 3}, 1, Summary{2, 2, math.Sqrt2, nan}},
		{"bad level 0", []float64{1, 3}, 0, Summary{2, 2, math.Sqrt2, nan}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := MeanCI(c.xs, c.level)
			if !sameSummary(got, c.want, 1e-14) {
				t.Errorf("MeanCI = %+v, want %+v", got, c.want)
			}
			var a Acc
			for _, x := range c.xs {
				a.Add(x)
			}
			if ac := a.CI(c.level); !sameSummary(ac, c.want, 1e-14) {
				t.Errorf("Acc.CI = %+v, want %+v", ac, c.want)
			}
		})
	}
}

func sameSummary(a, b Summary, tol float64) bool {
	eq := func(x, y float64) bool {
		if math.IsNaN(x) || math.IsNaN(y) {
			return math.IsNaN(x) && math.IsNaN(y)
		}
		if math.IsInf(x, 0) || math.IsInf(y, 0) {
			return x == y
		}
		return math.Abs(x-y) <= tol*math.Max(1, math.Abs(y))
	}
	return a.N == b.N && eq(a.Mean, b.Mean) && eq(a.StdDev, b.StdDev) && eq(a.HalfWidth, b.HalfWidth)
}

// TestVarianceStable: a large offset must not destroy the variance (the naive
// Σx² − (Σx)²/n formula returns 0 or garbage here).
func TestVarianceStable(t *testing.T) {
	xs := []float64{1e9 + 4, 1e9 + 7, 1e9 + 13, 1e9 + 16} // deviations -6,-3,3,6: s² = 90/3 = 30
	var a Acc
	for _, x := range xs {
		a.Add(x)
	}
	if v := a.Var(); math.Abs(v-30) > 1e-6 {
		t.Errorf("Acc.Var = %v, want 30", v)
	}
	if s := MeanCI(xs, 0.95); math.Abs(s.StdDev-math.Sqrt(30)) > 1e-7 || s.Mean != 1e9+10 {
		t.Errorf("MeanCI = %+v", s)
	}
}

// TestAccMerge: merging per-group accumulators gives the accumulator of
// all observations (up to rounding), whatever the split, including empty
// groups on either side; the data sit on a large offset, where the naive
// formula would lose every digit.
func TestAccMerge(t *testing.T) {
	xs := make([]float64, 1000)
	for i := range xs {
		xs[i] = 1e8 + float64((i*7919)%1000)/10
	}
	var all Acc
	for _, x := range xs {
		all.Add(x)
	}
	for _, cut := range []int{0, 1, 10, 500, 999, 1000} {
		var a, b Acc
		for _, x := range xs[:cut] {
			a.Add(x)
		}
		for _, x := range xs[cut:] {
			b.Add(x)
		}
		a.Merge(b)
		// Tolerances: the two means are both sums of n rounded terms, so
		// they agree to about n·ε ≈ 1e-13 relative; the variances agree to
		// about 1e-10 relative (measured: 4e-11), where the naive formula
		// would be off by 100% on this offset.
		if a.N() != all.N() || math.Abs(a.Mean()-all.Mean()) > 1e-13*all.Mean() || math.Abs(a.Var()-all.Var()) > 1e-9*all.Var() {
			t.Errorf("cut %d: merged N %d mean %v var %v, want N %d mean %v var %v",
				cut, a.N(), a.Mean(), a.Var(), all.N(), all.Mean(), all.Var())
		}
	}
	// The exact variance of 0, 0.1, ..., 99.9 (each once): n(n+1)/12 · 0.01.
	if want := 1000.0 * 1001 / 12 * 0.01; math.Abs(all.Var()-want) > 1e-9*want {
		t.Errorf("Var %v, want %v", all.Var(), want)
	}
}

func TestAccEmpty(t *testing.T) {
	var a Acc
	if a.N() != 0 || !math.IsNaN(a.Mean()) || !math.IsNaN(a.Var()) {
		t.Errorf("empty: N %d mean %v var %v", a.N(), a.Mean(), a.Var())
	}
	a.Add(2)
	if a.N() != 1 || a.Mean() != 2 || !math.IsNaN(a.Var()) {
		t.Errorf("one: N %d mean %v var %v", a.N(), a.Mean(), a.Var())
	}
	a.Add(4)
	if a.Mean() != 3 || a.Var() != 2 {
		t.Errorf("two: mean %v var %v", a.Mean(), a.Var())
	}
}

func TestRelHalfWidth(t *testing.T) {
	cases := []struct {
		s    Summary
		want float64
	}{
		{Summary{N: 5, Mean: -4, HalfWidth: 1}, 0.25},
		{Summary{N: 5, Mean: 0, HalfWidth: 1}, math.Inf(1)},
		{Summary{N: 5, Mean: 0, HalfWidth: 0}, 0},
		{Summary{N: 1, Mean: 2, HalfWidth: math.Inf(1)}, math.Inf(1)},
	}
	for _, c := range cases {
		if got := c.s.RelHalfWidth(); got != c.want {
			t.Errorf("%+v: %v, want %v", c.s, got, c.want)
		}
	}
}

// TestCICoverage: over many independent normal samples of size 5, the 95%
// interval covers the true mean about 95% of the time (the reason to use t,
// not z, at small n: z would give about 88%).
func TestCICoverage(t *testing.T) {
	// Deterministic normals: Box–Muller on a fixed LCG.
	state := uint64(12345)
	unif := func() float64 {
		state = state*6364136223846793005 + 1442695040888963407
		return (float64(state>>11) + 0.5) / (1 << 53)
	}
	normal := func() float64 {
		return math.Sqrt(-2*math.Log(unif())) * math.Cos(2*math.Pi*unif())
	}
	const trials, n = 20000, 5
	covered := 0
	xs := make([]float64, n)
	for range trials {
		for i := range xs {
			xs[i] = 10 + 3*normal()
		}
		s := MeanCI(xs, 0.95)
		if math.Abs(s.Mean-10) <= s.HalfWidth {
			covered++
		}
	}
	// Binomial sd = sqrt(0.95·0.05/20000) ≈ 0.0015; allow 4 sd.
	if f := float64(covered) / trials; math.Abs(f-0.95) > 0.006 {
		t.Errorf("coverage %.4f, want 0.95", f)
	}
}

func TestJain(t *testing.T) {
	cases := []struct {
		name string
		xs   []float64
		want float64
	}{
		{"empty", nil, math.NaN()},
		{"equal", []float64{3, 3, 3, 3}, 1},
		{"one non-zero of 4", []float64{0, 5, 0, 0}, 0.25},
		{"all zero", []float64{0, 0}, 1},
		// (1+2+3)² / (3·(1+4+9)) = 36/42 = 6/7.
		{"1 2 3", []float64{1, 2, 3}, 6.0 / 7},
		// Scaling does not change the index, even near overflow.
		{"huge", []float64{1e300, 2e300, 3e300}, 6.0 / 7},
		{"tiny", []float64{1e-300, 2e-300, 3e-300}, 6.0 / 7},
		{"inf", []float64{1, math.Inf(1)}, math.NaN()},
		{"nan", []float64{1, math.NaN()}, math.NaN()},
	}
	for _, c := range cases {
		got := Jain(c.xs)
		if !(math.Abs(got-c.want) < 1e-15 || math.IsNaN(got) && math.IsNaN(c.want)) {
			t.Errorf("%s: Jain = %v, want %v", c.name, got, c.want)
		}
	}
}
