package dist

import (
	"errors"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/msjfarm/msjfarm/sim/rng"
)

const testSeed = 20240611

func fp(v float64) *float64 { return &v }

// factorial for small j.
func fact(j int) float64 {
	f := 1.0
	for i := 2; i <= j; i++ {
		f *= float64(i)
	}
	return f
}

// Independent closed forms of the raw moments E[X^j], written directly from
// the textbook densities (with math.Pow, unlike the package), so that Mean and
// SCV are checked against a second derivation. +Inf when the moment diverges.

func expRaw(m float64) func(int) float64 {
	return func(j int) float64 { return fact(j) * math.Pow(m, float64(j)) }
}

func uniformRaw(a, b float64) func(int) float64 {
	return func(j int) float64 {
		k := float64(j + 1)
		return (math.Pow(b, k) - math.Pow(a, k)) / (k * (b - a))
	}
}

// Lognormal: E[X^j] = exp(jμ + j²σ²/2).
func lognormalRaw(m, c float64) func(int) float64 {
	s2 := math.Log(1 + c)
	mu := math.Log(m) - s2/2
	return func(j int) float64 { J := float64(j); return math.Exp(J*mu + J*J*s2/2) }
}

// H2: E[X^j] = j! Σ p_i/μ_i^j.
func h2Raw(m, c float64) func(int) float64 {
	p1 := (1 + math.Sqrt((c-1)/(c+1))) / 2
	p2 := 1 - p1
	mu1, mu2 := 2*p1/m, 2*p2/m
	return func(j int) float64 {
		J := float64(j)
		return fact(j) * (p1/math.Pow(mu1, J) + p2/math.Pow(mu2, J))
	}
}

// Bounded Pareto: E[X^j] = α L^α ∫_L^H x^{j−α−1} dx / (1 − (L/H)^α).
func bparetoRaw(a, L, H float64) func(int) float64 {
	q := 1 - math.Pow(L/H, a)
	return func(j int) float64 {
		b := float64(j) - a
		if b == 0 {
			return a * math.Pow(L, a) * math.Log(H/L) / q
		}
		return a * math.Pow(L, a) * (math.Pow(H, b) - math.Pow(L, b)) / (b * q)
	}
}

// Fréchet: E[X^j] = s^j Γ(1 − j/α) for j < α.
func frechetRaw(a, s float64) func(int) float64 {
	return func(j int) float64 {
		if float64(j) >= a {
			return math.Inf(1)
		}
		return math.Pow(s, float64(j)) * math.Gamma(1-float64(j)/a)
	}
}

// Weibull: E[X^j] = λ^j Γ(1 + j/k).
func weibullRaw(k, l float64) func(int) float64 {
	return func(j int) float64 { return math.Pow(l, float64(j)) * math.Gamma(1+float64(j)/k) }
}

func listRaw(xs []float64) func(int) float64 {
	return func(j int) float64 {
		var s float64
		for _, x := range xs {
			s += math.Pow(x, float64(j))
		}
		return s / float64(len(xs))
	}
}

type distCase struct {
	name string
	d    Dist
	raw  func(j int) float64
	// cont: continuous, so the KS test applies.
	cont bool
	// second: also test the sample mean of X² (needs E[X⁴] < ∞).
	second bool
}

var empiricalValues = []float64{0, 1, 2, 7, 7, 10, 0.5}

func distCases() []distCase {
	return []distCase{
		{"exp", Must(NewExponential(2)), expRaw(2), true, true},
		{"det", Must(NewDeterministic(1.5)), func(j int) float64 { return math.Pow(1.5, float64(j)) }, false, true},
		{"uniform", Must(NewUniform(1, 3)), uniformRaw(1, 3), true, true},
		{"uniform0", Must(NewUniform(0, 0.5)), uniformRaw(0, 0.5), true, true},
		{"lognormal", Must(NewLognormal(1, 0.5)), lognormalRaw(1, 0.5), true, true},
		// C² = 3: E[X⁴] = 2¹² is finite but X² is too skewed for a useful
		// CLT bound on its sample mean with this n, so only the mean is tested.
		{"lognormal3", Must(NewLognormal(2, 3)), lognormalRaw(2, 3), true, false},
		{"hyperexp", Must(NewHyperExp(1, 10)), h2Raw(1, 10), true, true},
		{"hyperexp1", Must(NewHyperExp(3, 1)), expRaw(3), true, true},
		{"bpareto", Must(NewBoundedPareto(3, 1, 100)), bparetoRaw(3, 1, 100), true, true},
		{"bpareto1.5", Must(NewBoundedPareto(1.5, 1, 1e4)), bparetoRaw(1.5, 1, 1e4), true, false},
		{"bpareto1", Must(NewBoundedPareto(1, 0.5, 50)), bparetoRaw(1, 0.5, 50), true, true},
		{"bpareto0.5", Must(NewBoundedPareto(0.5, 1, 100)), bparetoRaw(0.5, 1, 100), true, true},
		{"bpareto2", Must(NewBoundedPareto(2, 1, 10)), bparetoRaw(2, 1, 10), true, true},
		{"frechet5", Must(NewFrechet(5, 2)), frechetRaw(5, 2), true, true},
		// α = 3: variance finite (mean tested), E[X⁴] infinite.
		{"frechet3", Must(NewFrechet(3, 1)), frechetRaw(3, 1), true, false},
		{"weibull0.5", Must(NewWeibull(0.5, 1)), weibullRaw(0.5, 1), true, true},
		{"weibull1", Must(NewWeibull(1, 2)), expRaw(2), true, true},
		{"weibull2", Must(NewWeibull(2, 1)), weibullRaw(2, 1), true, true},
		{"weibull1.7", Must(NewWeibull(1.7, 3)), weibullRaw(1.7, 3), true, true},
		{"empirical", Must(NewEmpirical(empiricalValues)), listRaw(empiricalValues), false, true},
	}
}

