package stats

import (
	"math"
	"testing"
)

func eqTol(got, want, tol float64) bool {
	if math.IsNaN(want) {
		return math.IsNaN(got)
	}
	if math.IsInf(want, 0) {
		return got == want
	}
	return math.Abs(got-want) <= tol*math.Max(1, math.Abs(want))
}

func TestErlang(t *testing.T) {
	nan := math.NaN()
	cases := []struct {
		k    int
		a    float64
		b, c float64
	}{
		// B(1,1) = a/(1+a) = 1/2. C(1,a) = a (M/M/1: P(wait) = ρ).
		{1, 1, 0.5, 1},
		{1, 0.9, 0.9 / 1.9, 0.9},
		// B(2,1) = (a²/2)/(1+a+a²/2) = 0.5/2.5 = 0.2;
		// C(2,1) = 2·0.2/(2 − 1·0.8) = 0.4/1.2 = 1/3.
		{2, 1, 0.2, 1.0 / 3},
		// B(3,2) = (8/6)/(1+2+2+8/6) = (4/3)/(19/3) = 4/19;
		// C(3,2) = 3·(4/19)/(3 − 2·15/19) = (12/19)/(27/19) = 4/9.
		{3, 2, 4.0 / 19, 4.0 / 9},
		// k = 0: nothing to serve, everything is blocked.
		{0, 1, 1, nan},
		// a = 0: no load.
		{4, 0, 0, 0},
		// a >= k: unstable, every arrival waits.
		{2, 2, 0.4, 1},
		{2, 5, 12.5 / (1 + 5 + 12.5), 1},
		{-1, 1, nan, nan},
		{2, -1, nan, nan},
		{2, nan, nan, nan},
	}
	for _, c := range cases {
		if got := ErlangB(c.k, c.a); !eqTol(got, c.b, 1e-15) {
			t.Errorf("ErlangB(%d, %v) = %v, want %v", c.k, c.a, got, c.b)
		}
		if got := ErlangC(c.k, c.a); !eqTol(got, c.c, 1e-15) {
			t.Errorf("ErlangC(%d, %v) = %v, want %v", c.k, c.a, got, c.c)
		}
	}
}

// TestErlangLarge: the recursion has no factorials or powers, so k = 10⁴
// servers is no problem. References computed with the same recursion in
// 30-digit arithmetic (mpmath). The Halfin–Whitt case a = k − √k tends to
// [1 + Φ(1)/φ(1)]⁻¹ ≈ 0.2234 as k grows (0.2169 at k = 100).
func TestErlangLarge(t *testing.T) {
	cases := []struct {
		k    int
		a    float64
		want float64
	}{
		{10000, 9000, 2.0916197944192896142715940799e-25},
		{10000, 9900, 0.222776928864148240969564660124},
		{100, 90, 0.216940480906366379266841048446},
	}
	for _, c := range cases {
		if got := ErlangC(c.k, c.a); math.Abs(got-c.want) > 1e-13*c.want {
			t.Errorf("ErlangC(%d, %v) = %.17g, want %.17g", c.k, c.a, got, c.want)
		}
	}
	phi := math.Exp(-0.5) / math.Sqrt(2*math.Pi)
	Phi := 0.5 * math.Erfc(-1/math.Sqrt2)
	if limit := 1 / (1 + Phi/phi); math.Abs(limit-0.2234) > 1e-4 {
		t.Errorf("Halfin–Whitt limit %v", limit)
	}
}

func TestMMkMeanResponse(t *testing.T) {
	cases := []struct {
		k          int
		lambda, mu float64
		want       float64
	}{
		// M/M/1: E[T] = 1/(μ−λ) = 1/0.1 = 10.
		{1, 0.9, 1, 10},
		{1, 0.5, 2, 1 / 1.5},
		// M/M/2, λ=1, μ=1: C = 1/3, E[T] = (1/3)/(2−1) + 1 = 4/3.
		{2, 1, 1, 4.0 / 3},
		// M/M/3, λ=2, μ=1: C = 4/9, E[T] = (4/9)/1 + 1 = 13/9.
		{3, 2, 1, 13.0 / 9},
		// Same system with time in other units (μ=4, λ=8): E[T] / 4.
		{3, 8, 4, 13.0 / 36},
		{4, 0, 1, 1},
		{2, 2, 1, math.Inf(1)},
		{2, 3, 1, math.Inf(1)},
		{0, 1, 1, math.NaN()},
		{2, -1, 1, math.NaN()},
		{2, 1, 0, math.NaN()},
	}
	for _, c := range cases {
		if got := MMkMeanResponse(c.k, c.lambda, c.mu); !eqTol(got, c.want, 1e-14) {
			t.Errorf("MMkMeanResponse(%d, %v, %v) = %v, want %v", c.k, c.lambda, c.mu, got, c.want)
		}
	}
}

func TestMG1MeanResponse(t *testing.T) {
	cases := []struct {
		lambda, mean, scv float64
		want              float64
	}{
		// M/M/1 (scv 1): E[T] = 1 + 0.9·2/(2·0.1) = 1 + 9 = 10 = 1/(μ−λ).
		{0.9, 1, 1, 10},
		// M/D/1, ρ = 0.5: E[T] = 1 + 0.5·1/(2·0.5) = 1.5.
		{0.5, 1, 0, 1.5},
		// H2 with scv 9, ρ = 0.5: E[T] = 1 + 0.5·10/(2·0.5) = 6.
		{0.5, 1, 9, 6},
		// Mean 2, λ = 0.25 (ρ = 0.5), scv 1: E[T] = 2 + 0.25·8/1 = 4 = 1/(μ−λ), μ = 0.5.
		{0.25, 2, 1, 4},
		{0, 3, 1, 3},
		{1, 1, 0, math.Inf(1)},
		{2, 1, 0, math.Inf(1)},
		{-1, 1, 1, math.NaN()},
		{0.5, 1, -0.5, math.NaN()},
		{0.5, math.NaN(), 1, math.NaN()},
	}
	for _, c := range cases {
		if got := MG1MeanResponse(c.lambda, c.mean, c.scv); !eqTol(got, c.want, 1e-15) {
			t.Errorf("MG1MeanResponse(%v, %v, %v) = %v, want %v", c.lambda, c.mean, c.scv, got, c.want)
		}
	}
	// Consistency: exponential service makes M/G/1 an M/M/1.
	for _, rho := range []float64{0.1, 0.5, 0.95} {
		a, b := MG1MeanResponse(rho, 1, 1), MMkMeanResponse(1, rho, 1)
		if !eqTol(a, b, 1e-14) {
			t.Errorf("ρ=%v: M/G/1 %v vs M/M/1 %v", rho, a, b)
		}
	}
}
