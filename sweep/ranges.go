package sweep

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/msjfarm/msjfarm/model/dist"
	"github.com/msjfarm/msjfarm/model/workload"
)

// The range of magnitudes msjfarm accepts for a rate, a mean, a time or a
// time scale, in the sweep's own time unit. Beyond it the engine's
// arithmetic degrades long before it overflows: a clock near 1e12 time
// units keeps only about four decimal digits of a unit-size service time,
// and a rate of 1e308 or a mean of 1e-320 makes infinite or zero times,
// whose results cannot even be encoded (such sweeps used to fail five
// times over on the workers as "does not encode as JSON"). Twelve orders
// of magnitude either way leave every published workload room (service
// means of seconds to months, rates per second or per day); a sweep
// outside it is refused at submit with the field and the bound, and the
// fix is to change the time unit.
const (
	MinMagnitude = 1e-12
	MaxMagnitude = 1e12
)

// checkMagnitude refuses a nonzero x (zero and negative values are other
// checks' business) outside [MinMagnitude, MaxMagnitude].
func checkMagnitude(path string, x float64) error {
	if a := math.Abs(x); x != 0 && !(a >= MinMagnitude && a <= MaxMagnitude) {
		e := fieldErr(path, nil, "%v is outside [%g, %g], the range of rates, means and times msjfarm accepts (choose another time unit to bring it in range)", x, MinMagnitude, MaxMagnitude)
		e.num = &x
		return e
	}
	return nil
}

// checkDistRanges checks the time-valued and dimensionless fields of a
// distribution (mean, low, high, scale, scv and the empirical samples;
// alpha and shape are exponents, which the distribution checks).
func checkDistRanges(path string, s *dist.Spec) error {
	if s == nil {
		return nil
	}
	for _, f := range []struct {
		name string
		v    *float64
	}{{"mean", s.Mean}, {"low", s.Low}, {"high", s.High}, {"scale", s.Scale}, {"scv", s.SCV}} {
		if f.v != nil {
			if err := checkMagnitude(path+"."+f.name, *f.v); err != nil {
				return err
			}
		}
	}
	for i, x := range s.Samples {
		if err := checkMagnitude(fmt.Sprintf("%s.samples[%d]", path, i), x); err != nil {
			return err
		}
	}
	return nil
}

// checkClassRanges checks every class's service distribution at a point,
// naming the axis that set a field when one did, else the class in the
// file (or the workload, for a named one).
func checkClassRanges(f *File, spec workload.Spec, vals map[string]any) error {
	for i := range spec.Classes {
		c := &spec.Classes[i]
		if err := checkDistRanges(fmt.Sprintf("class[%d].service", i), &c.Service); err != nil {
			e := err.(*Error)
			switch {
			case vals[e.Path] != nil:
				e.Path = "axes." + e.Path
			case len(f.Classes) > 0:
				e.Path = "classes" + e.Path[len("class"):]
			default:
				e.Msg = e.Path + ": " + e.Msg
				e.Path = "workload"
			}
			return e
		}
	}
	return nil
}

// checkDistName refuses an unknown distribution name with the nearest
// known ones, at the dist key (the distribution's own error, later, names
// only the class).
func checkDistName(path string, s *dist.Spec) error {
	if s == nil || slices.Contains(dist.Names(), s.Dist) {
		return nil
	}
	if s.Dist == "" {
		return missingErr(path+".dist", "required: the distribution, one of %s", strings.Join(dist.Names(), ", "))
	}
	return unknownName(path+".dist", "distribution", s.Dist, dist.Names(), "known", "")
}