func relClose(got, want, tol float64) bool {
	if math.IsInf(want, 0) {
		return got == want
	}
	return math.Abs(got-want) <= tol*math.Max(math.Abs(want), 1e-300)
}

// TestMeanSCVClosedForm checks Mean and SCV against the independent moment
// formulas above.
func TestMeanSCVClosedForm(t *testing.T) {
	for _, c := range distCases() {
		m1, m2 := c.raw(1), c.raw(2)
		if !relClose(c.d.Mean(), m1, 1e-12) {
			t.Errorf("%s: Mean %v, closed form %v", c.d, c.d.Mean(), m1)
		}
		scv := m2/(m1*m1) - 1
		if !relClose(c.d.SCV(), scv, 1e-9) {
			t.Errorf("%s: SCV %v, closed form %v", c.d, c.d.SCV(), scv)
		}
	}
}

// TestSampleMoments compares sample means with the exact moments.
//
// For n i.i.d. variates with finite variance σ², the sample mean has standard
// deviation σ/√n and is approximately normal (CLT), so
// |mean − μ| <= 5σ/√n fails with probability ≈ 5.7e−7 per check. The same bound
// applied to Y = X² (σ_Y² = E[X⁴] − E[X²]²) tests the second moment where
// E[X⁴] < ∞. With n = 400000 and ~40 checks the whole test fails by chance
// with probability < 1e−4 — and, seeds being fixed, the outcome is
// deterministic anyway.
func TestSampleMoments(t *testing.T) {
	const n = 400000
	for i, c := range distCases() {
		s := rng.Derive(testSeed, uint64(i))
		var s1, s2 float64
		for range n {
			x := c.d.Sample(s)
			if !(x >= 0) || math.IsInf(x, 0) {
				t.Fatalf("%s: sample %v", c.d, x)
			}
			s1 += x
			s2 += x * x
		}
		m1, m2, m4 := c.raw(1), c.raw(2), c.raw(4)
		mean := s1 / n
		tol := 5 * math.Sqrt((m2-m1*m1)/n)
		if math.Abs(mean-m1) > tol+1e-12*m1 { // the 1e-12 term only matters for det
			t.Errorf("%s: sample mean %v, want %v ± %v", c.d, mean, m1, tol)
		}
		if c.second {
			sq := s2 / n
			tol2 := 5 * math.Sqrt((m4-m2*m2)/n)
			if math.Abs(sq-m2) > tol2+1e-12*m2 {
				t.Errorf("%s: sample E[X²] %v, want %v ± %v", c.d, sq, m2, tol2)
			}
		}
	}
}

// ksStat returns the Kolmogorov–Smirnov distance sup|F_n − F| of xs (sorted
// in place) from cdf.
func ksStat(xs []float64, cdf func(float64) float64) float64 {
	slices.Sort(xs)
	n := float64(len(xs))
	var d float64
	for i, x := range xs {
		f := cdf(x)
		d = math.Max(d, math.Max(float64(i+1)/n-f, f-float64(i)/n))
	}
	return d
}

// TestKS draws n variates of every continuous distribution and compares their
// empirical CDF with the distribution's CDF. For a continuous F the limiting
// law of √n·D_n is Kolmogorov's, whose 99% quantile is 1.628; so
// D_n > 1.63/√n rejects at (about) the 1% level. It also exercises the CDFs.
func TestKS(t *testing.T) {
	const n = 20000
	crit := 1.63 / math.Sqrt(n)
	xs := make([]float64, n)
	cases := append(distCases(),
		distCase{name: "frechet2", d: Must(NewFrechet(2, 1)), cont: true},
		distCase{name: "frechet1.2", d: Must(NewFrechetMean(1.2, 1)), cont: true},
		distCase{name: "bpareto-mean", d: Must(NewBoundedParetoMean(1.1, 3, 1e5)), cont: true},
		distCase{name: "weibull0.3", d: Must(NewWeibullMean(0.3, 1)), cont: true},
	)
	for i, c := range cases {
		if !c.cont {
			continue
		}
		cdf := c.d.(CDFer).CDF
		s := rng.Derive(testSeed+1, uint64(i))
		for j := range xs {
			xs[j] = c.d.Sample(s)
		}
		if d := ksStat(xs, cdf); d > crit {
			t.Errorf("%s: KS distance %.5f > %.5f", c.d, d, crit)
		}
	}
	// Power check, so that a broken ksStat cannot pass silently: exp(1)
	// samples against the CDF of exp(1.1). The sup distance between the two
	// CDFs is max_x (e^{−x/1.1} − e^{−x}), attained where e^{−x/1.1}/1.1 = e^{−x},
	// i.e. x = ln 1.1/(1 − 1/1.1) ≈ 1.048: 0.3855 − 0.3505 ≈ 0.035, three times
	// the critical value 1.63/√20000 ≈ 0.0115.
	e1, e11 := Must(NewExponential(1)), Must(NewExponential(1.1))
	s := rng.Derive(testSeed+2, 0)
	for j := range xs {
		xs[j] = e1.Sample(s)
	}
	if d := ksStat(xs, e11.CDF); d <= crit {
		t.Errorf("KS test failed to tell exp(1) from exp(1.1): D = %v", d)
	}
}

func TestCDFShape(t *testing.T) {
	for _, c := range distCases() {
		f := c.d.(CDFer).CDF
		if f(-1) != 0 || f(math.Inf(-1)) != 0 {
			t.Errorf("%s: CDF below 0 is not 0", c.d)
		}
		if f(math.Inf(1)) != 1 {
			t.Errorf("%s: CDF(+Inf) = %v", c.d, f(math.Inf(1)))
		}
		prev := 0.0
		for x := 0.0; x < 50; x += 0.01 {
			v := f(x)
			if v < prev || v > 1 {
				t.Fatalf("%s: CDF not monotone in [0,1] at %v: %v after %v", c.d, x, v, prev)
			}
			prev = v
		}
	}
	// Step functions.
	det := Must(NewDeterministic(2))
	if det.CDF(1.999) != 0 || det.CDF(2) != 1 {
		t.Error("det CDF is not the unit step at the mean")
	}
	emp := Must(NewEmpirical([]float64{3, 1, 2, 2}))
	for x, want := range map[float64]float64{0.5: 0, 1: 0.25, 1.5: 0.25, 2: 0.75, 2.9: 0.75, 3: 1, 9: 1} {
		if got := emp.CDF(x); got != want {
			t.Errorf("empirical CDF(%v) = %v, want %v", x, got, want)
		}
	}
}

