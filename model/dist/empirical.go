package dist

import (
	"math"
	"slices"
	"sort"
	"strconv"

	"github.com/msjfarm/msjfarm/sim/rng"
)

// Empirical resamples a finite list of values uniformly (Spec name
// "empirical"): each variate is one of the values, each with probability 1/n,
// chosen with s.IntN(n) (one 64-bit draw, rarely more: Lemire's rejection).
// Mean and SCV are those of the list itself (population variance, divisor n).
// The values are kept sorted, which makes the CDF a binary search; the choice
// of index is therefore made among the sorted values.
type Empirical struct {
	xs        []float64 // sorted ascending
	mean, scv float64
}

// NewEmpirical returns the empirical distribution of samples, which must hold
// at least one value, all finite and >= 0 and not all zero. The slice is
// copied.
func NewEmpirical(samples []float64) (*Empirical, error) {
	const name = "empirical"
	if len(samples) == 0 {
		return nil, fieldErr(name, "samples", "must hold at least one value")
	}
	for i, x := range samples {
		if !finite(x) || x < 0 {
			return nil, fieldErr(name, "samples", "must hold finite values >= 0, got %s at index %d", ff(x), i)
		}
	}
	xs := slices.Clone(samples)
	slices.Sort(xs)
	if xs[len(xs)-1] == 0 {
		return nil, fieldErr(name, "samples", "must not be all zero")
	}
	// Mean = M·(Σ (x/M))/n with M the largest value, by Neumaier's
	// compensated sum: x/M <= 1, so nothing overflows, and tiny values do not
	// underflow as x/n would.
	n := float64(len(xs))
	top := xs[len(xs)-1]
	var sum, c float64
	for _, x := range xs {
		v := x / top
		t := sum + v
		if math.Abs(sum) >= math.Abs(v) {
			c += (sum - t) + v
		} else {
			c += (v - t) + sum
		}
		sum = t
	}
	mean := top * ((sum + c) / n)
	if !(mean > 0) || !finite(mean) {
		return nil, fieldErr(name, "samples", "has a mean that is not representable")
	}
	// SCV = (1/n) Σ ((x − m)/m)², two-pass, scaled by m so it cannot overflow
	// unless the SCV itself does.
	var ss float64
	for _, x := range xs {
		z := (x - mean) / mean
		ss += z * z
	}
	return &Empirical{xs: xs, mean: mean, scv: ss / n}, nil
}

// Sample returns one of the values chosen uniformly.
func (d *Empirical) Sample(s *rng.Stream) float64 { return d.xs[s.IntN(len(d.xs))] }

// Mean returns the mean of the values.
func (d *Empirical) Mean() float64 { return d.mean }

// SCV returns the population variance of the values over their mean squared.
func (d *Empirical) SCV() float64 { return d.scv }

// Len returns the number of values.
func (d *Empirical) Len() int { return len(d.xs) }

// CDF returns the fraction of values <= x (a right-continuous step function).
func (d *Empirical) CDF(x float64) float64 {
	if !(x >= d.xs[0]) {
		return 0
	}
	i := sort.Search(len(d.xs), func(i int) bool { return d.xs[i] > x })
	return float64(i) / float64(len(d.xs))
}

func (d *Empirical) String() string {
	return "empirical(n=" + strconv.Itoa(len(d.xs)) + ", mean=" + ff(d.mean) + ")"
}
