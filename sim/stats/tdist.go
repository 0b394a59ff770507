package stats

import "math"

// TQuantile returns the p-quantile of Student's t distribution with df
// degrees of freedom: the t with P(T <= t) = p. A two-sided 95% confidence
// interval uses TQuantile(0.975, n-1).
//
// It is accurate to about 1e-12 relative or better (measured against 50-digit
// references: ~1e-14 for df < 1000, up to ~3e-12 just below df = 1e4 where
// the continued fraction is longest, ~1e-14 again from 1e4 on), in both tails
// down to p = 1e-300.
// TQuantile(0.5, df) = 0; p <= 0 gives -Inf, p >= 1 gives +Inf; df < 1 or
// p = NaN gives NaN. A quantile beyond the float64 range (df = 1, p < 1e-308)
// is ±Inf.
//
// Why not a table or the normal approximation: the project runs 2 to a few
// hundred replications and the sequential mode stops at arbitrary n, so the
// quantile is needed for every df, and a wrong quantile silently changes every
// confidence interval. The quantile is found by a safeguarded Newton iteration
// on the distribution function, itself evaluated through the regularized
// incomplete beta function.
func TQuantile(p float64, df int) float64 {
	switch {
	case df < 1 || math.IsNaN(p):
		return math.NaN()
	case p <= 0:
		return math.Inf(-1)
	case p >= 1:
		return math.Inf(1)
	case p == 0.5:
		return 0
	}
	// q = min(p, 1-p) is the tail beyond the quantile; it is exact in float64
	// (1-p is exact for p >= 1/2), so both tails keep full relative precision.
	q, sign := 1-p, 1.0
	if p < 0.5 {
		q, sign = p, -1.0
	}
	nu := float64(df)
	if df >= largeDF {
		if z := normUpper(q); z*z < 0.01*nu {
			return sign * tFisher(z, nu)
		}
	}
	return sign * tUpper(q, nu)
}

// largeDF is where TQuantile switches from solving the incomplete beta
// equation to Fisher's asymptotic expansion. The continued fraction's rounding
// noise grows like sqrt(df) (relative 1e-11 in probability, 3e-12 in the
// quantile at df = 1e4; 1e-9 at df = 1e8). The expansion is a series in
// z²/df; its first omitted term is about 7e-5·z·(z²/df)⁵, below 1e-15·z
// when z²/df < 0.01, which TQuantile also requires (for df = 1e4 that is
// z < 10, p > 1e-23; deeper tails go to the continued fraction, which is
// short and accurate there because t is far from the distribution's bulk).
const largeDF = 10000

// tFisher is Fisher's expansion of the t quantile in powers of 1/nu around
// the normal quantile z (Abramowitz & Stegun 26.7.5), with terms to 1/nu⁴.
func tFisher(z, nu float64) float64 {
	z2 := z * z
	g1 := z * (z2 + 1) / 4
	g2 := z * ((5*z2+16)*z2 + 3) / 96
	g3 := z * (((3*z2+19)*z2+17)*z2 - 15) / 384
	g4 := z * ((((79*z2+776)*z2+1482)*z2-1920)*z2 - 945) / 92160
	return z + (g1+(g2+(g3+g4/nu)/nu)/nu)/nu
}

// normUpper returns z with P(Z > z) = q for a standard normal Z, 0 < q < 1/2.
// math.Erfinv is accurate when its argument 1-2q is exact, which holds for
// q >= 1/4; smaller tails are refined by Newton steps on log(erfc), which
// keeps relative precision however small q is.
func normUpper(q float64) float64 {
	z := math.Sqrt2 * math.Erfinv(1-2*q)
	if q >= 0.25 {
		return z
	}
	const logSqrt2Pi = 0.91893853320467274178
	if q < 1e-300 || math.IsInf(z, 0) || !(z > 0) {
		// Mills' ratio: q = φ(z)/z·(1 − 1/z² + 3/z⁴ − 15/z⁶ + ...), solved for z
		// by fixed-point iteration (a contraction: z changes by O(1/z) per
		// unit change of log z). Relative error ~1e-10 at z ≈ 37, where erfc
		// underflows and the refinement below cannot run.
		lq := logx(q)
		z = math.Sqrt(-2 * lq)
		for range 20 {
			r := 1 / (z * z)
			z = math.Sqrt(-2 * (lq + logSqrt2Pi + math.Log(z) - math.Log1p(-r*(1-r*(3-15*r)))))
		}
	}
	for range 8 {
		tail := 0.5 * math.Erfc(z/math.Sqrt2)
		dens := math.Exp(-z*z/2 - logSqrt2Pi)
		if tail < 1e-305 || dens < 1e-305 {
			break // subnormal or zero: keep the asymptotic value
		}
		step := (logx(tail) - logx(q)) * tail / dens
		z += step
		if math.Abs(step) <= 1e-16*z {
			break
		}
	}
	return z
}

