package dist

import (
	"errors"
	"strings"
)

// Spec fields as a bit set, in the order in which Build reports them.
type fieldSet uint16

const (
	fMean fieldSet = 1 << iota
	fSCV
	fLow
	fHigh
	fAlpha
	fShape
	fScale
	fSamples
	numFields = iota
)

var fieldNames = [numFields]string{"mean", "scv", "low", "high", "alpha", "shape", "scale", "samples"}

func (fs fieldSet) names() string {
	var b strings.Builder
	for i, n := range fieldNames {
		if fs&(1<<i) != 0 {
			if b.Len() > 0 {
				b.WriteString(", ")
			}
			b.WriteString(n)
		}
	}
	return b.String()
}

// knownDists are the canonical names with the fields each may take, in the
// order of the Spec documentation.
var knownDists = []struct {
	name   string
	fields fieldSet
}{
	{"exp", fMean},
	{"det", fMean},
	{"uniform", fLow | fHigh},
	{"lognormal", fMean | fSCV},
	{"hyperexp", fMean | fSCV},
	{"bpareto", fAlpha | fLow | fHigh | fMean},
	{"frechet", fAlpha | fScale | fMean},
	{"weibull", fShape | fScale | fMean},
	{"empirical", fSamples},
}

// Aliases accepted by Build in addition to the canonical names.
var distAliases = map[string]string{
	"exponential":      "exp",
	"deterministic":    "det",
	"hyperexponential": "hyperexp",
	"bounded-pareto":   "bpareto",
}

// Names returns the canonical distribution names accepted by [Spec.Build], in
// the order of the Spec documentation. Build also accepts the aliases
// "exponential", "deterministic", "hyperexponential" and "bounded-pareto".
func Names() []string {
	out := make([]string, len(knownDists))
	for i, k := range knownDists {
		out[i] = k.name
	}
	return out
}

func (sp *Spec) present() fieldSet {
	var fs fieldSet
	for i, p := range []*float64{sp.Mean, sp.SCV, sp.Low, sp.High, sp.Alpha, sp.Shape, sp.Scale} {
		if p != nil {
			fs |= 1 << i
		}
	}
	if sp.Samples != nil {
		fs |= fSamples
	}
	return fs
}

// Build validates sp and returns the distribution it describes. Names are
// matched exactly (case-sensitive): the canonical names of the Spec table and
// the aliases listed at [Names]. Build rejects an unknown name, a field the
// distribution does not use, a missing field, both or neither of two
// alternative fields (bpareto low/mean, frechet and weibull scale/mean), and
// any value that is NaN, infinite or out of range; the error is a
// *[FieldError] naming the field. Build never panics.
//
// The mapping to constructors is:
//
//	exp        NewExponential(mean)
//	det        NewDeterministic(mean)
//	uniform    NewUniform(low, high)
//	lognormal  NewLognormal(mean, scv)
//	hyperexp   NewHyperExp(mean, scv)
//	bpareto    NewBoundedPareto(alpha, low, high) or NewBoundedParetoMean(alpha, mean, high)
//	frechet    NewFrechet(alpha, scale)           or NewFrechetMean(alpha, mean)
//	weibull    NewWeibull(shape, scale)           or NewWeibullMean(shape, mean)
//	empirical  NewEmpirical(samples)
func (sp Spec) Build() (Dist, error) {
	d, err := sp.build()
	if err != nil {
		var fe *FieldError
		if errors.As(err, &fe) && fe.Field != "dist" {
			fe.Dist = sp.Dist // report the name as the user wrote it
		}
		return nil, err
	}
	return d, nil
}

func (sp *Spec) build() (Dist, error) {
	name := sp.Dist
	if c, ok := distAliases[name]; ok {
		name = c
	}
	var allowed fieldSet
	found := false
	for _, k := range knownDists {
		if k.name == name {
			allowed, found = k.fields, true
			break
		}
	}
	if !found {
		known := strings.Join(Names(), ", ")
		if sp.Dist == "" {
			return nil, &FieldError{Field: "dist", Msg: `field "dist" is required (known: ` + known + ")"}
		}
		return nil, &FieldError{Dist: sp.Dist, Field: "dist", Msg: `unknown dist "` + sp.Dist + `" (known: ` + known + ")"}
	}
	have := sp.present()
	for i, n := range fieldNames {
		if bit := fieldSet(1 << i); have&bit != 0 && allowed&bit == 0 {
			return nil, fieldErr(name, n, "is not used by this distribution (it takes: %s)", allowed.names())
		}
	}
	need := func(fields ...string) error {
		for _, f := range fields {
			for i, n := range fieldNames {
				if n == f && have&(1<<i) == 0 {
					return fieldErr(name, f, "is required")
				}
			}
		}
		return nil
	}
	// oneOf checks that exactly one of the alternative fields a, b is given.
	oneOf := func(a, b string, fa, fb fieldSet) error {
		switch {
		case have&fa != 0 && have&fb != 0:
			return fieldErr(name, a, "and field %q are alternatives: give only one", b)
		case have&fa == 0 && have&fb == 0:
			return &FieldError{Dist: name, Field: a, Msg: `field "` + a + `" or field "` + b + `" is required`}
		}
		return nil
	}

	switch name {
	case "exp", "det":
		if err := need("mean"); err != nil {
			return nil, err
		}
		if name == "exp" {
			return as(NewExponential(*sp.Mean))
		}
		return as(NewDeterministic(*sp.Mean))
	case "uniform":
		if err := need("low", "high"); err != nil {
			return nil, err
		}
		return as(NewUniform(*sp.Low, *sp.High))
	case "lognormal", "hyperexp":
		if err := need("mean", "scv"); err != nil {
			return nil, err
		}
		if name == "lognormal" {
			return as(NewLognormal(*sp.Mean, *sp.SCV))
		}
		return as(NewHyperExp(*sp.Mean, *sp.SCV))
	case "bpareto":
		if err := need("alpha"); err != nil {
			return nil, err
		}
		if err := oneOf("low", "mean", fLow, fMean); err != nil {
			return nil, err
		}
		if err := need("high"); err != nil {
			return nil, err
		}
		if sp.Low != nil {
			return as(NewBoundedPareto(*sp.Alpha, *sp.Low, *sp.High))
		}
		return as(NewBoundedParetoMean(*sp.Alpha, *sp.Mean, *sp.High))
	case "frechet":
		if err := need("alpha"); err != nil {
			return nil, err
		}
		if err := oneOf("scale", "mean", fScale, fMean); err != nil {
			return nil, err
		}
		if sp.Scale != nil {
			return as(NewFrechet(*sp.Alpha, *sp.Scale))
		}
		return as(NewFrechetMean(*sp.Alpha, *sp.Mean))
	case "weibull":
		if err := need("shape"); err != nil {
			return nil, err
		}
		if err := oneOf("scale", "mean", fScale, fMean); err != nil {
			return nil, err
		}
		if sp.Scale != nil {
			return as(NewWeibull(*sp.Shape, *sp.Scale))
		}
		return as(NewWeibullMean(*sp.Shape, *sp.Mean))
	default: // "empirical"
		return as(NewEmpirical(sp.Samples))
	}
}

// as converts a constructor's (*T, error) into (Dist, error) without the
// non-nil-interface-holding-nil-pointer trap.
func as[D Dist](d D, err error) (Dist, error) {
	if err != nil {
		return nil, err
	}
	return d, nil
}
