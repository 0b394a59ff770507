package stats

import (
	"math"
	"testing"
)

// tcdf returns P(T <= t) for Student's t with nu degrees of freedom. Evaluated
// directly, not by the root finder, it checks TQuantile.
func tcdf(t, nu float64) float64 {
	if t == 0 {
		return 0.5
	}
	x, y, lx, ly := tXY(math.Abs(t), nu)
	q := 0.5 * regIncBeta(nu/2, 0.5, x, y, lx, ly) // P(T > |t|)
	if t > 0 {
		return 1 - q
	}
	return q
}

// relErr returns |got-want|/|want| (|got-want| when want is 0).
func relErr(got, want float64) float64 {
	if want == 0 {
		return math.Abs(got)
	}
	return math.Abs(got-want) / math.Abs(want)
}

// TestTQuantileTable checks published table values. The 20-digit references
// were computed with 50-digit arithmetic (mpmath: bisection of the regularized
// incomplete beta I_{ν/(ν+t²)}(ν/2, 1/2) = 2(1−p), with p the exact binary
// value of the float64 literal); df = 1 and 2 agree with the closed forms
// tan(π(p−1/2)) and (2p−1)/sqrt(2p(1−p)), and the familiar 4-decimal tables
// (12.7062, 4.3027, 2.2622, 2.0452, 1.9600 ...) are their roundings.
func TestTQuantileTable(t *testing.T) {
	cases := []struct {
		p    float64
		df   int
		want float64
	}{
		{0.975, 1, 12.706204736174693314},
		{0.975, 2, 4.3026527297494617894},
		{0.975, 4, 2.7764451051977934898},
		{0.975, 9, 2.2621571627982049992},
		{0.975, 19, 2.0930240544083093201},
		{0.975, 29, 2.0452296421327038745},
		{0.975, 30, 2.0422724563012378878},
		{0.975, 1000, 1.9623390808264081039},
		// df → ∞ tends to the normal 1.959963985; at 1e6 the first correction
		// z(z²+1)/(4ν) ≈ 2.37e-6 is still visible.
		{0.975, 1000000, 1.9599663568141066553},
		{0.975, 100000000, 1.9599640082627664408},
		{0.995, 5, 4.0321429835552271793},
		{0.9, 3, 1.6377443536962103222},
		{0.6, 10, 0.26018482949208017615},
		{0.999, 100, 3.1737394937387826548},
		{0.9999999, 7, 19.933902249446191452},
		{0.55, 200, 0.12582100977945189489},
	}
	for _, c := range cases {
		got := TQuantile(c.p, c.df)
		if e := relErr(got, c.want); e > 1e-12 {
			t.Errorf("TQuantile(%v, %d) = %.17g, want %.17g (rel err %.2g)", c.p, c.df, got, c.want, e)
		}
		// Symmetry: the lower quantile is the negated upper one.
		if lo := TQuantile(1-c.p, c.df); lo != -got {
			t.Errorf("TQuantile(%v, %d) = %v, want %v", 1-c.p, c.df, lo, -got)
		}
	}
}

// TestTQuantileClosedForms compares with the exact inverses for ν = 1, 2, 4
// over a grid of p, including extreme tails:
//
//	ν=1 (Cauchy): t = tan(π(p−1/2)) = 1/tan(π(1−p))
//	ν=2:          t = (2p−1)/sqrt(2p(1−p))
//	ν=4:          t = 2·sqrt(cos(acos(√α)/3)/√α − 1),  α = 4p(1−p)
//
// 1−p and 2p−1 are exact in float64 for p >= 1/2, so the closed forms are
// accurate to a few ulps here (ν=4 only away from p = 1/2, where acos is
// ill-conditioned, and from p=1 where √α loses digits).
func TestTQuantileClosedForms(t *testing.T) {
	ps := []float64{0.5000001, 0.51, 0.6, 0.7, 0.75, 0.8, 0.9, 0.95, 0.975, 0.99, 0.999, 1 - 1e-6, 1 - 1e-10, 1 - 1e-15}
	for _, p := range ps {
		q := 1 - p
		c1 := 1 / math.Tan(math.Pi*q)
		if p < 0.75 {
			c1 = math.Tan(math.Pi * (p - 0.5)) // tan near π/2 is ill-conditioned
		}
		c2 := (2*p - 1) / math.Sqrt(2*p*q)
		for _, c := range []struct {
			df   int
			want float64
		}{{1, c1}, {2, c2}} {
			if got := TQuantile(p, c.df); relErr(got, c.want) > 1e-13 {
				t.Errorf("TQuantile(%v, %d) = %.17g, closed form %.17g (rel err %.2g)", p, c.df, got, c.want, relErr(got, c.want))
			}
		}
		if p >= 0.6 && p <= 0.9999 {
			sa := math.Sqrt(4 * p * q)
			c4 := 2 * math.Sqrt(math.Cos(math.Acos(sa)/3)/sa-1)
			if got := TQuantile(p, 4); relErr(got, c4) > 1e-12 {
				t.Errorf("TQuantile(%v, 4) = %.17g, closed form %.17g", p, got, c4)
			}
		}
	}
}

