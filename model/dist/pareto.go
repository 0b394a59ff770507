package dist

import (
	"math"

	"github.com/msjfarm/msjfarm/sim/rng"
)

// BoundedPareto is the bounded Pareto distribution with shape α > 0 on
// [L, H], 0 < L < H (Spec name "bpareto", alias "bounded-pareto"):
//
//	F(x) = (1 − (L/x)^α) / (1 − (L/H)^α),  L <= x <= H.
//
// With t = ln(H/L), r = (L/H)^α = e^{−αt} and q = 1 − r, the mean is
//
//	α ≠ 1:  E[X] = α L^α (H^{1−α} − L^{1−α}) / ((1−α) q)
//	        = L · α/(α−1) · (1 − e^{−(α−1)t}) / q          (written so for α > 1)
//	        = H · α/(1−α) · r · (1 − e^{−(1−α)t}) / q      (written so for α < 1)
//	α = 1:  E[X] = L t / q,
//
// each form being free of overflow in its range. As L → 0 with α and H fixed,
// E[X] → 0 for every α > 0 (L·α/(α−1), L ln(H/L) and H·α/(1−α)·(L/H)^α all
// vanish), and E[X] → H as L → H; E[X] is increasing in L. So for
// [NewBoundedParetoMean] every mean in (0, H) has exactly one L.
//
// Sampling is by inversion with one uniform: with V uniform on (0, 1),
// X = L·(r + V q)^{−1/α} (this is F⁻¹(1 − V); the sum r + Vq has no
// cancellation, unlike 1 − Uq). α = 1, 2 and 1/2 take exact shortcuts
// (a division, a square root, a square); other α use exp(−ln(·)/α).
type BoundedPareto struct {
	alpha, low, high float64
	mean, scv        float64
	r, q             float64 // (L/H)^α and 1 − (L/H)^α
	nia              float64 // −1/α
	kind             uint8   // sampling shortcut, see bpKind*
}

const (
	bpKindGeneral uint8 = iota
	bpKindOne           // α = 1
	bpKindTwo           // α = 2
	bpKindHalf          // α = 1/2
)

// logRatio returns ln(a/b) for 0 < b <= a accurately, also when a/b is close
// to 1 or overflows.
func logRatio(a, b float64) float64 {
	ratio := a / b
	switch {
	case ratio < 2:
		return math.Log1p((a - b) / b) // a − b is exact here (Sterbenz)
	case math.IsInf(ratio, 0):
		return math.Log(a) - math.Log(b)
	}
	return math.Log(ratio)
}

// bpMean is E[X] of the bounded Pareto (α, L, H); see the type documentation.
func bpMean(alpha, low, high float64) float64 {
	t := logRatio(high, low)
	q := -math.Expm1(-alpha * t)
	switch {
	case alpha > 1:
		return low * (alpha / (alpha - 1) * -math.Expm1(-(alpha-1)*t) / q)
	case alpha < 1:
		return high * (alpha / (1 - alpha) * math.Exp(-alpha*t) * -math.Expm1(-(1-alpha)*t) / q)
	}
	return low * (t / q)
}

// bpLogMoment returns ln(E[X^j]/L^j) for X bounded Pareto with shape α on
// [1, e^t]:  E[X^j] = α/q · ∫_1^{e^t} x^{j−1−α} dx, evaluated in logs so that
// no power of H/L overflows.
func bpLogMoment(j, alpha, t, lnq float64) float64 {
	b := j - alpha
	var li float64 // ln ∫_1^{e^t} x^{b−1} dx
	switch {
	case b > 0:
		li = b*t + math.Log(-math.Expm1(-b*t)) - math.Log(b)
	case b < 0:
		li = math.Log(-math.Expm1(b*t)) - math.Log(-b)
	default:
		li = math.Log(t)
	}
	return math.Log(alpha) - lnq + li
}

// NewBoundedPareto returns the bounded Pareto distribution with shape
// alpha > 0 on [low, high], 0 < low < high.
func NewBoundedPareto(alpha, low, high float64) (*BoundedPareto, error) {
	const name = "bpareto"
	if err := checkPositive(name, "alpha", alpha); err != nil {
		return nil, err
	}
	if err := checkPositive(name, "low", low); err != nil {
		return nil, err
	}
	if err := checkPositive(name, "high", high); err != nil {
		return nil, err
	}
	if !(high > low) {
		return nil, fieldErr(name, "high", "must be > low (%s), got %s", ff(low), ff(high))
	}
	return newBP(name, alpha, low, high)
}