// tpdf returns the density of Student's t with nu degrees of freedom at t.
func tpdf(t, nu float64) float64 {
	r := math.Abs(t) / math.Sqrt(nu)
	l := math.Log1p(r * r)
	if r > 1e8 {
		l = 2 * math.Log(r) // r² may overflow; 1/r² is below rounding
	}
	// 1 / (sqrt(nu) B(nu/2, 1/2)) · (1 + t²/nu)^(-(nu+1)/2)
	return math.Exp(-0.5*math.Log(nu) - lbeta(nu/2, 0.5) - (nu+1)/2*l)
}

// tXY returns x = nu/(nu+t²) and y = 1-x = t²/(nu+t²) for t >= 0, and their
// logarithms. Each is computed directly, so that neither suffers cancellation
// when the other is near 1, and the logarithms stay exact where x or y
// underflows (far tails of small df, where the quantile exceeds 1e150).
func tXY(t, nu float64) (x, y, lx, ly float64) {
	r := t / math.Sqrt(nu) // t²/nu = r², formed without overflow
	if r > 1 {
		s := 1 / r // s² = nu/t²
		s2 := s * s
		l := math.Log1p(s2)
		return s2 / (1 + s2), 1 / (1 + s2), 2*logx(s) - l, -l
	}
	r2 := r * r
	l := math.Log1p(r2)
	return 1 / (1 + r2), r2 / (1 + r2), -l, 2*logx(r) - l
}

// tUpper solves P(T > t) = q for 0 < q < 1/2 and nu < largeDF.
//
// Two formulations of the same equation are used so that the target is
// always exact in float64: for q > 1/4 the central mass 1-2q = I_y(1/2, nu/2),
// otherwise the two-sided tail 2q = I_x(nu/2, 1/2), which keeps relative
// precision however small q is. Both sides are monotone in t with derivative
// ±2 f(t), f the density.
func tUpper(q, nu float64) float64 {
	central := q > 0.25
	target := 2 * q
	if central {
		target = 1 - 2*q
	}
	// step returns g(t), increasing in t with its root at the quantile, and
	// the Newton step for it. The tail is solved on a log scale,
	// g = log(2q) − log I_x, because the tail decays like a power of t:
	// linear Newton would crawl (for df = 1 it only doubles t per step),
	// while on the log scale the function is nearly linear in log t.
	step := func(t float64) (g, next float64) {
		x, y, lx, ly := tXY(t, nu)
		if central {
			g = regIncBeta(0.5, nu/2, y, x, ly, lx) - target
			return g, t - g/(2*tpdf(t, nu))
		}
		tail := regIncBeta(nu/2, 0.5, x, y, lx, ly)
		g = logx(target) - logx(tail)
		// d g / d log t = 2 t f(t) / tail
		return g, t * math.Exp(-g*tail/(2*t*tpdf(t, nu)))
	}

	// Starting point: the first terms of Fisher's expansion, good for large
	// nu; for small nu the safeguards below take over.
	z := normUpper(q)
	z2 := z * z
	t := z + z*(z2+1)/(4*nu) + z*((5*z2+16)*z2+3)/(96*nu*nu)
	if !(t > 0) || math.IsInf(t, 0) {
		t = 1
	}

	// Newton steps, falling back to bisection of the bracket [lo, hi] (known to
	// hold the root) whenever a step leaves it. The bracket is bisected
	// geometrically when it spans orders of magnitude (for df = 1 the
	// quantile is ~1/(πq)), and grown by squaring while unbounded.
	lo, hi := 0.0, math.Inf(1)
	for range 400 {
		g, next := step(t)
		if g == 0 {
			return t
		}
		if g < 0 {
			lo = t
		} else {
			hi = t
		}
		if !(next > lo && next < hi) {
			switch {
			case math.IsInf(hi, 1):
				next = math.Max(2*t, t*t)
			case lo > 0 && hi > 4*lo:
				next = math.Sqrt(lo) * math.Sqrt(hi)
			default:
				next = lo + (hi-lo)/2
			}
		}
		if math.Abs(next-t) <= 1e-15*next || (!math.IsInf(hi, 1) && hi-lo <= 2e-16*hi) {
			return next
		}
		t = next
	}
	return t
}

// regIncBeta returns the regularized incomplete beta function I_x(a, b) for
// a, b > 0 and 0 <= x <= 1, given also y = 1-x and the logarithms lx, ly of
// x and y, all computed by the caller without cancellation or underflow. It
// follows Numerical Recipes (betai/betacf): the continued fraction converges
// quickly for x < (a+1)/(a+b+2); otherwise the symmetry
// I_x(a, b) = 1 - I_y(b, a) is used.
func regIncBeta(a, b, x, y, lx, ly float64) float64 {
	switch {
	case math.IsInf(lx, -1):
		return 0
	case math.IsInf(ly, -1):
		return 1
	}
	// x^a y^b / B(a, b), from logarithms: for large df, x^(df/2) with
	// x = 1 - O(1/df) needs log x to full relative precision.
	front := math.Exp(a*lx + b*ly - lbeta(a, b))
	if x < (a+1)/(a+b+2) {
		return front * betaCF(a, b, x, y) / a
	}
	return 1 - front*betaCF(b, a, y, x)/b
}

