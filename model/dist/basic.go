package dist

import (
	"math"

	"github.com/msjfarm/msjfarm/sim/rng"
)

// Exponential is the exponential distribution with the given mean
// (Spec name "exp", alias "exponential"). One uniform per variate.
type Exponential struct {
	mean float64
}

// NewExponential returns the exponential distribution with mean > 0.
func NewExponential(mean float64) (*Exponential, error) {
	const name = "exp"
	if err := checkPositive(name, "mean", mean); err != nil {
		return nil, err
	}
	if math.IsInf(mean*maxExp, 0) {
		return nil, overflowErr(name, "mean")
	}
	return &Exponential{mean: mean}, nil
}

// Sample returns mean·E, E = s.Exp() (a standard exponential).
func (d *Exponential) Sample(s *rng.Stream) float64 { return d.mean * s.Exp() }

// Mean returns the mean.
func (d *Exponential) Mean() float64 { return d.mean }

// SCV returns 1.
func (d *Exponential) SCV() float64 { return 1 }

// CDF returns 1 − exp(−x/mean) for x > 0.
func (d *Exponential) CDF(x float64) float64 {
	if !(x > 0) {
		return 0
	}
	return -math.Expm1(-x / d.mean)
}

func (d *Exponential) String() string { return "exp(mean=" + ff(d.mean) + ")" }

// Deterministic always returns its mean (Spec name "det", alias
// "deterministic"). It consumes no random numbers.
type Deterministic struct {
	mean float64
}

// NewDeterministic returns the constant distribution at mean > 0.
func NewDeterministic(mean float64) (*Deterministic, error) {
	if err := checkPositive("det", "mean", mean); err != nil {
		return nil, err
	}
	return &Deterministic{mean: mean}, nil
}

// Sample returns the mean without touching s.
func (d *Deterministic) Sample(*rng.Stream) float64 { return d.mean }

// Mean returns the constant.
func (d *Deterministic) Mean() float64 { return d.mean }

// SCV returns 0.
func (d *Deterministic) SCV() float64 { return 0 }

// CDF is the unit step at the mean.
func (d *Deterministic) CDF(x float64) float64 {
	if x >= d.mean {
		return 1
	}
	return 0
}

func (d *Deterministic) String() string { return "det(mean=" + ff(d.mean) + ")" }

// Uniform is the continuous uniform distribution on [low, high] (Spec name
// "uniform"). One uniform per variate.
type Uniform struct {
	low, high, width float64
}

// NewUniform returns the uniform distribution on [low, high] with
// 0 <= low < high (a degenerate interval is rejected: use det).
func NewUniform(low, high float64) (*Uniform, error) {
	const name = "uniform"
	if err := checkNonNegative(name, "low", low); err != nil {
		return nil, err
	}
	if !finite(high) {
		return nil, fieldErr(name, "high", "must be a finite number, got %s", ff(high))
	}
	if !(high > low) {
		if high == low {
			return nil, fieldErr(name, "high", "must be > low (%s); for a constant use dist \"det\"", ff(low))
		}
		return nil, fieldErr(name, "high", "must be > low (%s), got %s", ff(low), ff(high))
	}
	w := high - low
	if math.IsInf(w, 0) {
		return nil, overflowErr(name, "high")
	}
	return &Uniform{low: low, high: high, width: w}, nil
}

// Sample returns low + (high − low)·U.
func (d *Uniform) Sample(s *rng.Stream) float64 { return d.low + d.width*s.Float64() }

// Mean returns (low + high)/2.
func (d *Uniform) Mean() float64 { return d.low/2 + d.high/2 }

// SCV returns (high − low)²/(3(high + low)²).
func (d *Uniform) SCV() float64 {
	r := d.width / 2 / d.Mean() // half-width over mean, overflow-free
	return r * r / 3
}

// CDF returns (x − low)/(high − low) clamped to [0, 1].
func (d *Uniform) CDF(x float64) float64 {
	switch {
	case x <= d.low:
		return 0
	case x >= d.high:
		return 1
	}
	return (x - d.low) / d.width
}

func (d *Uniform) String() string {
	return "uniform(low=" + ff(d.low) + ", high=" + ff(d.high) + ")"
}