// TestHyperExpParameters: mean 1, C² = 10 gives
// p1 = (1 + √(9/11))/2 = (1 + 0.9045340)/2 = 0.9522670,
// μ1 = 2p1 = 1.9045340, μ2 = 2(1 − p1) = 0.0954660.
func TestHyperExpParameters(t *testing.T) {
	d := Must(NewHyperExp(1, 10))
	p1, r1, r2 := d.Phases()
	for _, c := range []struct {
		name      string
		got, want float64
	}{{"p1", p1, 0.9522670}, {"mu1", r1, 1.9045340}, {"mu2", r2, 0.0954660}} {
		if math.Abs(c.got-c.want) > 1e-7 {
			t.Errorf("%s = %.9f, want %.7f", c.name, c.got, c.want)
		}
	}
	// Balanced means: p1/μ1 = p2/μ2 = m/2.
	if math.Abs(p1/r1-0.5) > 1e-15 || math.Abs((1-p1)/r2-0.5) > 1e-12 {
		t.Errorf("means not balanced: %v, %v", p1/r1, (1-p1)/r2)
	}
	// C² = 1 degenerates to exp: p1 = 1/2, both rates 1/m.
	p1, r1, r2 = Must(NewHyperExp(4, 1)).Phases()
	if p1 != 0.5 || r1 != 0.25 || r2 != 0.25 {
		t.Errorf("C²=1: p1=%v μ1=%v μ2=%v, want 1/2, 1/4, 1/4", p1, r1, r2)
	}
	// Large C²: p2 ≈ 1/(2(c+1)) without cancellation; check the SCV identity
	// 1/(2 p1 p2) − 1 = c through the rates.
	c := 1e9
	p1, _, r2 = Must(NewHyperExp(1, c)).Phases()
	p2 := r2 / 2 // μ2 = 2p2/m with m = 1
	if got := 1/(2*p1*p2) - 1; !relClose(got, c, 1e-12) {
		t.Errorf("C²=1e9: 1/(2p1p2) − 1 = %v", got)
	}
}

// TestLognormalParameters: mean 1, C² = 3 gives σ² = ln 4, σ = 1.1774100225,
// μ = ln 1 − ln 4/2 = −ln 2 = −0.6931471806.
func TestLognormalParameters(t *testing.T) {
	mu, sigma := Must(NewLognormal(1, 3)).Params()
	if math.Abs(sigma-1.1774100225154747) > 1e-15 || math.Abs(mu+math.Ln2) > 1e-15 {
		t.Errorf("μ = %v, σ = %v", mu, sigma)
	}
	// Median e^μ = 1/2 for this distribution.
	if got := Must(NewLognormal(1, 3)).CDF(0.5); math.Abs(got-0.5) > 1e-15 {
		t.Errorf("CDF(median) = %v", got)
	}
}

// TestBoundedParetoMean checks the mean formula on hand-computed cases and
// that NewBoundedParetoMean solves them back.
//
//	α=1.5, L=1, H=1e4: α/(α−1)·L·(1 − (L/H)^{α−1})/(1 − (L/H)^α)
//	                   = 3·(1 − 10⁻²)/(1 − 10⁻⁶) = 2.97/0.999999 = 2.970002970002970
//	α=1/2, L=1, H=100: α L^α (H^{1−α} − L^{1−α})/((1−α)(1 − (L/H)^α))
//	                   = ½·(10 − 1)/(½·(1 − 0.1)) = 10
//	α=1,   L=1, H=100: L ln(H/L)/(1 − L/H) = ln 100/0.99 = 4.651687209984893
//	α=2,   L=1, H=2:   2·(1 − ½)/(1 − ¼) = 4/3
func TestBoundedParetoMean(t *testing.T) {
	for _, c := range []struct{ alpha, low, high, mean float64 }{
		{1.5, 1, 1e4, 2.97 / 0.999999},
		{0.5, 1, 100, 10},
		{1, 1, 100, math.Log(100) / 0.99},
		{2, 1, 2, 4.0 / 3},
	} {
		d := Must(NewBoundedPareto(c.alpha, c.low, c.high))
		if !relClose(d.Mean(), c.mean, 1e-14) {
			t.Errorf("bpareto(%v, %v, %v): mean %v, want %v", c.alpha, c.low, c.high, d.Mean(), c.mean)
		}
		b, err := NewBoundedParetoMean(c.alpha, c.mean, c.high)
		if err != nil {
			t.Fatal(err)
		}
		if _, low, _ := b.Params(); !relClose(low, c.low, 1e-13) {
			t.Errorf("bpareto(α=%v, mean=%v, H=%v): solved low %v, want %v", c.alpha, c.mean, c.high, low, c.low)
		}
		if b.Mean() != c.mean {
			t.Errorf("Mean() %v is not the requested %v", b.Mean(), c.mean)
		}
	}
	// Round trip over a grid, including α near 1 and means near both ends:
	// the solved L reproduces the mean to ~1e−13 (the formula's rounding).
	for _, alpha := range []float64{0.05, 0.3, 0.999999, 1, 1.000001, 1.1, 1.9, 2, 5, 40} {
		for _, mean := range []float64{1e-6, 0.01, 1, 500, 999, 999.999} {
			b, err := NewBoundedParetoMean(alpha, mean, 1000)
			if err != nil {
				t.Errorf("α=%v mean=%v: %v", alpha, mean, err)
				continue
			}
			_, low, high := b.Params()
			if got := bpMean(alpha, low, high); !relClose(got, mean, 1e-12) {
				t.Errorf("α=%v mean=%v: low %v gives mean %v", alpha, mean, low, got)
			}
		}
	}
	// Inputs with no solution: mean >= high.
	for _, m := range []float64{1000, 2000} {
		if _, err := NewBoundedParetoMean(1.5, m, 1000); err == nil || !strings.Contains(err.Error(), `field "mean"`) {
			t.Errorf("mean %v >= high: err %v", m, err)
		}
	}
}

