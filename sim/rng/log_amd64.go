//go:build amd64 && !amd64.v3

package rng

import (
	"math"
	"math/bits"
)

// log01 is math.Log(u) for u in (0, 1), bit for bit, written so that it is
// inlined into the draw loops.
//
// On amd64 math.Log is an assembly routine (math/log_amd64.s): a call,
// checks for zero, negative, infinite and NaN arguments, then the classic
// reduction x = f1·2^k with f1 in [√2/2, √2) and the series in
// s = f/(2+f) of FreeBSD's e_log.c. A uniform variate in (0, 1) is never a
// special case (the smallest is 2^-54, a normal number), so the checks and
// the call are all this saves; the arithmetic below is the routine's own,
// operation for operation and in the same order, which is what makes the
// result identical: IEEE-754 rounds each operation the same way wherever it
// is done, and without GOAMD64=v3 the compiler fuses no multiply-add on
// amd64 (with it, log.go uses math.Log instead). TestLog01MatchesMathLog
// checks every draw of long streams and the interval's edges against
// math.Log, and TestPinned the archived values.
func log01(x float64) float64 {
	const (
		hSqrt2 = 7.07106781186547524401e-01
		ln2Hi  = 6.93147180369123816490e-01
		ln2Lo  = 1.90821492927058770002e-10
		l1     = 6.666666666666735130e-01
		l2     = 3.999999999940941908e-01
		l3     = 2.857142874366239149e-01
		l4     = 2.222219843214978396e-01
		l5     = 1.818357216161805012e-01
		l6     = 1.531383769920937332e-01
		l7     = 1.479819860511658591e-01
	)
	// The reduction, without a branch (which child of √2/2 a uniform's
	// mantissa falls on is a coin toss the predictor loses half the time):
	// f1 ∈ [0.5, 1) is x's mantissa; when f1 <= √2/2 the routine subtracts
	// 1 from k and doubles f1, both exact, so here they are done on the
	// integer exponent fields. Positive floats order as their bits.
	b := math.Float64bits(x)
	m := b&(1<<52-1) | 0x3FE0000000000000
	_, above := bits.Sub64(math.Float64bits(hSqrt2), m, 0) // 1 if f1 > √2/2
	adj := 1 - above
	f1 := math.Float64frombits(m + adj<<52)
	k := float64(int64(b>>52&0x7FF) - 0x3FE - int64(adj))
	f := f1 - 1
	s := f / (2 + f)
	s2 := s * s
	s4 := s2 * s2
	t1 := s2 * (l1 + s4*(l3+s4*(l5+s4*l7)))
	t2 := s4 * (l2 + s4*(l4+s4*l6))
	R := t1 + t2
	hfsq := 0.5 * f * f
	return k*ln2Hi - ((hfsq - (s*(hfsq+R) + k*ln2Lo)) - f)
}
