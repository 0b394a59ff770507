// Package dist holds the service-time and inter-arrival distributions of the
// multiserver-job model (docs/design.md): exponential, deterministic, uniform,
// lognormal and two-phase hyperexponential by mean and C², bounded Pareto,
// Fréchet, Weibull and empirical.
//
// A distribution is described in a sweep file by a [Spec] and turned into a
// sampler by [Spec.Build], which validates every field and names the offending
// one in its error. Sampling draws only from the [rng.Stream] it is given, by
// a fixed composition of the stream's variates, so that results are
// reproducible bit for bit and a parameter change (a mean, a shape) transforms
// the same underlying variates.
//
// Variates consumed per sample:
//
//	uniform, bpareto              1 uniform (inversion)
//	exp, frechet, weibull         1 standard exponential (rng.Stream.Exp, a
//	                              ziggurat: one 64-bit draw 97.8% of the time,
//	                              more on a rejection)
//	det                           0
//	lognormal                     1 Box–Muller normal (2 uniforms)
//	hyperexp                      1 uniform (phase), then 1 standard
//	                              exponential, also for scv = 1
//	empirical                     1 IntN (one 64-bit draw, rarely more)
//
// So exp, frechet and weibull samples are monotone functions of one shared
// standard exponential (weibull of shape 1 is exp bit for bit), coupled across
// their parameters; uniform and bpareto are coupled with each other through
// their uniform, but no longer with the exponential family draw for draw.
//
// Every constructor (NewExponential, ..., NewEmpirical) validates its
// arguments, precomputes all constants, and returns a *FieldError naming the
// Spec field at fault; parameters whose largest possible sample would overflow
// float64 are rejected too, so Sample always returns a finite value >= 0.
// Sample does not allocate. [Must] wraps a constructor for Go literals.
package dist

import "github.com/msjfarm/msjfarm/sim/rng"

// Dist is a non-negative random variable that can be sampled.
type Dist interface {
	// Sample draws one variate from s.
	Sample(s *rng.Stream) float64
	// Mean is the exact mean (finite for every distribution here).
	Mean() float64
	// SCV is the squared coefficient of variation Var/Mean² (may be +Inf).
	SCV() float64
	// String describes the distribution and its parameters, e.g. "exp(mean=1)".
	String() string
}

// CDFer is implemented by distributions with a closed-form or numerical CDF;
// the Gittins-rank policies need it.
type CDFer interface {
	CDF(x float64) float64
}

// Spec is the sweep-file form of a distribution. Which fields apply depends on
// Dist; Build rejects a field that the named distribution does not use.
//
//	exp            mean
//	det            mean                       (deterministic: always mean)
//	uniform        low, high
//	lognormal      mean, scv
//	hyperexp       mean, scv (scv >= 1; two phases with balanced means)
//	bpareto        alpha, low, high   or   alpha, mean, high (low solved for)
//	frechet        alpha, scale       or   alpha, mean       (alpha > 1)
//	weibull        shape, scale       or   shape, mean
//	empirical      samples (resampled uniformly)
type Spec struct {
	Dist    string    `mapstructure:"dist" json:"dist" toml:"dist" yaml:"dist"`
	Mean    *float64  `mapstructure:"mean" json:"mean,omitempty" toml:"mean,omitempty" yaml:"mean,omitempty"`
	SCV     *float64  `mapstructure:"scv" json:"scv,omitempty" toml:"scv,omitempty" yaml:"scv,omitempty"`
	Low     *float64  `mapstructure:"low" json:"low,omitempty" toml:"low,omitempty" yaml:"low,omitempty"`
	High    *float64  `mapstructure:"high" json:"high,omitempty" toml:"high,omitempty" yaml:"high,omitempty"`
	Alpha   *float64  `mapstructure:"alpha" json:"alpha,omitempty" toml:"alpha,omitempty" yaml:"alpha,omitempty"`
	Shape   *float64  `mapstructure:"shape" json:"shape,omitempty" toml:"shape,omitempty" yaml:"shape,omitempty"`
	Scale   *float64  `mapstructure:"scale" json:"scale,omitempty" toml:"scale,omitempty" yaml:"scale,omitempty"`
	Samples []float64 `mapstructure:"samples" json:"samples,omitempty" toml:"samples,omitempty" yaml:"samples,omitempty"`
}