// TestWeibullShapeOneIsExp: k = 1 gives F(x) = 1 − e^{−x/λ}, mean λΓ(2) = λ,
// SCV Γ(3)/Γ(2)² − 1 = 1, and the sampler reproduces the exponential's
// variates exactly (both are λ·E, E = rng.Stream.Exp).
func TestWeibullShapeOneIsExp(t *testing.T) {
	w, e := Must(NewWeibull(1, 2.5)), Must(NewExponential(2.5))
	if w.Mean() != 2.5 || math.Abs(w.SCV()-1) > 1e-15 {
		t.Errorf("weibull(1, 2.5): mean %v SCV %v", w.Mean(), w.SCV())
	}
	s1, s2 := rng.Derive(testSeed, 7), rng.Derive(testSeed, 7)
	for i := range 1000 {
		if a, b := w.Sample(s1), e.Sample(s2); a != b {
			t.Fatalf("draw %d: weibull %v, exp %v", i, a, b)
		}
	}
	for _, x := range []float64{0.1, 1, 10} {
		if math.Abs(w.CDF(x)-e.CDF(x)) > 1e-15 {
			t.Errorf("CDF(%v): %v vs %v", x, w.CDF(x), e.CDF(x))
		}
	}
	// Shape 2 (Rayleigh): mean λ√π/2; by mean, scale = 2m/√π.
	if _, scale := Must(NewWeibullMean(2, 1)).Params(); math.Abs(scale-2/math.Sqrt(math.Pi)) > 1e-15 {
		t.Errorf("weibull(2, mean 1): scale %v", scale)
	}
}

// TestFrechetClosedForm: mean s Γ(1 − 1/α):
//
//	α = 2, s = 1: Γ(1/2) = √π = 1.7724538509, SCV = +Inf (α <= 2);
//	α = 3, s = 1: Γ(2/3) = 1.3541179394;
//	α = 4, s = 1: SCV = Γ(1/2)/Γ(3/4)² − 1 = 1.7724538509/1.2254167024² − 1 = 0.1803406.
func TestFrechetClosedForm(t *testing.T) {
	if d := Must(NewFrechet(2, 1)); math.Abs(d.Mean()-math.Sqrt(math.Pi)) > 1e-15 || !math.IsInf(d.SCV(), 1) {
		t.Errorf("frechet(2,1): mean %v SCV %v", d.Mean(), d.SCV())
	}
	if d := Must(NewFrechet(3, 1)); math.Abs(d.Mean()-1.3541179394264) > 1e-12 {
		t.Errorf("frechet(3,1): mean %v", d.Mean())
	}
	if d := Must(NewFrechet(4, 1)); math.Abs(d.SCV()-0.1803406) > 1e-6 {
		t.Errorf("frechet(4,1): SCV %v", d.SCV())
	}
	// By mean: scale = m/Γ(1 − 1/α); CDF at the scale is e^{−1}.
	d := Must(NewFrechetMean(3, 2))
	if _, s := d.Params(); math.Abs(s-2/1.3541179394264) > 1e-12 || math.Abs(d.CDF(s)-1/math.E) > 1e-15 {
		t.Errorf("frechet(3, mean 2): scale %v, CDF(scale) %v", s, d.CDF(s))
	}
}

func TestEmpiricalMoments(t *testing.T) {
	// {1, 2, 3}: mean 2, population variance 2/3, SCV (2/3)/4 = 1/6.
	d := Must(NewEmpirical([]float64{3, 1, 2}))
	if d.Mean() != 2 || math.Abs(d.SCV()-1.0/6) > 1e-16 {
		t.Errorf("mean %v SCV %v", d.Mean(), d.SCV())
	}
	// The input is copied: changing it afterwards does not change d.
	in := []float64{5, 5}
	e := Must(NewEmpirical(in))
	in[0] = 100
	if e.Mean() != 5 || e.SCV() != 0 {
		t.Errorf("empirical aliases its input: mean %v", e.Mean())
	}
	// Every value is drawn, with frequencies 1/n (5σ binomial bound:
	// σ = √(n p(1−p)) with p = 1/4, n = 40000 → σ ≈ 86.6).
	f := Must(NewEmpirical([]float64{1, 2, 3, 4}))
	s := rng.Derive(testSeed, 9)
	count := map[float64]int{}
	const n = 40000
	for range n {
		count[f.Sample(s)]++
	}
	for v := 1.0; v <= 4; v++ {
		if math.Abs(float64(count[v])-n/4) > 5*math.Sqrt(n*0.25*0.75) {
			t.Errorf("value %v drawn %d times of %d", v, count[v], n)
		}
	}
}

