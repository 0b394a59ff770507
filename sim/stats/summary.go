// Package stats holds the statistics that the simulator and the aggregator
// share: Student-t confidence intervals over independent replications,
// MSER-5 warm-up truncation, Jain's fairness index, and closed forms of
// classical queues (M/M/k, M/G/1) against which simulations are validated.
//
// Everything is implemented here, from the standard library only, so that the
// numbers in an archived result depend on code the project owns and tests.
//
// Conventions: undefined results are NaN (no data, invalid parameters) and
// unbounded ones are +Inf (one replication's half-width, an unstable queue's
// response time). Neither can be encoded by encoding/json, so callers that
// serialise these values must map them explicitly.
package stats

import "math"

// Summary is the estimate of a mean from N independent replications.
type Summary struct {
	N         int
	Mean      float64 // sample mean; NaN if N == 0
	StdDev    float64 // sample standard deviation (divisor N-1); NaN if N < 2
	HalfWidth float64 // half-width of the Student-t confidence interval; +Inf if N == 1, NaN if N == 0
}

// RelHalfWidth returns HalfWidth / |Mean|, the precision measure of the
// sequential stopping rule (e.g. stop when it is below 0.05). It is +Inf when
// the mean is 0 and the half-width is not.
func (s Summary) RelHalfWidth() float64 {
	if s.HalfWidth == 0 {
		return 0
	}
	return s.HalfWidth / math.Abs(s.Mean)
}

// MeanCI returns the mean of xs with the two-sided confidence interval at the
// given level (0.95 for 95%): HalfWidth = t_{(1+level)/2, n-1} · s / sqrt(n).
//
// The interval is valid only when the xs are independent and roughly normal,
// which is why the project computes it over independent replications (each
// with its own warm-up and seed), never over batches of one run. One
// replication gives an infinite half-width rather than a misleading zero.
// A level outside (0, 1) gives a NaN half-width.
func MeanCI(xs []float64, level float64) Summary {
	n := len(xs)
	if n == 0 {
		return Summary{Mean: math.NaN(), StdDev: math.NaN(), HalfWidth: math.NaN()}
	}
	// Two passes: the mean, then the squared deviations from it, which is
	// accurate even when the spread is tiny relative to the mean.
	var sum float64
	for _, x := range xs {
		sum += x
	}
	mean := sum / float64(n)
	var ss, comp float64
	for _, x := range xs {
		d := x - mean
		ss += d * d
		comp += d
	}
	// comp corrects the rounding error of mean (corrected two-pass algorithm).
	m2 := ss - comp*comp/float64(n)
	return summary(n, mean, m2, level)
}

// summary builds a Summary from the count, mean and sum of squared deviations.
func summary(n int, mean, m2, level float64) Summary {
	s := Summary{N: n, Mean: mean, StdDev: math.NaN(), HalfWidth: math.NaN()}
	switch {
	case n == 0:
		s.Mean = math.NaN()
		return s
	case !(level > 0 && level < 1):
		if n >= 2 {
			s.StdDev = math.Sqrt(math.Max(m2, 0) / float64(n-1))
		}
		return s
	case n == 1:
		s.HalfWidth = math.Inf(1)
		return s
	}
	s.StdDev = math.Sqrt(math.Max(m2, 0) / float64(n-1))
	s.HalfWidth = TQuantile((1+level)/2, n-1) * s.StdDev / math.Sqrt(float64(n))
	return s
}

// Acc accumulates observations one at a time (Welford's algorithm) for the
// mean and variance, without storing them and without the cancellation of
// the naive sum-of-squares formula. The zero value is an empty accumulator.
type Acc struct {
	n    int
	mean float64
	m2   float64 // sum of squared deviations from the current mean
}

// Add adds observation x.
func (a *Acc) Add(x float64) {
	a.n++
	d := x - a.mean
	a.mean += d / float64(a.n)
	a.m2 += d * (x - a.mean)
}

// Merge adds b's observations to a, as if they had been added one by one
// (the pairwise update of Chan, Golub and LeVeque), so that accumulators
// kept per group (per job class) combine into the total without a second
// pass and without the naive formula's cancellation.
func (a *Acc) Merge(b Acc) {
	switch {
	case b.n == 0:
		return
	case a.n == 0:
		*a = b
		return
	}
	na, nb := float64(a.n), float64(b.n)
	n := na + nb
	d := b.mean - a.mean
	a.mean += d * nb / n
	a.m2 += b.m2 + d*d*na*nb/n
	a.n += b.n
}

// N returns the number of observations.
func (a *Acc) N() int { return a.n }

// Mean returns the sample mean, NaN if there are no observations.
func (a *Acc) Mean() float64 {
	if a.n == 0 {
		return math.NaN()
	}
	return a.mean
}

// Var returns the sample variance (divisor N-1), NaN if N < 2.
func (a *Acc) Var() float64 {
	if a.n < 2 {
		return math.NaN()
	}
	return math.Max(a.m2, 0) / float64(a.n-1)
}

// CI returns the Student-t summary of the observations at the given level,
// as [MeanCI] would for the same values (up to rounding). Meaningful only if
// the observations are independent (e.g. one per replication).
func (a *Acc) CI(level float64) Summary { return summary(a.n, a.mean, a.m2, level) }

// Jain returns Jain's fairness index (Σx)² / (n·Σx²) of non-negative values,
// used over per-class mean response times: 1 when all values are equal, down
// to 1/n when a single value is non-zero. It is 1 for all-zero values (they
// are equal) and NaN for an empty slice. Values are scaled by their maximum
// magnitude first, so that squares neither overflow nor underflow.
func Jain(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	var m float64
	for _, x := range xs {
		m = math.Max(m, math.Abs(x))
	}
	if m == 0 {
		return 1
	}
	if math.IsInf(m, 0) || math.IsNaN(m) {
		return math.NaN()
	}
	var s, s2 float64
	for _, x := range xs {
		x /= m
		s += x
		s2 += x * x
	}
	return s * s / (float64(len(xs)) * s2)
}