func newBP(name string, alpha, low, high float64) (*BoundedPareto, error) {
	t := logRatio(high, low)
	q := -math.Expm1(-alpha * t)
	d := &BoundedPareto{
		alpha: alpha, low: low, high: high,
		mean: bpMean(alpha, low, high),
		r:    math.Exp(-alpha * t),
		q:    q,
		nia:  -1 / alpha,
	}
	switch alpha {
	case 1:
		d.kind = bpKindOne
	case 2:
		d.kind = bpKindTwo
	case 0.5:
		d.kind = bpKindHalf
	}
	// q must be a normal number (else 1 − r and the CDF lose all precision)
	// and −1/α finite; both only fail for α or ln(H/L) below ~1e−300.
	if !(q >= 0x1p-1022) || !finite(d.nia) || !finite(d.mean) || !(d.mean > 0) {
		return nil, fieldErr(name, "alpha", "(%s) with low %s and high %s is outside the numerically representable range", ff(alpha), ff(low), ff(high))
	}
	lnq := math.Log(q)
	// SCV = E[X²]/E[X]² − 1 = expm1(ln E[X²] − 2 ln E[X]), scale-free (L = 1).
	scv := math.Expm1(bpLogMoment(2, alpha, t, lnq) - 2*bpLogMoment(1, alpha, t, lnq))
	if !(scv >= 0) { // rounding when H ≈ L
		scv = 0
	}
	d.scv = scv
	return d, nil
}

// NewBoundedParetoMean returns the bounded Pareto distribution with shape
// alpha > 0, upper bound high and the given mean, 0 < mean < high; the lower
// bound L is solved for by bisection over the float64 values in (0, high),
// which ends with L within one unit in the last place of the solution. Mean
// reports the requested mean.
func NewBoundedParetoMean(alpha, mean, high float64) (*BoundedPareto, error) {
	const name = "bpareto"
	if err := checkPositive(name, "alpha", alpha); err != nil {
		return nil, err
	}
	if err := checkPositive(name, "mean", mean); err != nil {
		return nil, err
	}
	if err := checkPositive(name, "high", high); err != nil {
		return nil, err
	}
	if !(mean < high) {
		return nil, fieldErr(name, "mean", "must be < high (%s), got %s: a bounded Pareto on [low, high] has mean in (0, high)", ff(high), ff(mean))
	}
	// Invariant: bpMean(lo) < mean <= bpMean(hi), with bpMean(high) taken as
	// high. Positive float64 values are ordered as their bit patterns, so
	// bisecting the bits reaches adjacent floats in at most 64 steps.
	lo, hi := math.Float64bits(0x1p-1022), math.Float64bits(high)
	if !(bpMean(alpha, math.Float64frombits(lo), high) < mean) {
		return nil, fieldErr(name, "mean", "is too small (%s) for alpha %s and high %s: low would underflow", ff(mean), ff(alpha), ff(high))
	}
	for hi-lo > 1 {
		mid := lo + (hi-lo)/2
		if bpMean(alpha, math.Float64frombits(mid), high) < mean {
			lo = mid
		} else {
			hi = mid
		}
	}
	low := math.Float64frombits(lo)
	if hi != math.Float64bits(high) {
		lh := math.Float64frombits(hi)
		if math.Abs(bpMean(alpha, lh, high)-mean) <= math.Abs(bpMean(alpha, low, high)-mean) {
			low = lh
		}
	}
	d, err := newBP(name, alpha, low, high)
	if err != nil {
		return nil, err
	}
	if !(math.Abs(d.mean-mean) <= 1e-9*mean) {
		return nil, fieldErr(name, "mean", "%s cannot be reached with alpha %s and high %s (closest: %s at low %s)", ff(mean), ff(alpha), ff(high), ff(d.mean), ff(low))
	}
	d.mean = mean
	return d, nil
}

// Sample returns L·(r + V(1−r))^{−1/α} for one uniform V.
func (d *BoundedPareto) Sample(s *rng.Stream) float64 {
	y := d.r + d.q*s.Float64()
	var x float64
	switch d.kind {
	case bpKindOne:
		x = d.low / y
	case bpKindTwo:
		x = d.low / math.Sqrt(y)
	case bpKindHalf:
		x = d.low / (y * y)
	default:
		x = d.low * math.Exp(math.Log(y)*d.nia)
	}
	// Rounding can step a hair outside [L, H]; keep the support exact.
	if !(x <= d.high) {
		x = d.high
	}
	if x < d.low {
		x = d.low
	}
	return x
}

// Mean returns E[X] (the requested mean when built by [NewBoundedParetoMean]).
func (d *BoundedPareto) Mean() float64 { return d.mean }

// SCV returns Var/E[X]² (always finite).
func (d *BoundedPareto) SCV() float64 { return d.scv }

// Params returns α, L and H (L as solved for when built from a mean).
func (d *BoundedPareto) Params() (alpha, low, high float64) { return d.alpha, d.low, d.high }

// CDF returns (1 − (L/x)^α)/(1 − (L/H)^α) on [L, H].
func (d *BoundedPareto) CDF(x float64) float64 {
	switch {
	case !(x > d.low):
		return 0
	case x >= d.high:
		return 1
	}
	return -math.Expm1(-d.alpha*logRatio(x, d.low)) / d.q
}

func (d *BoundedPareto) String() string {
	return "bpareto(alpha=" + ff(d.alpha) + ", low=" + ff(d.low) + ", high=" + ff(d.high) + ")"
}