// TestTQuantileFarLowerTail: tiny p (no 1-p rounding) for ν = 1, 2, where
// t = −1/tan(πp) and t = (2p−1)/sqrt(2p(1−p)); |t| reaches 3e299.
func TestTQuantileFarLowerTail(t *testing.T) {
	for _, p := range []float64{1e-300, 1e-100, 1e-20, 1e-9, 0.001} {
		c1 := -1 / math.Tan(math.Pi*p)
		c2 := (2*p - 1) / math.Sqrt(2*p*(1-p))
		if got := TQuantile(p, 1); relErr(got, c1) > 1e-13 {
			t.Errorf("TQuantile(%v, 1) = %.17g, want %.17g", p, got, c1)
		}
		if got := TQuantile(p, 2); relErr(got, c2) > 1e-13 {
			t.Errorf("TQuantile(%v, 2) = %.17g, want %.17g", p, got, c2)
		}
	}
}

// TestTQuantileRoundTrip: below the switch to Fisher's expansion, the
// quantile inverts the distribution function (evaluated independently of the
// root finder) on both sides of the central/tail switch at p = 1/4 and 3/4,
// and it is increasing in p. Lower-tail probabilities are compared
// relatively, so tiny p are checked as strictly as central ones.
func TestTQuantileRoundTrip(t *testing.T) {
	dfs := []int{1, 2, 3, 5, 8, 13, 30, 99, 100, 101, 500, 2000, 9999}
	ps := []float64{1e-200, 1e-13, 1e-8, 0.0005, 0.01, 0.025, 0.05, 0.2, 0.249999, 0.25, 0.250001, 0.3, 0.48,
		0.5 - 1e-12, 0.5 + 1e-12, 0.52, 0.7, 0.749999, 0.75, 0.750001, 0.8, 0.95, 0.975, 0.99, 0.9995, 1 - 1e-8, 1 - 1e-13}
	maxErr := map[int]float64{}
	defer func() { t.Logf("max implied relative error of q by df: %v", maxErr) }()
	for _, df := range dfs {
		prev := math.Inf(-1)
		for _, p := range ps {
			q := TQuantile(p, df)
			if !(q > prev) {
				t.Errorf("df %d: not increasing at p=%v: %v after %v", df, p, q, prev)
			}
			prev = q
			// P(T <= q) = p, measured on the smaller side, P(T <= -|q|), and
			// converted to the error of q it implies: the distribution
			// function carries rounding noise up to ~1e-11 relative at
			// df ~ 1e4 where the continued fraction is long, which moves
			// the quantile by far less.
			nu := float64(df)
			tail, want := tcdf(-math.Abs(q), nu), math.Min(p, 1-p)
			e := math.Abs((tail - want) / tpdf(q, nu) / q)
			if tpdf(q, nu) == 0 {
				e = relErr(tail, want) // density underflows (q ~ 1e199): compare tails
			}
			// The noise grows like sqrt(df) with the continued fraction's length.
			tol := 1e-13 * (1 + math.Sqrt(nu))
			if e > maxErr[df] {
				maxErr[df] = e
			}
			if e > tol {
				t.Errorf("df %d p %v: tail at %v = %.17g, want %.17g (implied rel err of q %.2g)", df, p, q, tail, want, e)
			}
		}
	}
}

