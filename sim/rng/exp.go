package rng

import "math"

// Exponential variates by the ziggurat method (Marsaglia and Tsang, "The
// ziggurat method for generating random variables", J. Stat. Softw. 5(8),
// 2000), with 256 layers and the tables computed here at start-up.
//
// Why not −log U. Inversion costs a logarithm per variate, the largest
// single cost of a minimal event loop; the ziggurat needs, 97.8% of the
// time, one 64-bit draw, a table lookup, an integer comparison and a
// multiplication. What inversion was chosen for is kept: a run at another
// arrival rate scales the same standard exponential sequence (the sequence
// does not depend on the rate), so sample paths stay coupled across a load
// sweep, and each stream's sequence is a fixed function of its seed.
// What is given up is that one uniform gives one variate: a rejected point
// (2.2% of draws) consumes more of the stream, which is why the job
// sequence draws classes, sizes and inter-arrival times from separate
// streams.
//
// The density f(x) = e^{−x} (x ≥ 0) is covered by 256 regions of equal area
// v: a base strip (the rectangle [0, r] × [0, f(r)] plus the tail beyond r)
// and 255 rectangles stacked above it, rectangle i spanning
// [0, x_i] × [f(x_i), f(x_{i+1})] with x_0 = v/f(r) = 1 + r, x_1 = r,
// x_{i+1} = f⁻¹(f(x_i) + v/x_i) and x_256 = 0. A draw picks a region i
// (the low 8 bits) and a point x = U·x_i (the high 53 bits): if x < x_{i+1}
// the point lies under the curve whatever its height, and x is returned;
// otherwise the base strip returns r plus a fresh exponential (the tail is
// memoryless), and rectangle i draws a height and keeps x if the point
// falls under f, else starts again with a new draw.
const (
	zigR = 7.69711747013104972      // x_1: the base strip's right edge
	zigV = 0.0039496598225815571993 // the common area (1 + r)·e^{−r}
	zigN = 256                      // regions (a power of two)
	zigM = 1 << 53                  // the uniform's resolution
	zigW = 1.0 / float64(zigM)      // one unit of the uniform
	zigS = 64 - 53                  // the uniform is the top 53 bits
	zigL = zigN - 1                 // the region index is the low 8 bits
)

var (
	// zigK[i]: the largest uniform (in units of zigW) whose point x is
	// certainly under the curve, x < x_{i+1}; the 97.8% fast path.
	zigK [zigN]uint64
	// zigX[i]: x_i in units of the uniform (x_i·zigW), so x = (U+½)·zigX[i].
	zigX [zigN]float64
	// zigF[i] = f(x_i), with zigF[256] = f(0) = 1, for the wedge test.
	zigF [zigN + 1]float64
)

func init() {
	var x [zigN + 1]float64
	x[0], x[1] = 1+zigR, zigR
	for i := 1; i < zigN; i++ {
		x[i+1] = -math.Log(math.Exp(-x[i]) + zigV/x[i])
	}
	x[zigN] = 0
	for i := range zigN {
		zigK[i] = uint64(math.Floor(x[i+1] / x[i] * zigM))
		zigX[i] = x[i] * zigW
	}
	for i := range x {
		zigF[i] = math.Exp(-x[i])
	}
}

// zig maps one 64-bit draw to a standard exponential variate when the draw
// falls in a layer's rectangle (ok); otherwise the caller goes to zigSlow.
func zig(u uint64) (x float64, ok bool) {
	i := u & zigL
	m := u >> zigS
	return (float64(m) + 0.5) * zigX[i], m < zigK[i]
}

// zigSlow finishes a draw u that zig did not accept, drawing from s as
// needed (about one draw in forty-five).
func (s *Stream) zigSlow(u uint64) float64 {
	for {
		i := u & zigL
		x := (float64(u>>zigS) + 0.5) * zigX[i]
		if i == 0 {
			// The base strip beyond r: the tail r + Exp(1), by inversion
			// (one draw in about 2,200).
			return zigR - math.Log(s.Float64())
		}
		// Rectangle i, point beyond x_{i+1}: a height uniform between
		// f(x_i) and f(x_{i+1}); under the curve, keep x.
		if zigF[i]+s.Float64()*(zigF[i+1]-zigF[i]) < math.Exp(-x) {
			return x
		}
		u = s.Uint64()
		if x, ok := zig(u); ok {
			return x
		}
	}
}

// ExpBounds returns the least and the greatest value Exp and ExpFill can
// return: half a unit of the narrowest layer's uniform, and the tail's r
// plus the largest −log U (U ≥ 2⁻⁵⁴). Distribution constructors use them to
// reject parameters whose extreme samples would overflow.
func ExpBounds() (lo, hi float64) {
	return 0.5 * zigX[zigN-1], zigR + 54*math.Ln2
}