// TestDrawsPerVariate pins the composition of each sampler (the package
// documentation's table): after k samples, the stream stands exactly where
// the documented variates would leave it (common random numbers depend on
// it).
func TestDrawsPerVariate(t *testing.T) {
	uni := func(s *rng.Stream) { s.Float64() }
	exp := func(s *rng.Stream) { s.Exp() }
	normal := func(s *rng.Stream) { s.Normal() }
	for _, c := range []struct {
		d     Dist
		draws []func(*rng.Stream)
	}{
		{Must(NewExponential(1)), []func(*rng.Stream){exp}},
		{Must(NewDeterministic(1)), nil},
		{Must(NewUniform(0, 1)), []func(*rng.Stream){uni}},
		{Must(NewLognormal(1, 2)), []func(*rng.Stream){normal}},
		{Must(NewHyperExp(1, 5)), []func(*rng.Stream){uni, exp}},
		{Must(NewHyperExp(1, 1)), []func(*rng.Stream){uni, exp}},
		{Must(NewBoundedPareto(1.3, 1, 10)), []func(*rng.Stream){uni}},
		{Must(NewBoundedPareto(1, 1, 10)), []func(*rng.Stream){uni}},
		{Must(NewFrechet(2.5, 1)), []func(*rng.Stream){exp}},
		{Must(NewWeibull(0.7, 1)), []func(*rng.Stream){exp}},
		{Must(NewWeibull(2, 1)), []func(*rng.Stream){exp}},
		{Must(NewEmpirical([]float64{1, 2, 3})), []func(*rng.Stream){uni}}, // IntN(3) rejects with probability 3/2⁶⁴
	} {
		// 1000 samples: about 22 exponentials take the ziggurat's slow path.
		const k = 1000
		a, b := rng.Derive(testSeed, 3), rng.Derive(testSeed, 3)
		for range k {
			c.d.Sample(a)
		}
		for range k {
			for _, draw := range c.draws {
				draw(b)
			}
		}
		if a.Uint64() != b.Uint64() {
			t.Errorf("%s: does not consume %d documented variates per sample", c.d, len(c.draws))
		}
	}
}

func TestDeterministicReplay(t *testing.T) {
	for _, c := range distCases() {
		a, b := rng.Derive(1, 2), rng.Derive(1, 2)
		for range 100 {
			if x, y := c.d.Sample(a), c.d.Sample(b); x != y {
				t.Fatalf("%s: %v then %v from the same stream", c.d, x, y)
			}
		}
	}
}

func TestSampleDoesNotAllocate(t *testing.T) {
	s := rng.Derive(1, 1)
	for _, c := range distCases() {
		if n := testing.AllocsPerRun(100, func() { c.d.Sample(s) }); n != 0 {
			t.Errorf("%s: %v allocations per Sample", c.d, n)
		}
	}
}

func TestSampleBounds(t *testing.T) {
	s := rng.Derive(testSeed, 11)
	b := Must(NewBoundedPareto(0.7, 2, 3))
	u := Must(NewUniform(2, 3))
	for range 100000 {
		if x := b.Sample(s); x < 2 || x > 3 {
			t.Fatalf("bpareto sample %v outside [2, 3]", x)
		}
		if x := u.Sample(s); x < 2 || x > 3 {
			t.Fatalf("uniform sample %v outside [2, 3]", x)
		}
	}
}

func TestBuild(t *testing.T) {
	ok := []struct {
		spec Spec
		want string
	}{
		{Spec{Dist: "exp", Mean: fp(2)}, "exp(mean=2)"},
		{Spec{Dist: "exponential", Mean: fp(2)}, "exp(mean=2)"},
		{Spec{Dist: "det", Mean: fp(1)}, "det(mean=1)"},
		{Spec{Dist: "deterministic", Mean: fp(1)}, "det(mean=1)"},
		{Spec{Dist: "uniform", Low: fp(0), High: fp(2)}, "uniform(low=0, high=2)"},
		{Spec{Dist: "lognormal", Mean: fp(1), SCV: fp(4)}, "lognormal(mean=1, scv=4)"},
		{Spec{Dist: "hyperexp", Mean: fp(1), SCV: fp(10)}, "hyperexp(mean=1, scv=10)"},
		{Spec{Dist: "hyperexponential", Mean: fp(1), SCV: fp(1)}, "hyperexp(mean=1, scv=1)"},
		{Spec{Dist: "bpareto", Alpha: fp(1.5), Low: fp(1), High: fp(1e4)}, "bpareto(alpha=1.5, low=1, high=10000)"},
		{Spec{Dist: "bounded-pareto", Alpha: fp(0.5), Mean: fp(10), High: fp(100)}, "bpareto(alpha=0.5, low="},
		{Spec{Dist: "frechet", Alpha: fp(3), Scale: fp(2)}, "frechet(alpha=3, scale=2)"},
		{Spec{Dist: "frechet", Alpha: fp(3), Mean: fp(2)}, "frechet(alpha=3, scale="},
		{Spec{Dist: "weibull", Shape: fp(2), Scale: fp(1)}, "weibull(shape=2, scale=1)"},
		{Spec{Dist: "weibull", Shape: fp(2), Mean: fp(1)}, "weibull(shape=2, scale="},
		{Spec{Dist: "empirical", Samples: []float64{1, 0, 3}}, "empirical(n=3, mean=1.3333333333333333)"},
	}
	for _, c := range ok {
		d, err := c.spec.Build()
		if err != nil {
			t.Errorf("%+v: %v", c.spec, err)
			continue
		}
		if !strings.HasPrefix(d.String(), c.want) {
			t.Errorf("String() = %q, want prefix %q", d.String(), c.want)
		}
	}
	if d, err := (Spec{Dist: "weibull", Shape: fp(2), Mean: fp(3)}).Build(); err != nil || d.Mean() != 3 {
		t.Errorf("weibull by mean: %v, %v", d, err)
	}
}

