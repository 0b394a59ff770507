package dist

import (
	"fmt"
	"math"
	"strconv"

	"github.com/msjfarm/msjfarm/sim/rng"
)

// FieldError is the error returned by [Spec.Build] and by every constructor of
// this package. It names the distribution and the offending [Spec] field, so a
// sweep file can be corrected without reading code, e.g.
//
//	dist "lognormal": field "scv" must be > 0, got -1
//	dist "exp": field "scv" is not used by this distribution (it takes: mean)
//	unknown dist "expo" (known: exp, det, uniform, ...)
type FieldError struct {
	// Dist is the distribution name as written in the Spec (the canonical name
	// when the error comes from a constructor).
	Dist string
	// Field is the Spec field at fault ("mean", "scv", ...), or "dist" when the
	// name itself is unknown or missing.
	Field string
	// Msg is the complete explanation after the `dist "X": ` prefix.
	Msg string
}

func (e *FieldError) Error() string {
	if e.Field == "dist" {
		return e.Msg
	}
	return fmt.Sprintf("dist %q: %s", e.Dist, e.Msg)
}

// fieldErr builds a FieldError whose message starts with `field "<field>" `.
func fieldErr(dist, field, format string, args ...any) *FieldError {
	return &FieldError{Dist: dist, Field: field, Msg: fmt.Sprintf("field %q ", field) + fmt.Sprintf(format, args...)}
}

// ff formats a float for messages and String methods: shortest exact form.
func ff(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }

func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

// checkPositive requires v to be finite and > 0.
func checkPositive(dist, field string, v float64) error {
	if !finite(v) {
		return fieldErr(dist, field, "must be a finite number, got %s", ff(v))
	}
	if v <= 0 {
		return fieldErr(dist, field, "must be > 0, got %s", ff(v))
	}
	return nil
}

// checkNonNegative requires v to be finite and >= 0.
func checkNonNegative(dist, field string, v float64) error {
	if !finite(v) {
		return fieldErr(dist, field, "must be a finite number, got %s", ff(v))
	}
	if v < 0 {
		return fieldErr(dist, field, "must be >= 0, got %s", ff(v))
	}
	return nil
}

// Extreme values of the variates. The uniforms of rng.Stream.Float64 lie on
// the grid (i + 0.5)/2⁵³, from 2⁻⁵⁴ to 1 − 2⁻⁵⁴, so a Box–Muller normal lies in
// [−maxNormal, maxNormal]; a unit exponential from rng.Stream.Exp (the
// ziggurat) lies in [minExp, maxExp] (rng.ExpBounds: ≈ 3.5e−18 to ≈ 45.1).
// Constructors use these bounds to reject parameters whose largest possible
// sample would overflow to +Inf.
const logMaxF64 = 709.782712893384 // ln(math.MaxFloat64), rounded down

var (
	minExp, maxExp = rng.ExpBounds()
	minExpLog      = math.Log(minExp)
	maxNormal      = math.Sqrt(2 * 54 * math.Ln2) // √(−2 ln 2⁻⁵⁴) ≈ 8.65
)

// overflowErr is the error for parameters whose largest sample is not finite.
func overflowErr(dist, field string) error {
	return fieldErr(dist, field, "is too large: the largest possible sample would overflow float64")
}

// Must returns d, or panics with err. It is meant for literals in Go code and
// tests, e.g. dist.Must(dist.NewExponential(1)); sweep files go through
// [Spec.Build], which never panics.
func Must[D Dist](d D, err error) D {
	if err != nil {
		panic(err)
	}
	return d
}
