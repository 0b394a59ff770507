package dist

import (
	"math"

	"github.com/msjfarm/msjfarm/sim/rng"
)

// logDiv returns ln(x/s) for x, s > 0, also when x/s over- or underflows.
func logDiv(x, s float64) float64 {
	if r := x / s; r > 0 && !math.IsInf(r, 0) {
		return math.Log(r)
	}
	return math.Log(x) - math.Log(s)
}

// gammaOf returns Γ(x) and ln Γ(x) for x > 0 (Γ may be +Inf where ln Γ is
// still finite).
func gammaOf(x float64) (g, lg float64) {
	lg, _ = math.Lgamma(x)
	return math.Gamma(x), lg
}

// gammaRatioSCV returns Γ(b)/Γ(a)² − 1, through logs when Γ(b) overflows.
func gammaRatioSCV(a, b float64) float64 {
	ga, lga := gammaOf(a)
	gb, lgb := gammaOf(b)
	if finite(ga) && finite(gb) {
		return gb/(ga*ga) - 1
	}
	return math.Expm1(lgb - 2*lga)
}

// Frechet is the Fréchet distribution with shape α > 1, scale s > 0 and
// location 0 (Spec name "frechet"):
//
//	F(x) = exp(−(x/s)^{−α}),  x > 0;   E[X] = s Γ(1 − 1/α);
//	SCV = Γ(1 − 2/α)/Γ(1 − 1/α)² − 1 for α > 2, +Inf for α <= 2.
//
// α > 1 is required so that the mean is finite. Sampling transforms one
// standard exponential E = s.Exp(): X = s·E^{−1/α} (α = 2 takes the shortcut
// s/√E); with E = −ln U this is inversion, F⁻¹(U).
type Frechet struct {
	alpha, scale, mean, scv float64
	nia                     float64 // −1/α
	two                     bool    // α == 2
}

// NewFrechet returns the Fréchet distribution with shape alpha > 1 and the
// given scale > 0.
func NewFrechet(alpha, scale float64) (*Frechet, error) {
	const name = "frechet"
	if err := checkFrechetAlpha(alpha); err != nil {
		return nil, err
	}
	if err := checkPositive(name, "scale", scale); err != nil {
		return nil, err
	}
	g, _ := gammaOf(1 - 1/alpha)
	return newFrechet(alpha, scale, scale*g, "scale", scale)
}

// NewFrechetMean returns the Fréchet distribution with shape alpha > 1 and the
// given mean > 0 (scale = mean/Γ(1 − 1/α)). Mean reports the requested mean.
func NewFrechetMean(alpha, mean float64) (*Frechet, error) {
	const name = "frechet"
	if err := checkFrechetAlpha(alpha); err != nil {
		return nil, err
	}
	if err := checkPositive(name, "mean", mean); err != nil {
		return nil, err
	}
	g, lg := gammaOf(1 - 1/alpha)
	scale := mean / g
	if !finite(g) || scale == 0 { // Γ overflows for α within ~1e-308 of 1
		scale = math.Exp(math.Log(mean) - lg)
	}
	return newFrechet(alpha, scale, mean, "mean", mean)
}

func checkFrechetAlpha(alpha float64) error {
	if !finite(alpha) {
		return fieldErr("frechet", "alpha", "must be a finite number, got %s", ff(alpha))
	}
	if !(alpha > 1) {
		return fieldErr("frechet", "alpha", "must be > 1 (the mean is infinite otherwise), got %s", ff(alpha))
	}
	return nil
}

func newFrechet(alpha, scale, mean float64, field string, given float64) (*Frechet, error) {
	const name = "frechet"
	if !finite(mean) { // from NewFrechet: s·Γ(1 − 1/α) overflows
		return nil, fieldErr(name, field, "is too large (%s) for alpha %s: the mean would overflow float64", ff(given), ff(alpha))
	}
	if !(scale > 0) || !finite(scale) { // from NewFrechetMean: m/Γ(1 − 1/α) underflows
		return nil, fieldErr(name, field, "is too small (%s) for alpha %s: the scale would underflow", ff(given), ff(alpha))
	}
	// Largest sample: s·(−ln(1 − 2⁻⁵⁴))^{−1/α} ≈ s·2^{54/α}.
	if math.Log(scale)-minExpLog/alpha >= logMaxF64 {
		return nil, overflowErr(name, field)
	}
	scv := math.Inf(1)
	if alpha > 2 {
		scv = gammaRatioSCV(1-1/alpha, 1-2/alpha)
	}
	return &Frechet{alpha: alpha, scale: scale, mean: mean, scv: scv, nia: -1 / alpha, two: alpha == 2}, nil
}

// Sample returns s·E^{−1/α}, E = s.Exp().
func (d *Frechet) Sample(s *rng.Stream) float64 {
	e := s.Exp()
	if d.two {
		return d.scale / math.Sqrt(e)
	}
	return d.scale * math.Exp(math.Log(e)*d.nia)
}

// Mean returns s Γ(1 − 1/α) (the requested mean when built from a mean).
func (d *Frechet) Mean() float64 { return d.mean }

// SCV returns Γ(1 − 2/α)/Γ(1 − 1/α)² − 1, or +Inf for α <= 2.
func (d *Frechet) SCV() float64 { return d.scv }

