package serverfilling

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/msjfarm/msjfarm/model/dist"
)

// relErr is |got − want| relative to max(|want|, floor).
func relErr(got, want, floor float64) float64 {
	return math.Abs(got-want) / math.Max(math.Abs(want), floor)
}

// TestRankClosedForms checks the closed-form ranks against values derived by
// hand from G(t) = inf_{u>t} ∫_t^u F̄ / (F(u) − F(t)).
func TestRankClosedForms(t *testing.T) {
	h2 := dist.Must(dist.NewHyperExp(1, 10))
	for _, tc := range []struct {
		name string
		d    dist.Dist
		age  float64
		want float64
	}{
		// Exponential: memoryless, every u gives the mean.
		{"exp age 0", dist.Must(dist.NewExponential(2)), 0, 2},
		{"exp age 5", dist.Must(dist.NewExponential(2)), 5, 2},
		// Deterministic d = 3: only u ≥ 3 completes the job: (3 − t)/1.
		{"det age 0", dist.Must(dist.NewDeterministic(3)), 0, 3},
		{"det age 1.25", dist.Must(dist.NewDeterministic(3)), 1.25, 1.75},
		// Uniform[1, 3], IHR: u = ∞, mean residual life.
		// t = 0: E[D] = 2. t = 1.5: (3 − 1.5)/2 = 0.75.
		{"uniform age 0", dist.Must(dist.NewUniform(1, 3)), 0, 2},
		{"uniform age 0.5", dist.Must(dist.NewUniform(1, 3)), 0.5, 1.5},
		{"uniform age 1.5", dist.Must(dist.NewUniform(1, 3)), 1.5, 0.75},
		// H2 with mean 1, C² = 10 (balanced means): p1 = (1+ρ)/2, p2 = (1−ρ)/2,
		// ρ = sqrt(9/11), μ_i = 2 p_i. DHR, so G(t) = 1/h(t):
		// G(0) = 1/(p1μ1 + p2μ2) = 1/(2(p1² + p2²)) = 1/(1 + ρ²) = 11/20.
		{"h2 age 0", h2, 0, 0.55},
		// t → ∞: 1/μ2 = 1/(1 − ρ) = 10.474937...
		{"h2 age 400", h2, 400, 1 / (1 - math.Sqrt(9.0/11))},
		// Weibull shape 1/2, scale 1: h(t) = 1/(2√t), G(t) = 2√t; G(4) = 4.
		{"weibull age 4", dist.Must(dist.NewWeibull(0.5, 1)), 4, 4},
		{"weibull shape 1", dist.Must(dist.NewWeibull(1, 3)), 7, 3},
	} {
		f, err := newRankFn(tc.d)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if got := f.at(tc.age); relErr(got, tc.want, 1e-300) > 1e-12 {
			t.Errorf("%s: rank(%v) = %.15g, want %.15g", tc.name, tc.age, got, tc.want)
		}
	}
	// H2 at t = 1, by hand: with q = e^{−(μ1−μ2)}, G = (p1 q + p2)/(p1 μ1 q + p2 μ2).
	rho := math.Sqrt(9.0 / 11)
	p1, p2 := (1+rho)/2, (1-rho)/2
	q := math.Exp(-(2*p1 - 2*p2))
	want := (p1*q + p2) / (p1*2*p1*q + p2*2*p2)
	f, _ := newRankFn(h2)
	if got := f.at(1); relErr(got, want, 0) > 1e-12 {
		t.Errorf("h2 rank(1) = %v, want %v", got, want)
	}
}

