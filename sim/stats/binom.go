package stats

import "math"

// BinomTail returns P(X >= k) for X ~ Binomial(n, p), summed exactly term by
// term in log space (n up to a few million is fine). It is the error
// probability of a k-out-of-n vote whose voters err independently with
// probability p, which is how the engine's point verdict argues its
// false-alarm and miss rates (sim.Pool). Out-of-range arguments give NaN.
func BinomTail(n, k int, p float64) float64 {
	switch {
	case n < 0 || !(p >= 0 && p <= 1):
		return math.NaN()
	case k <= 0:
		return 1
	case k > n:
		return 0
	case p == 0:
		return 0
	case p == 1:
		return 1
	}
	lp, lq := math.Log(p), math.Log1p(-p)
	lgn, _ := math.Lgamma(float64(n + 1))
	var s float64
	for i := k; i <= n; i++ {
		a, _ := math.Lgamma(float64(i + 1))
		b, _ := math.Lgamma(float64(n - i + 1))
		t := math.Exp(lgn - a - b + float64(i)*lp + float64(n-i)*lq)
		s += t
		if t < s*1e-17 && float64(i) > float64(n)*p { // past the mode: the rest is negligible
			break
		}
	}
	return math.Min(s, 1)
}

// BinomUpper is the exact (Clopper–Pearson) one-sided upper confidence bound
// at level (0.95 for 95%) on a probability p from x successes in n
// independent trials: the largest p with P(X <= x | p) >= 1 − level. With
// x = 0 it is 1 − (1−level)^{1/n} (the "rule of three": about 3/n at 95%).
// It is how a calibration states a false-positive rate it never observed.
// Found by bisection on BinomTail (monotone in p) to 1e-12. Bad arguments
// give NaN.
func BinomUpper(x, n int, level float64) float64 {
	if n <= 0 || x < 0 || x > n || !(level > 0 && level < 1) {
		return math.NaN()
	}
	if x == n {
		return 1
	}
	alpha := 1 - level
	if x == 0 {
		return 1 - math.Pow(alpha, 1/float64(n))
	}
	// P(X <= x | p) = 1 − P(X >= x+1 | p) decreases in p.
	lo, hi := 0.0, 1.0
	for hi-lo > 1e-12 {
		mid := (lo + hi) / 2
		if 1-BinomTail(n, x+1, mid) >= alpha {
			lo = mid
		} else {
			hi = mid
		}
	}
	return lo
}