// TestTQuantileLarge checks the Fisher-expansion range (df >= 1e4), including
// the lower tail, against 50-digit references (as in TestTQuantileTable).
func TestTQuantileLarge(t *testing.T) {
	cases := []struct {
		p    float64
		df   int
		want float64
	}{
		{1e-20, 50000, -9.2663609997215315314},
		{0.1, 20000, -1.281593896210215453},
		{0.975, 1000000, 1.9599663568141066553},
	}
	for _, c := range cases {
		if got := TQuantile(c.p, c.df); relErr(got, c.want) > 1e-14 {
			t.Errorf("TQuantile(%v, %d) = %.17g, want %.17g", c.p, c.df, got, c.want)
		}
	}
	// Far lower tail below the switch, same references.
	if got, want := TQuantile(1e-20, 20), -39.364541274105820224; relErr(got, want) > 1e-13 {
		t.Errorf("TQuantile(1e-20, 20) = %.17g, want %.17g", got, want)
	}
	// Continuity across the switch: the two methods agree at df = 9999/10000
	// to within the change of df itself (dt/dν ≈ -z(z²+1)/(4ν²) ≈ -2.4e-8).
	a, b := TQuantile(0.975, largeDF-1), TQuantile(0.975, largeDF)
	if d := a - b; d < 2.3e-8 || d > 2.5e-8 {
		t.Errorf("switch: t(9999) - t(10000) = %g", d)
	}
}

// TestNormUpper checks the normal quantile used by the expansion against
// 60-digit references, down to the smallest float64.
func TestNormUpper(t *testing.T) {
	cases := []struct{ q, want float64 }{
		{0.4, 0.25334710313579974132},
		{0.25, 0.6744897501960817432},
		{0.2, 0.84162123357291416552},
		{0.025, 1.9599639845400542118},
		{1e-5, 4.2648907939228246102},
		{1e-10, 6.3613409024040561991},
		{1e-20, 9.2623400897984075796},
		{1e-100, 21.273453560965324294},
		{1e-300, 37.047096299361199237},
		{5e-324, 38.467405617144346251},
	}
	for _, c := range cases {
		tol := 1e-15
		if c.q < 1e-300 {
			tol = 1e-9 // denormal q: asymptotic series only
		}
		if got := normUpper(c.q); relErr(got, c.want) > tol {
			t.Errorf("normUpper(%v) = %.17g, want %.17g (rel err %.2g)", c.q, got, c.want, relErr(got, c.want))
		}
	}
}

func TestTQuantileEdges(t *testing.T) {
	cases := []struct {
		p    float64
		df   int
		want float64
	}{
		{0.5, 7, 0},
		{0, 3, math.Inf(-1)},
		{-1, 3, math.Inf(-1)},
		{1, 3, math.Inf(1)},
		{2, 3, math.Inf(1)},
		{0.975, 0, math.NaN()},
		{0.975, -4, math.NaN()},
		{math.NaN(), 3, math.NaN()},
	}
	for _, c := range cases {
		got := TQuantile(c.p, c.df)
		if !(got == c.want || math.IsNaN(got) && math.IsNaN(c.want)) {
			t.Errorf("TQuantile(%v, %d) = %v, want %v", c.p, c.df, got, c.want)
		}
	}
	// The extreme Cauchy tail, ~1/(π(1−p)) ≈ 2.9e15, is still finite and exact.
	p := math.Nextafter(1, 0)
	if got, want := TQuantile(p, 1), 1/math.Tan(math.Pi*(1-p)); relErr(got, want) > 1e-13 {
		t.Errorf("TQuantile(1-ulp, 1) = %v, want %v", got, want)
	}
	if got := TQuantile(math.SmallestNonzeroFloat64, 3); !(got < -1e100) || math.IsInf(got, 0) {
		t.Errorf("TQuantile(tiny, 3) = %v", got)
	}
}

func BenchmarkTQuantile(b *testing.B) {
	for _, df := range []int{4, 29, 1000, 1000000} {
		b.Run("df="+itoa(df), func(b *testing.B) {
			for b.Loop() {
				TQuantile(0.975, df)
			}
		})
	}
}

func itoa(n int) string {
	if n < 10 {
		return string(rune('0' + n))
	}
	return itoa(n/10) + string(rune('0'+n%10))
}

// TestNormUpperExported: the familiar one-sided critical values (z_{0.05} =
// 1.6449, z_{0.001} = 3.0902, z_{10^-6} = 4.7534) and NaN out of range.
func TestNormUpperExported(t *testing.T) {
	for _, c := range []struct{ q, want float64 }{{0.05, 1.6448536}, {0.001, 3.0902323}, {1e-6, 4.7534243}} {
		if got := NormUpper(c.q); math.Abs(got-c.want) > 1e-6 {
			t.Errorf("NormUpper(%v) = %v, want %v", c.q, got, c.want)
		}
	}
	for _, q := range []float64{0, 0.5, -1, math.NaN()} {
		if !math.IsNaN(NormUpper(q)) {
			t.Errorf("NormUpper(%v) not NaN", q)
		}
	}
}