// TestRankTableAgainstClosedForms builds numerical tables for distributions
// whose rank has a closed form, from their survival functions alone, and
// bounds the table's error (the accuracy claimed in rankTable's comment).
// Ages run over quantiles up to survival 1e-8.
func TestRankTableAgainstClosedForms(t *testing.T) {
	type tc struct {
		d      dist.Dist
		sf     func(float64) float64
		maxErr float64
	}
	h2 := func(mean, scv float64) tc {
		d := dist.Must(dist.NewHyperExp(mean, scv))
		p1, r1, r2 := d.Phases()
		return tc{d, func(x float64) float64 { return p1*math.Exp(-r1*x) + (1-p1)*math.Exp(-r2*x) }, 1e-4}
	}
	for _, c := range []tc{
		h2(1, 10), h2(1, 100), h2(3, 2),
		{dist.Must(dist.NewExponential(2)), func(x float64) float64 { return math.Exp(-x / 2) }, 1e-6},
		{dist.Must(dist.NewWeibull(0.5, 1)), func(x float64) float64 { return math.Exp(-math.Sqrt(x)) }, 1e-4},
		{dist.Must(dist.NewUniform(1, 3)), func(x float64) float64 { return math.Min(1, math.Max(0, (3-x)/2)) }, 1e-4},
	} {
		exact, _ := newRankFn(c.d)
		lo, hi := 0.0, math.Inf(1)
		if _, ok := c.d.(*dist.Uniform); ok {
			hi = 3
		}
		tab, err := continuousTable(c.sf, c.d.Mean(), lo, hi)
		if err != nil {
			t.Fatal(err)
		}
		worst, at := 0.0, 0.0
		for i := 0; i <= 4000; i++ {
			// survival from 1 down to 1e-8, log-uniformly
			a := upperQuantile(c.sf, math.Pow(10, -8*float64(i)/4000), 0, 1e9)
			// floor: 1e-3 of the mean, for ranks that go to 0 (uniform at hi)
			if e := relErr(tab.at(a), exact.at(a), 1e-3*c.d.Mean()); e > worst {
				worst, at = e, a
			}
		}
		t.Logf("%s: %d grid points, worst relative error %.2g at age %.4g", c.d, len(tab.xs), worst, at)
		if worst > c.maxErr {
			t.Errorf("%s: table error %.3g > %.3g at age %v", c.d, worst, c.maxErr, at)
		}
	}
}

// TestRankEmpirical: an empirical distribution's rank is exact at its atoms
// (the sample values are recovered from its CDF). By hand, with
// G(t) = min over atoms u > t of ∫_t^u F̄ / P(t < D ≤ u):
//   - samples {1, 10}: G(0) = min(1/0.5, (1 + 0.5·9)/1) = 2; G(0.5) =
//     min(0.5/0.5, (0.5 + 4.5)/1) = 1; past 1 only 10 is left: G(1.5) = 8.5;
//   - samples {1, 1, 1, 10}: G(0) = min(1/0.75, (1 + 0.25·9)/1) = 4/3;
//   - samples {1, 3}: G(0) = min(1/0.5, (1 + 0.5·2)/1) = 2; G(2) = 1;
//   - samples {2, 2.5, 9}: G(0) = min(2/(1/3), (2 + 0.5·2/3)/(2/3),
//     (2 + 0.5·2/3 + 6.5/3)/1) = min(6, 3.5, 4.5) = 3.5.
func TestRankEmpirical(t *testing.T) {
	for _, tc := range []struct {
		samples   []float64
		age, want float64
	}{
		{[]float64{1, 10}, 0, 2},
		{[]float64{10, 1}, 0.5, 1},
		{[]float64{1, 10}, 1.5, 8.5},
		{[]float64{1, 1, 1, 10}, 0, 4.0 / 3},
		{[]float64{1, 3}, 0, 2},
		{[]float64{1, 3}, 2, 1},
		{[]float64{2, 2.5, 9}, 0, 3.5},
	} {
		f, err := newRankFn(dist.Must(dist.NewEmpirical(tc.samples)))
		if err != nil {
			t.Fatal(err)
		}
		if got := f.at(tc.age); relErr(got, tc.want, 0) > 1e-12 {
			t.Errorf("empirical %v: rank(%v) = %.15g, want %v", tc.samples, tc.age, got, tc.want)
		}
	}
}