// betaCF evaluates the continued fraction for the incomplete beta function by
// the modified Lentz method (Numerical Recipes §6.4). The number of terms
// needed grows like sqrt(max(a, b)); the cap is far above what df <= 1e8 needs.
func betaCF(a, b, x, y float64) float64 {
	const (
		maxIter = 100000
		eps     = 1e-16
		tiny    = 1e-300
	)
	qab, qap, qam := a+b, a+1, a-1
	c := 1.0
	d := (1 - b + qab*y) / qap // = 1 - qab*x/qap, without cancellation near x = 1
	if math.Abs(d) < tiny {
		d = tiny
	}
	d = 1 / d
	h := d
	for m := 1; m <= maxIter; m++ {
		fm := float64(m)
		m2 := 2 * fm
		// even step
		aa := fm * (b - fm) * x / ((qam + m2) * (a + m2))
		d = 1 + aa*d
		if math.Abs(d) < tiny {
			d = tiny
		}
		c = 1 + aa/c
		if math.Abs(c) < tiny {
			c = tiny
		}
		d = 1 / d
		h *= d * c
		// odd step
		aa = -(a + fm) * (qab + fm) * x / ((a + m2) * (qap + m2))
		d = 1 + aa*d
		if math.Abs(d) < tiny {
			d = tiny
		}
		c = 1 + aa/c
		if math.Abs(c) < tiny {
			c = tiny
		}
		d = 1 / d
		del := d * c
		h *= del
		if math.Abs(del-1) <= eps {
			break
		}
	}
	return h
}

// lbeta returns log B(a, b) for a, b > 0.
//
// The plain lgamma(a)+lgamma(b)-lgamma(a+b) loses digits when an argument is
// large: for df = 1e6 the lgamma values are ~6e6, so their difference carries
// an absolute error ~1e-9, i.e. 1e-9 relative in every probability. For
// arguments >= 100 the differences are instead formed from Stirling's series,
// where the large terms cancel analytically.
func lbeta(a, b float64) float64 {
	if a > b {
		a, b = b, a
	}
	const big = 100
	switch {
	case b < big:
		la, _ := math.Lgamma(a)
		lb, _ := math.Lgamma(b)
		lab, _ := math.Lgamma(a + b)
		return la + lb - lab
	case a < big:
		// lgamma(a+b) - lgamma(b) = (b-1/2) log1p(a/b) + a log(a+b) - a
		//                           + c(a+b) - c(b)
		la, _ := math.Lgamma(a)
		d := (b-0.5)*math.Log1p(a/b) + a*math.Log(a+b) - a + stirlingCorr(a+b) - stirlingCorr(b)
		return la - d
	default:
		// Both large: log B = log sqrt(2π) + (a-1/2) log(a/(a+b))
		//                     + (b-1/2) log(b/(a+b)) - (1/2) log(a+b) + c(a)+c(b)-c(a+b)
		s := a + b
		return 0.5*math.Log(2*math.Pi) + (a-0.5)*math.Log(a/s) + (b-0.5)*math.Log(b/s) -
			0.5*math.Log(s) + stirlingCorr(a) + stirlingCorr(b) - stirlingCorr(s)
	}
}

// stirlingCorr returns c(z) = lgamma(z) - [(z-1/2) log z - z + log sqrt(2π)]
// for z >= 100, where the series truncated after the z^-7 term is accurate
// to ~1e-21.
func stirlingCorr(z float64) float64 {
	r := 1 / z
	r2 := r * r
	return r * (1.0/12 - r2*(1.0/360-r2*(1.0/1260-r2*(1.0/1680))))
}

// logx is math.Log, correct also for subnormal x: on amd64 and s390x the
// assembly math.Log mishandles subnormals (log(5e-324) gives -709.09 instead
// of -744.44; golang/go#56600), and the far tails reach them.
func logx(x float64) float64 {
	if x > 0 && x < 0x1p-1022 {
		f, e := math.Frexp(x) // Frexp normalises subnormals
		return math.Log(f) + float64(e)*math.Ln2
	}
	return math.Log(x)
}

// NormUpper returns z with P(Z > z) = q for a standard normal Z, 0 < q <
// 1/2 (NaN otherwise): the critical value of a one-sided z test at level q,
// accurate however small q is.
func NormUpper(q float64) float64 {
	if !(q > 0 && q < 0.5) {
		return math.NaN()
	}
	return normUpper(q)
}