func TestBuildErrors(t *testing.T) {
	inf, nan := math.Inf(1), math.NaN()
	cases := []struct {
		spec  Spec
		field string   // FieldError.Field
		want  []string // substrings of the message
	}{
		{Spec{Dist: "expo", Mean: fp(1)}, "dist", []string{`unknown dist "expo" (known: exp, det, uniform, lognormal, hyperexp, bpareto, frechet, weibull, empirical)`}},
		{Spec{Dist: "Exp", Mean: fp(1)}, "dist", []string{`unknown dist "Exp"`}},
		{Spec{Mean: fp(1)}, "dist", []string{`field "dist" is required`}},
		{Spec{Dist: "exp"}, "mean", []string{`dist "exp": field "mean" is required`}},
		{Spec{Dist: "exp", Mean: fp(1), SCV: fp(1)}, "scv", []string{`dist "exp": field "scv" is not used by this distribution (it takes: mean)`}},
		{Spec{Dist: "exp", Mean: fp(1), Samples: []float64{}}, "samples", []string{`field "samples" is not used`}},
		{Spec{Dist: "exp", Mean: fp(-1)}, "mean", []string{`dist "exp": field "mean" must be > 0, got -1`}},
		{Spec{Dist: "exponential", Mean: fp(0)}, "mean", []string{`dist "exponential": field "mean" must be > 0, got 0`}},
		{Spec{Dist: "exp", Mean: fp(nan)}, "mean", []string{`field "mean" must be a finite number, got NaN`}},
		{Spec{Dist: "exp", Mean: fp(inf)}, "mean", []string{`field "mean" must be a finite number, got +Inf`}},
		{Spec{Dist: "exp", Mean: fp(1e308)}, "mean", []string{`field "mean" is too large`}},
		{Spec{Dist: "det", Mean: fp(0)}, "mean", []string{`dist "det": field "mean" must be > 0`}},
		{Spec{Dist: "det", Mean: fp(1), Low: fp(0)}, "low", []string{`field "low" is not used`}},
		{Spec{Dist: "uniform", High: fp(1)}, "low", []string{`field "low" is required`}},
		{Spec{Dist: "uniform", Low: fp(0)}, "high", []string{`field "high" is required`}},
		{Spec{Dist: "uniform", Low: fp(-1), High: fp(1)}, "low", []string{`field "low" must be >= 0, got -1`}},
		{Spec{Dist: "uniform", Low: fp(2), High: fp(1)}, "high", []string{`field "high" must be > low (2), got 1`}},
		{Spec{Dist: "uniform", Low: fp(1), High: fp(1)}, "high", []string{`field "high" must be > low`, `"det"`}},
		{Spec{Dist: "uniform", Low: fp(0), High: fp(inf)}, "high", []string{`field "high" must be a finite number`}},
		{Spec{Dist: "uniform", Low: fp(0), High: fp(1), Mean: fp(0.5)}, "mean", []string{`field "mean" is not used`}},
		{Spec{Dist: "lognormal", Mean: fp(1), SCV: fp(-1)}, "scv", []string{`dist "lognormal": field "scv" must be > 0, got -1`}},
		{Spec{Dist: "lognormal", Mean: fp(1), SCV: fp(0)}, "scv", []string{`field "scv" must be > 0, got 0`}},
		{Spec{Dist: "lognormal", Mean: fp(1)}, "scv", []string{`field "scv" is required`}},
		{Spec{Dist: "lognormal", SCV: fp(1)}, "mean", []string{`field "mean" is required`}},
		{Spec{Dist: "lognormal", Mean: fp(1), SCV: fp(nan)}, "scv", []string{`field "scv" must be a finite number, got NaN`}},
		{Spec{Dist: "lognormal", Mean: fp(1e300), SCV: fp(1e6)}, "mean", []string{`field "mean" is too large`}},
		{Spec{Dist: "hyperexp", Mean: fp(1), SCV: fp(0.5)}, "scv", []string{`dist "hyperexp": field "scv" must be >= 1`, "got 0.5"}},
		{Spec{Dist: "hyperexponential", Mean: fp(1), SCV: fp(inf)}, "scv", []string{`dist "hyperexponential": field "scv" must be a finite number`}},
		{Spec{Dist: "hyperexp", Mean: fp(1), SCV: fp(1e308)}, "scv", []string{`field "scv" is too large`}},
		{Spec{Dist: "hyperexp", Mean: fp(-2), SCV: fp(2)}, "mean", []string{`field "mean" must be > 0, got -2`}},
		{Spec{Dist: "bpareto", Low: fp(1), High: fp(2)}, "alpha", []string{`field "alpha" is required`}},
		{Spec{Dist: "bpareto", Alpha: fp(1), High: fp(2)}, "low", []string{`field "low" or field "mean" is required`}},
		{Spec{Dist: "bpareto", Alpha: fp(1), Low: fp(1), Mean: fp(1.5), High: fp(2)}, "low", []string{`field "low" and field "mean" are alternatives`}},
		{Spec{Dist: "bpareto", Alpha: fp(1), Low: fp(1)}, "high", []string{`field "high" is required`}},
		{Spec{Dist: "bpareto", Alpha: fp(0), Low: fp(1), High: fp(2)}, "alpha", []string{`field "alpha" must be > 0, got 0`}},
		{Spec{Dist: "bpareto", Alpha: fp(1), Low: fp(0), High: fp(2)}, "low", []string{`field "low" must be > 0, got 0`}},
		{Spec{Dist: "bpareto", Alpha: fp(1), Low: fp(2), High: fp(2)}, "high", []string{`field "high" must be > low (2), got 2`}},
		{Spec{Dist: "bpareto", Alpha: fp(1), Mean: fp(2), High: fp(2)}, "mean", []string{`field "mean" must be < high (2), got 2`}},
		{Spec{Dist: "bpareto", Alpha: fp(1), Mean: fp(-1), High: fp(2)}, "mean", []string{`field "mean" must be > 0, got -1`}},
		{Spec{Dist: "bpareto", Alpha: fp(1), Low: fp(1), High: fp(2), Shape: fp(1)}, "shape", []string{`field "shape" is not used by this distribution (it takes: mean, low, high, alpha)`}},
		{Spec{Dist: "bpareto", Alpha: fp(5e-324), Low: fp(1), High: fp(2)}, "alpha", []string{`field "alpha"`, "representable"}},
		{Spec{Dist: "bpareto", Alpha: fp(3), Mean: fp(1e-320), High: fp(1)}, "mean", []string{`field "mean" is too small`}},
		{Spec{Dist: "frechet", Alpha: fp(1), Scale: fp(1)}, "alpha", []string{`dist "frechet": field "alpha" must be > 1`, "got 1"}},
		{Spec{Dist: "frechet", Alpha: fp(nan), Scale: fp(1)}, "alpha", []string{`field "alpha" must be a finite number`}},
		{Spec{Dist: "frechet", Scale: fp(1)}, "alpha", []string{`field "alpha" is required`}},
		{Spec{Dist: "frechet", Alpha: fp(2)}, "scale", []string{`field "scale" or field "mean" is required`}},
		{Spec{Dist: "frechet", Alpha: fp(2), Scale: fp(1), Mean: fp(1)}, "scale", []string{`field "scale" and field "mean" are alternatives`}},
		{Spec{Dist: "frechet", Alpha: fp(2), Scale: fp(-1)}, "scale", []string{`field "scale" must be > 0, got -1`}},
		{Spec{Dist: "frechet", Alpha: fp(2), Mean: fp(0)}, "mean", []string{`field "mean" must be > 0, got 0`}},
		{Spec{Dist: "frechet", Alpha: fp(1.5), Scale: fp(1e300)}, "scale", []string{`field "scale" is too large`}},
		{Spec{Dist: "frechet", Shape: fp(2), Scale: fp(1)}, "shape", []string{`field "shape" is not used`}},
		{Spec{Dist: "weibull", Shape: fp(-1), Scale: fp(1)}, "shape", []string{`dist "weibull": field "shape" must be > 0, got -1`}},
		{Spec{Dist: "weibull", Scale: fp(1)}, "shape", []string{`field "shape" is required`}},
		{Spec{Dist: "weibull", Shape: fp(1)}, "scale", []string{`field "scale" or field "mean" is required`}},
		{Spec{Dist: "weibull", Shape: fp(1), Scale: fp(nan)}, "scale", []string{`field "scale" must be a finite number, got NaN`}},
		{Spec{Dist: "weibull", Shape: fp(0.001), Mean: fp(1)}, "shape", []string{`field "shape"`}},
		{Spec{Dist: "weibull", Shape: fp(0.001), Scale: fp(1)}, "shape", []string{`field "shape"`}},
		{Spec{Dist: "weibull", Alpha: fp(1), Shape: fp(1), Scale: fp(1)}, "alpha", []string{`field "alpha" is not used`}},
		{Spec{Dist: "empirical"}, "samples", []string{`dist "empirical": field "samples" must hold at least one value`}},
		{Spec{Dist: "empirical", Samples: []float64{}}, "samples", []string{`field "samples" must hold at least one value`}},
		{Spec{Dist: "empirical", Samples: []float64{1, nan}}, "samples", []string{`field "samples" must hold finite values >= 0, got NaN at index 1`}},
		{Spec{Dist: "empirical", Samples: []float64{1, -2}}, "samples", []string{`got -2 at index 1`}},
		{Spec{Dist: "empirical", Samples: []float64{1, inf}}, "samples", []string{`got +Inf at index 1`}},
		{Spec{Dist: "empirical", Samples: []float64{0, 0}}, "samples", []string{`field "samples" must not be all zero`}},
		{Spec{Dist: "empirical", Samples: []float64{1}, Mean: fp(1)}, "mean", []string{`field "mean" is not used by this distribution (it takes: samples)`}},
	}
	for _, c := range cases {
		d, err := c.spec.Build()
		if err == nil {
			t.Errorf("%+v: no error, got %v", c.spec, d)
			continue
		}
		if d != nil {
			t.Errorf("%+v: non-nil Dist with error", c.spec)
		}
		var fe *FieldError
		if !errors.As(err, &fe) {
			t.Errorf("%+v: error %T is not a *FieldError", c.spec, err)
		} else if fe.Field != c.field {
			t.Errorf("%+v: Field %q, want %q (%v)", c.spec, fe.Field, c.field, err)
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%+v:\n error %q\n lacks %q", c.spec, err, w)
			}
		}
	}
}