// Params returns α and the scale s.
func (d *Frechet) Params() (alpha, scale float64) { return d.alpha, d.scale }

// CDF returns exp(−(x/s)^{−α}) for x > 0.
func (d *Frechet) CDF(x float64) float64 {
	if !(x > 0) {
		return 0
	}
	return math.Exp(-math.Exp(-d.alpha * logDiv(x, d.scale)))
}

func (d *Frechet) String() string {
	return "frechet(alpha=" + ff(d.alpha) + ", scale=" + ff(d.scale) + ")"
}

// Weibull is the Weibull distribution with shape k > 0 and scale λ > 0
// (Spec name "weibull"):
//
//	F(x) = 1 − exp(−(x/λ)^k),  x >= 0;   E[X] = λ Γ(1 + 1/k);
//	SCV = Γ(1 + 2/k)/Γ(1 + 1/k)² − 1.
//
// Shape 1 is the exponential with mean λ. Sampling transforms one standard
// exponential: X = λ·E^{1/k} with E = s.Exp(), so shape 1 reproduces the
// exponential's variates bit for bit; k = 1/2 and 2 take the shortcuts λE² and
// λ√E, other k use exp(ln λ + ln(E)/k), which cannot overflow in an
// intermediate step.
type Weibull struct {
	shape, scale, mean, scv float64
	lnScale, invK           float64
	kind                    uint8 // 0 general, 1: k=1, 2: k=2, 3: k=1/2
}

// NewWeibull returns the Weibull distribution with the given shape > 0 and
// scale > 0.
func NewWeibull(shape, scale float64) (*Weibull, error) {
	const name = "weibull"
	if err := checkPositive(name, "shape", shape); err != nil {
		return nil, err
	}
	if err := checkPositive(name, "scale", scale); err != nil {
		return nil, err
	}
	g, lg := gammaOf(1 + 1/shape)
	mean := scale * g
	if !finite(mean) {
		mean = math.Exp(math.Log(scale) + lg)
	}
	return newWeibull(shape, scale, mean, "scale", scale)
}

// NewWeibullMean returns the Weibull distribution with the given shape > 0
// and mean > 0 (scale = mean/Γ(1 + 1/k)). Mean reports the requested mean.
func NewWeibullMean(shape, mean float64) (*Weibull, error) {
	const name = "weibull"
	if err := checkPositive(name, "shape", shape); err != nil {
		return nil, err
	}
	if err := checkPositive(name, "mean", mean); err != nil {
		return nil, err
	}
	g, lg := gammaOf(1 + 1/shape)
	scale := mean / g
	if !finite(g) || scale == 0 {
		scale = math.Exp(math.Log(mean) - lg)
	}
	return newWeibull(shape, scale, mean, "mean", mean)
}

func newWeibull(shape, scale, mean float64, field string, given float64) (*Weibull, error) {
	const name = "weibull"
	// Largest sample: λ·maxExp^{1/k}; its log is ln λ + ln(maxExp)/k.
	growth := math.Log(maxExp) / shape
	if growth >= logMaxF64-1 {
		return nil, fieldErr(name, "shape", "is too small (%s): samples would overflow float64", ff(shape))
	}
	if !finite(mean) || !finite(scale) || math.Log(scale)+growth >= logMaxF64 {
		return nil, fieldErr(name, field, "is too large (%s) for shape %s: the largest possible sample would overflow float64", ff(given), ff(shape))
	}
	if !(scale > 0) || !(mean > 0) {
		other := "scale"
		if field == "scale" {
			other = "mean"
		}
		return nil, fieldErr(name, field, "is too small (%s) for shape %s: the %s would underflow", ff(given), ff(shape), other)
	}
	d := &Weibull{
		shape: shape, scale: scale, mean: mean,
		scv:     gammaRatioSCV(1+1/shape, 1+2/shape),
		lnScale: math.Log(scale), invK: 1 / shape,
	}
	switch shape {
	case 1:
		d.kind = 1
	case 2:
		d.kind = 2
	case 0.5:
		d.kind = 3
	}
	return d, nil
}

// Sample returns λ·E^{1/k} with E = s.Exp().
func (d *Weibull) Sample(s *rng.Stream) float64 {
	e := s.Exp()
	switch d.kind {
	case 1:
		return d.scale * e
	case 2:
		return d.scale * math.Sqrt(e)
	case 3:
		return d.scale * (e * e)
	}
	return math.Exp(d.lnScale + math.Log(e)*d.invK)
}

// Mean returns λ Γ(1 + 1/k) (the requested mean when built from a mean).
func (d *Weibull) Mean() float64 { return d.mean }

// SCV returns Γ(1 + 2/k)/Γ(1 + 1/k)² − 1.
func (d *Weibull) SCV() float64 { return d.scv }

// Params returns the shape k and the scale λ.
func (d *Weibull) Params() (shape, scale float64) { return d.shape, d.scale }

// CDF returns 1 − exp(−(x/λ)^k) for x > 0.
func (d *Weibull) CDF(x float64) float64 {
	if !(x > 0) {
		return 0
	}
	return -math.Expm1(-math.Exp(d.shape * logDiv(x, d.scale)))
}

func (d *Weibull) String() string {
	return "weibull(shape=" + ff(d.shape) + ", scale=" + ff(d.scale) + ")"
}
