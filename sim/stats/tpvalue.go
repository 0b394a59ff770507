package stats

import "math"

// TTwoSided returns the two-sided p-value of a Student t statistic with df
// degrees of freedom: P(|T| > |t|) = I_x(df/2, 1/2), x = df/(df+t²), the
// same incomplete beta function TQuantile inverts, so that a statistic at
// TQuantile(1−α/2, df) has p-value α to rounding. NaN for df < 1 or a NaN t;
// 1 at t = 0; 0 at t = ±Inf.
//
// Why it is needed: a multiple-comparison correction (Holm's step-down)
// orders tests by p-value, which a confidence interval alone cannot give.
func TTwoSided(t float64, df int) float64 {
	switch {
	case df < 1 || math.IsNaN(t):
		return math.NaN()
	case math.IsInf(t, 0):
		return 0
	case t == 0:
		return 1
	}
	nu := float64(df)
	x, y, lx, ly := tXY(math.Abs(t), nu)
	return regIncBeta(nu/2, 0.5, x, y, lx, ly)
}