// bruteRank is an independent reference: the minimum of the ratio over a
// dense log-spaced grid of u (n points from t to hi) plus the u → t⁺ limit
// F̄(t)/f(t), with ∫_t^u F̄ from the closed form intSF.
func bruteRank(t, hi float64, n int, sf, pdf, intSF func(float64) float64) float64 {
	best := math.Inf(1)
	if f := pdf(t); f > 0 {
		best = sf(t) / f
	}
	st, it := sf(t), intSF(t)
	base := math.Max(t, 1e-9)
	for i := 1; i <= n; i++ {
		u := base * math.Pow(hi/base, float64(i)/float64(n))
		if d := st - sf(u); d > 0 {
			best = math.Min(best, (intSF(u)-it)/d)
		}
	}
	return best
}

// TestRankBoundedPareto compares the table with bruteRank, using the exact
// ∫F̄ of the bounded Pareto on [L, H] (α ≠ 1):
// F̄(x) = ((L/x)^α − r)/(1 − r), r = (L/H)^α, and
// ∫_0^x F̄ = min(x, L) + [L^α y^{1−α}/(1−α) − r·y]_L^x / (1 − r) for x > L.
func TestRankBoundedPareto(t *testing.T) {
	for _, par := range [][3]float64{{1.5, 1, 1000}, {0.8, 0.5, 100}, {2.5, 2, 50}} {
		alpha, L, H := par[0], par[1], par[2]
		d := dist.Must(dist.NewBoundedPareto(alpha, L, H))
		r := math.Pow(L/H, alpha)
		sf := func(x float64) float64 {
			switch {
			case x <= L:
				return 1
			case x >= H:
				return 0
			}
			return (math.Pow(L/x, alpha) - r) / (1 - r)
		}
		pdf := func(x float64) float64 {
			if x < L || x > H {
				return 0
			}
			return alpha * math.Pow(L, alpha) * math.Pow(x, -alpha-1) / (1 - r)
		}
		prim := func(y float64) float64 { return math.Pow(L, alpha)*math.Pow(y, 1-alpha)/(1-alpha) - r*y }
		intSF := func(x float64) float64 {
			if x <= L {
				return x
			}
			x = math.Min(x, H)
			return L + (prim(x)-prim(L))/(1-r)
		}
		f, err := newRankFn(d)
		if err != nil {
			t.Fatal(err)
		}
		worst, at := 0.0, 0.0
		for i := 0; i < 50; i++ {
			// ages from 0 to just below H: before L, then log-spaced over [L, H)
			age := L * float64(i) / 10
			if i >= 10 {
				age = L * math.Pow(H/L*0.999, float64(i-10)/40)
			}
			want := bruteRank(age, H, 20000, sf, pdf, intSF)
			if e := relErr(f.at(age), want, 1e-3*d.Mean()); e > worst {
				worst, at = e, age
			}
		}
		t.Logf("%s: worst relative error %.2g at age %.4g", d, worst, at)
		if worst > 1e-4 {
			t.Errorf("%s: table error %.3g at age %v", d, worst, at)
		}
	}
}

