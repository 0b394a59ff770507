package dist

import (
	"math"

	"github.com/msjfarm/msjfarm/sim/rng"
)

// Lognormal is the lognormal distribution given by its mean m and squared
// coefficient of variation c (Spec name "lognormal"): X = exp(μ + σZ) with
//
//	σ² = ln(1 + c),  μ = ln m − σ²/2,
//
// so that E[X] = exp(μ + σ²/2) = m and Var/m² = exp(σ²) − 1 = c. Each variate
// consumes one standard normal, i.e. exactly two uniforms (rng Box–Muller).
type Lognormal struct {
	mean, scv, mu, sigma float64
}

// NewLognormal returns the lognormal distribution with mean > 0 and scv > 0.
func NewLognormal(mean, scv float64) (*Lognormal, error) {
	const name = "lognormal"
	if err := checkPositive(name, "mean", mean); err != nil {
		return nil, err
	}
	if !finite(scv) {
		return nil, fieldErr(name, "scv", "must be a finite number, got %s", ff(scv))
	}
	if scv <= 0 {
		if scv == 0 {
			return nil, fieldErr(name, "scv", "must be > 0, got 0; for a constant use dist \"det\"")
		}
		return nil, fieldErr(name, "scv", "must be > 0, got %s", ff(scv))
	}
	s2 := math.Log1p(scv)
	d := &Lognormal{mean: mean, scv: scv, mu: math.Log(mean) - s2/2, sigma: math.Sqrt(s2)}
	if d.mu+d.sigma*maxNormal >= logMaxF64 {
		return nil, overflowErr(name, "mean")
	}
	return d, nil
}

// Sample returns exp(μ + σ·Z) with Z = s.Normal().
func (d *Lognormal) Sample(s *rng.Stream) float64 {
	return math.Exp(d.mu + d.sigma*s.Normal())
}

// Mean returns m.
func (d *Lognormal) Mean() float64 { return d.mean }

// SCV returns c.
func (d *Lognormal) SCV() float64 { return d.scv }

// Params returns μ and σ of the underlying normal.
func (d *Lognormal) Params() (mu, sigma float64) { return d.mu, d.sigma }

// CDF returns Φ((ln x − μ)/σ) for x > 0.
func (d *Lognormal) CDF(x float64) float64 {
	if !(x > 0) {
		return 0
	}
	return 0.5 * math.Erfc(-(math.Log(x)-d.mu)/(d.sigma*math.Sqrt2))
}

func (d *Lognormal) String() string {
	return "lognormal(mean=" + ff(d.mean) + ", scv=" + ff(d.scv) + ")"
}

// HyperExp is the two-phase hyperexponential (H2) distribution with mean m and
// squared coefficient of variation c >= 1, with balanced means (Spec name
// "hyperexp", alias "hyperexponential"): with probability p_i the variate is
// exponential with rate μ_i, where p_1/μ_1 = p_2/μ_2 = m/2, i.e.
//
//	p_1 = (1 + √((c−1)/(c+1)))/2,  p_2 = 1 − p_1,  μ_i = 2p_i/m.
//
// Then E[X] = Σ p_i/μ_i = m and E[X²] = Σ 2p_i/μ_i² = m²/(2p_1p_2); since
// p_1p_2 = (1 − (c−1)/(c+1))/4 = 1/(2(c+1)), E[X²]/m² − 1 = c.
// c == 1 gives p_1 = p_2 = 1/2 and μ_1 = μ_2 = 1/m, the exponential.
//
// Each variate consumes exactly two uniforms: one chooses the phase (phase 1
// if U < p_1), the second gives the exponential by inversion. This holds also
// for c == 1, so an H2 stream stays aligned whatever c is.
type HyperExp struct {
	mean, scv      float64
	p1, p2, m1, m2 float64 // m_i = 1/μ_i, the phase means
}

// NewHyperExp returns the balanced-means H2 distribution with mean > 0 and
// scv >= 1.
func NewHyperExp(mean, scv float64) (*HyperExp, error) {
	const name = "hyperexp"
	if err := checkPositive(name, "mean", mean); err != nil {
		return nil, err
	}
	if !finite(scv) {
		return nil, fieldErr(name, "scv", "must be a finite number, got %s", ff(scv))
	}
	if !(scv >= 1) {
		return nil, fieldErr(name, "scv", "must be >= 1 for a hyperexponential, got %s (use lognormal, uniform or det for less variable sizes)", ff(scv))
	}
	// With ρ = √((c−1)/(c+1)): p_2 = (1−ρ)/2 = (1−ρ²)/(2(1+ρ)) = 1/((c+1)(1+ρ)),
	// which avoids the cancellation in 1 − p_1 when c is large.
	rho := math.Sqrt((scv - 1) / (scv + 1))
	p2 := 1 / ((scv + 1) * (1 + rho))
	p1 := (1 + rho) / 2
	m1, m2 := mean/(2*p1), mean/(2*p2)
	if p2 == 0 || !finite(m2) {
		return nil, fieldErr(name, "scv", "is too large (%s): the rare phase's mean would overflow", ff(scv))
	}
	if math.IsInf(m2*maxExp, 0) {
		return nil, overflowErr(name, "mean")
	}
	return &HyperExp{mean: mean, scv: scv, p1: p1, p2: p2, m1: m1, m2: m2}, nil
}

// Sample draws the phase with one uniform and the exponential with another.
func (d *HyperExp) Sample(s *rng.Stream) float64 {
	m := d.m2
	if s.Float64() < d.p1 {
		m = d.m1
	}
	return m * s.Exp()
}

// Mean returns m.
func (d *HyperExp) Mean() float64 { return d.mean }

// SCV returns c.
func (d *HyperExp) SCV() float64 { return d.scv }

// Phases returns the probability of phase 1 and the two rates μ_1, μ_2.
func (d *HyperExp) Phases() (p1, rate1, rate2 float64) { return d.p1, 1 / d.m1, 1 / d.m2 }

// CDF returns 1 − p_1 e^{−μ_1 x} − p_2 e^{−μ_2 x} for x > 0.
func (d *HyperExp) CDF(x float64) float64 {
	if !(x > 0) {
		return 0
	}
	// = p_1(1 − e^{−μ_1 x}) + p_2(1 − e^{−μ_2 x}), accurate for small x.
	return -d.p1*math.Expm1(-x/d.m1) - d.p2*math.Expm1(-x/d.m2)
}

func (d *HyperExp) String() string {
	return "hyperexp(mean=" + ff(d.mean) + ", scv=" + ff(d.scv) + ")"
}