func TestMustPanics(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("Must did not panic on an error")
		}
	}()
	Must(NewExponential(-1))
}

func TestNames(t *testing.T) {
	for _, n := range Names() {
		if _, err := (Spec{Dist: n}).Build(); err == nil || strings.Contains(err.Error(), "unknown") {
			t.Errorf("%q: %v", n, err)
		}
	}
}

// FuzzBuild asserts that Build never panics and that whatever it accepts has
// a finite positive mean, a non-negative SCV, finite non-negative samples and
// a CDF in [0, 1].
func FuzzBuild(f *testing.F) {
	f.Add(uint8(0), uint16(1), 1.0, 1.0, 1.0, 1.0)
	f.Add(uint8(2), uint16(0b1100), 0.0, 1.0, 0.0, 2.0)
	f.Add(uint8(3), uint16(0b11), 1.0, 4.0, 0.0, 0.0)
	f.Add(uint8(4), uint16(0b11), 1.0, 10.0, 0.0, 0.0)
	f.Add(uint8(5), uint16(0b11100), 1.5, 1.0, 1.0, 1e4)
	f.Add(uint8(5), uint16(0b11001), 3.0, 1.5, 1.0, 1e4)
	f.Add(uint8(6), uint16(0b1010001), 3.0, 1.0, 1.0, 2.0)
	f.Add(uint8(7), uint16(0b1100000), 0.5, 1.0, 1.0, 2.0)
	f.Add(uint8(8), uint16(0b10000000), 1.0, 2.0, 3.0, 0.0)
	f.Add(uint8(9), uint16(1), math.NaN(), math.Inf(1), -1.0, 1e308)
	f.Fuzz(func(t *testing.T, which uint8, mask uint16, a, b, c, d float64) {
		names := append(Names(), "exponential", "hyperexponential", "bounded-pareto", "", "bogus")
		vals := [4]float64{a, b, c, d}
		sp := Spec{Dist: names[int(which)%len(names)]}
		ptrs := []**float64{&sp.Mean, &sp.SCV, &sp.Low, &sp.High, &sp.Alpha, &sp.Shape, &sp.Scale}
		for i, p := range ptrs {
			if mask&(1<<i) != 0 {
				v := vals[i%4]
				// For bpareto and frechet the alpha value is the first
				// float; keep some structure so the fuzzer finds valid specs.
				*p = &v
			}
		}
		if mask&(1<<7) != 0 {
			sp.Samples = vals[:1+int(mask>>8)%4]
		}
		dd, err := sp.Build()
		if err != nil {
			if dd != nil {
				t.Fatalf("%+v: Dist and error", sp)
			}
			if err.Error() == "" {
				t.Fatal("empty error")
			}
			return
		}
		m := dd.Mean()
		if !(m > 0) || math.IsInf(m, 0) {
			t.Fatalf("%v: mean %v", dd, m)
		}
		if scv := dd.SCV(); !(scv >= 0) {
			t.Fatalf("%v: SCV %v", dd, scv)
		}
		s := rng.Derive(uint64(mask), uint64(which))
		cdf := dd.(CDFer).CDF
		for range 20 {
			x := dd.Sample(s)
			if !(x >= 0) || math.IsInf(x, 0) {
				t.Fatalf("%v: sample %v", dd, x)
			}
			if p := cdf(x); !(p >= 0 && p <= 1) {
				t.Fatalf("%v: CDF(%v) = %v", dd, x, p)
			}
		}
	})
}