// TestRankLognormal compares the table with bruteRank, ∫F̄ by a fine
// Simpson rule on the closed-form survival function.
func TestRankLognormal(t *testing.T) {
	for _, par := range [][2]float64{{1, 10}, {1, 1}, {2, 0.25}} {
		d := dist.Must(dist.NewLognormal(par[0], par[1]))
		mu, sigma := d.Params()
		sf := func(x float64) float64 {
			if x <= 0 {
				return 1
			}
			return 0.5 * math.Erfc((math.Log(x)-mu)/(sigma*math.Sqrt2))
		}
		pdf := func(x float64) float64 {
			if x <= 0 {
				return 0
			}
			z := (math.Log(x) - mu) / sigma
			return math.Exp(-z*z/2) / (x * sigma * math.Sqrt(2*math.Pi))
		}
		// ∫_0^x F̄ tabulated on a fine log grid, Simpson per cell.
		hi := math.Exp(mu + 7*sigma)
		const n = 50000
		xs := make([]float64, n+1)
		cum := make([]float64, n+1)
		x0 := math.Exp(mu - 9*sigma)
		for i := 1; i <= n; i++ {
			xs[i] = x0 * math.Pow(hi/x0, float64(i-1)/float64(n-1))
			a, b := xs[i-1], xs[i]
			cum[i] = cum[i-1] + (b-a)/6*(sf(a)+4*sf((a+b)/2)+sf(b))
		}
		intSF := func(x float64) float64 {
			i := int(math.Log(x/x0)/math.Log(hi/x0)*float64(n-1)) + 1
			i = max(1, min(i, n))
			for i > 1 && xs[i] > x {
				i--
			}
			for i < n && xs[i+1] <= x {
				i++
			}
			a := xs[i]
			// partial cell by Simpson
			return cum[i] + (x-a)/6*(sf(a)+4*sf((a+x)/2)+sf(x))
		}
		f, err := newRankFn(d)
		if err != nil {
			t.Fatal(err)
		}
		worst, at := 0.0, 0.0
		for i := 0; i <= 30; i++ {
			// ages over survival 1 .. 1e-6
			age := upperQuantile(sf, math.Pow(10, -6*float64(i)/30), 0, hi)
			want := bruteRank(age, hi, 20000, sf, pdf, intSF)
			if e := relErr(f.at(age), want, 1e-3*d.Mean()); e > worst {
				worst, at = e, age
			}
		}
		t.Logf("%s: worst relative error %.2g at age %.4g", d, worst, at)
		if worst > 1e-4 {
			t.Errorf("%s: table error %.3g at age %v", d, worst, at)
		}
	}
}

// TestH2Plateau checks h2Plateau's claim: from platAt on, the H2 formula
// gives 1/μ2 exactly, so at's shortcut returns what the formula would; and
// platAt is at most the factor-4 margin (ln 4/(μ1 − μ2) of age) past the
// first age where the formula reaches 1/μ2 (found here by bisection, the
// computed rank being monotone in the age). Ages: the first 2000 floats from
// platAt, a geometric grid up to 10⁴ × platAt (beyond e's underflow), and
// 10⁵ uniform ones in [platAt, 50 platAt] from a fixed seed.
func TestH2Plateau(t *testing.T) {
	rnd := rand.New(rand.NewPCG(1, 2))
	for _, mean := range []float64{1e-3, 1, 10, 1845.19} {
		for _, scv := range []float64{1.01, 2.3, 10, 38, 1000} {
			f, err := newRankFn(dist.Must(dist.NewHyperExp(mean, scv)))
			if err != nil {
				t.Fatal(err)
			}
			formula := func(age float64) float64 { return f.h2(f.p1 * math.Exp(-(f.mu1-f.mu2)*age)) }
			if f.plat != 1/f.mu2 || math.IsInf(f.platAt, 1) {
				t.Fatalf("mean %g scv %g: plateau %v from %v, want 1/μ2 = %v from a finite age", mean, scv, f.plat, f.platAt, 1/f.mu2)
			}
			check := func(age float64) {
				if got := formula(age); got != f.plat {
					t.Fatalf("mean %g scv %g: rank(%v) = %v by the formula, but platAt = %v gives %v", mean, scv, age, got, f.platAt, f.plat)
				}
				if got := f.at(age); got != f.plat {
					t.Fatalf("mean %g scv %g: at(%v) = %v, want %v", mean, scv, age, got, f.plat)
				}
			}
			age := f.platAt
			for range 2000 {
				check(age)
				age = math.Nextafter(age, math.Inf(1))
			}
			for age := f.platAt; age < 1e4*f.platAt; age *= 1.001 {
				check(age)
			}
			for range 100000 {
				check(f.platAt * (1 + 49*rnd.Float64()))
			}
			lo, hi := 0.0, f.platAt // formula below plat at lo, at plat at hi
			for range 200 {
				mid := (lo + hi) / 2
				if formula(mid) == f.plat {
					hi = mid
				} else {
					lo = mid
				}
			}
			if margin := math.Log(4) / (f.mu1 - f.mu2); f.platAt-hi > margin*(1+1e-6) {
				t.Errorf("mean %g scv %g: platAt %v is %v past the first plateau age %v, more than ln 4/(μ1−μ2) = %v", mean, scv, f.platAt, f.platAt-hi, hi, margin)
			}
		}
	}
}