func BenchmarkSample(b *testing.B) {
	cases := []struct {
		name string
		d    Dist
	}{
		{"exp", Must(NewExponential(1))},
		{"det", Must(NewDeterministic(1))},
		{"uniform", Must(NewUniform(0, 2))},
		{"lognormal", Must(NewLognormal(1, 4))},
		{"hyperexp", Must(NewHyperExp(1, 10))},
		{"bpareto", Must(NewBoundedPareto(1.5, 1, 1e4))},
		{"bpareto-alpha1", Must(NewBoundedPareto(1, 1, 1e4))},
		{"frechet", Must(NewFrechet(3, 1))},
		{"frechet-alpha2", Must(NewFrechet(2, 1))},
		{"weibull", Must(NewWeibull(0.7, 1))},
		{"weibull-shape2", Must(NewWeibull(2, 1))},
		{"empirical", Must(NewEmpirical([]float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}))},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			s := rng.Derive(1, 1)
			var sum float64
			for b.Loop() {
				sum += c.d.Sample(s)
			}
			sink = sum
		})
	}
}

var sink float64

// TestBuildExtremes runs every distribution over a grid of extreme but legal
// parameter values: Build may refuse them, but whatever it accepts must have a
// finite positive mean, a non-negative (possibly infinite) SCV and finite
// non-negative samples, including the most extreme uniforms (the 200 draws
// per case cover neither end, so the largest samples are checked through
// the overflow guards in the constructors, tested here via Mean and String).
func TestBuildExtremes(t *testing.T) {
	grid := []float64{5e-324, 1e-300, 1e-20, 0.001, 0.5, 1 - 0x1p-53, 1, 1 + 0x1p-52, 2, 2.5, 1e3, 1e20, 1e300, math.MaxFloat64}
	s := rng.Derive(testSeed, 99)
	accepted := 0
	for _, name := range Names() {
		for _, a := range grid {
			for _, b := range grid {
				for _, c := range grid {
					var sps []Spec
					switch name {
					case "exp", "det":
						sps = []Spec{{Dist: name, Mean: fp(a)}}
					case "uniform":
						sps = []Spec{{Dist: name, Low: fp(a), High: fp(b)}}
					case "lognormal", "hyperexp":
						sps = []Spec{{Dist: name, Mean: fp(a), SCV: fp(b)}}
					case "bpareto":
						sps = []Spec{{Dist: name, Alpha: fp(a), Low: fp(b), High: fp(c)}, {Dist: name, Alpha: fp(a), Mean: fp(b), High: fp(c)}}
					case "frechet":
						sps = []Spec{{Dist: name, Alpha: fp(a), Scale: fp(b)}, {Dist: name, Alpha: fp(a), Mean: fp(b)}}
					case "weibull":
						sps = []Spec{{Dist: name, Shape: fp(a), Scale: fp(b)}, {Dist: name, Shape: fp(a), Mean: fp(b)}}
					case "empirical":
						sps = []Spec{{Dist: name, Samples: []float64{a, b, c}}}
					}
					for _, sp := range sps {
						d, err := sp.Build()
						if err != nil {
							continue
						}
						accepted++
						if m := d.Mean(); !(m > 0) || math.IsInf(m, 0) {
							t.Fatalf("%v: mean %v", d, m)
						}
						if v := d.SCV(); !(v >= 0) {
							t.Fatalf("%v: SCV %v", d, v)
						}
						if sp.Mean != nil && !relClose(d.Mean(), *sp.Mean, 0) {
							t.Fatalf("%v: mean %v, requested %v", d, d.Mean(), *sp.Mean)
						}
						if b, ok := d.(*BoundedPareto); ok && sp.Mean != nil {
							al, lo, hi := b.Params()
							if got := bpMean(al, lo, hi); !relClose(got, *sp.Mean, 1e-9) {
								t.Fatalf("%v: solved mean %v, requested %v", d, got, *sp.Mean)
							}
						}
						for range 200 {
							if x := d.Sample(s); !(x >= 0) || math.IsInf(x, 0) {
								t.Fatalf("%v: sample %v", d, x)
							}
						}
					}
				}
			}
		}
	}
	if accepted < 1000 {
		t.Errorf("only %d extreme specs accepted", accepted)
	}
}
