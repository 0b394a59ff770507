package serverfilling

import (
	"fmt"
	"math"
	"sort"
	"sync"

	"github.com/msjfarm/msjfarm/model/dist"
)

// ServerFilling-Gittins with ranks that rise with age (hyperexponential,
// Weibull of shape < 1) runs in O(C² · log n) per event on the rising-rank
// path (gittinsrise.go, which has the details); this is its design.
//
// What still holds. Running jobs of one class share one rank function G,
// non-decreasing here, and age at the same rate; with the running key
// need/k × G(t − fin) of srptfastorder.go a later fin (the younger job)
// gives a key ≤ at every instant, so each class's running jobs keep their
// order (youngest first) and can stay in a treap on fin as on the fast
// path; waiting keys are frozen, so each need's waiting jobs stay in a
// treap on (key, arrival). M is still a prefix of the order and, per
// sequence (a class's running jobs, a need's waiting jobs), M ∩ sequence is
// a prefix of it. Two conditions: the computed G must be monotone to the
// ulp, not only the true one (the H2 and Weibull forms in rankFn.at are
// written so), and at equal keys the order puts the older job first, the
// reverse of the youngest-first order, so a run of equal keys (the H2
// plateau where the computed rank stops rising, or ages whose ranks round
// to one number) is read backwards.
//
// What breaks. Running keys rise, so running jobs move backwards past
// waiting ones between decisions. srptfast.go's repair (M changes only at
// its ends, by the jobs events moved) no longer bounds the work: between
// two events a long-running wide job can fall behind many waiting narrow
// ones, and each waiting job that crosses M's boundary without being
// started or preempted would be a repair step, with no engine call to
// charge it to.
//
// The way around it: never represent M's waiting part job by job; find M's
// boundary and each need's served boundary by search.
//  1. M's boundary: the least job x of the order such that Σ need × #(jobs
//     ≤ x) ≥ k, found by a simultaneous descent of the 2C treaps (each
//     step compares their current roots and drops a left part below x or a
//     right part beyond a candidate): O(C log n) steps of O(C), once by key
//     alone, then among the jobs of x's key by the exact order of
//     srptfastorder.go (ties), with a key computed at most once per job and
//     decision (G evaluated O(C log n) times).
//  2. Per need bucket: the served jobs are the first take[b] of the
//     bucket's jobs in M (takes, from the per-bucket counts of step 1); a
//     bucket served in part is one more such search over its treaps.
//  3. Apply: the running jobs beyond their class's served prefix are
//     preempted and the waiting jobs inside the bucket's prefix start,
//     O(log n) each, charged to the engine calls.
//
// Rank functions that are not monotone (lognormal, bounded Pareto tables)
// lose the per-class running order itself and stay on the general path,
// O(|M|) per event; with G piecewise monotone on P pieces a class's
// running jobs could split into P treaps, a job moving to the next piece
// at a known age (a per-job timer, O(log n) each), for O(C·P log² n) per
// event; rank tables with many direction changes make P large and the
// general path better. Rank tables that never fall are not taken either:
// linear interpolation can step down by an ulp at a grid point.

// Gittins ranks (S §5.1).
//
// S §5.1 defines the rank of a job of server need i and age a as
//
//	rank(a) = inf_{b>a} E[min(S_i, b) − a | S_i > a] / P(S_i ≤ b | S_i > a),
//
// with S_i the size distribution of need-i jobs and the age in size units.
// Size is need × duration / k (S §3.1), so with S_i = (i/k)·D, age
// a = (i/k)·t and b = (i/k)·u the ratio scales by i/k:
//
//	rank_size(job) = (i/k) · G_D(t),  G_D(t) = inf_{u>t} ∫_t^u F̄(x)dx / (F(u) − F(t)),
//
// where D is the job's duration distribution, F its CDF, F̄ = 1 − F and t the
// duration of service the job has received. rankFn computes G_D(t) in
// duration units; the policy multiplies by need/k.
//
// Choice: D is the job's class's service distribution (System.Classes()[c]
// .Service), not the mixture over classes sharing a need. In every named
// workload each need has one class, and then this is exactly S's per-need
// definition; with several classes of one need it is the Gittins rank of
// the partially-known-size setting S §5.1 mentions (the class is known).
//
// Closed forms:
//   - exponential (mean m): G(t) = m, constant;
//   - deterministic (d): G(t) = d − t (the Gittins policy is then SRPT,
//     B §2's remark);
//   - hyperexponential and Weibull of shape ≤ 1: the hazard rate h = f/F̄ is
//     non-increasing (DHR), so the ratio, a weighted average of 1/h over
//     [t, u], is smallest as u → t: G(t) = 1/h(t). For the two-phase H2
//     (p1, μ1; p2, μ2): G(t) = (p1 e^{−μ1 t} + p2 e^{−μ2 t}) /
//     (p1 μ1 e^{−μ1 t} + p2 μ2 e^{−μ2 t}), rising from 1/(p1μ1 + p2μ2) to
//     1/min(μ1, μ2);
//   - uniform on [lo, hi]: the hazard is non-decreasing (IHR), so u → ∞ is
//     best and G(t) is the mean residual life: (lo+hi)/2 − t before lo,
//     (hi − t)/2 after.
//
// Numerical (bounded Pareto, lognormal, Fréchet, Weibull of shape > 1,
// empirical, any other distribution with a CDF): a rank table over attained
// service, see rankTable.
type rankKind uint8

const (
	rankConst rankKind = iota
	rankDet
	rankH2
	rankWeibullDHR
	rankUniform
	rankTab
)

type rankFn struct {
	kind rankKind
	c    float64 // constant rank, or the deterministic duration
	// H2 with μ1 ≥ μ2, written with e^{−(μ1−μ2)t} so that it cannot underflow
	// to 0/0 at large ages.
	p1, p2, mu1, mu2 float64
	// H2's plateau (h2Plateau): from age platAt on, at is plat.
	platAt, plat float64
	lo, hi       float64 // uniform bounds
	shape, scale float64 // Weibull
	tab          *rankTable
	// nonIncreasing: the rank never rises with age, so a running job's key
	// never increases (enables the policy's arrival shortcut).
	nonIncreasing bool
	constant      bool
	// nonDecreasing: the rank never falls with age and its computed value
	// is monotone in the age too (H2, Weibull of shape < 1): the rising-rank
	// path (gittinsrise.go) orders a class's running jobs by age.
	nonDecreasing bool
}

// at returns G_D(t) for attained service t ≥ 0.
func (f *rankFn) at(t float64) float64 {
	switch f.kind {
	case rankConst:
		return f.c
	case rankDet:
		return math.Max(f.c-t, 0)
	case rankH2:
		if t >= f.platAt {
			return f.plat
		}
		return f.h2(f.p1 * math.Exp(-(f.mu1-f.mu2)*t))
	case rankWeibullDHR:
		// 1/h(t) = (λ/κ)(t/λ)^{1−κ}; 0 at t = 0 for κ < 1 (infinite hazard).
		// math.Pow(x, y) is exp(y·log x) for 0 < y < 1/2 and, for y > 1/2,
		// x·exp((y−1)·log x), not monotone in x to the ulp; exp(y·log x)
		// is (the same numbers as Pow for κ > 1/2).
		if y := 1 - f.shape; y > 0.5 {
			return f.scale / f.shape * math.Exp(y*math.Log(t/f.scale))
		}
		return f.scale / f.shape * math.Pow(t/f.scale, 1-f.shape)
	case rankUniform:
		switch {
		case t < f.lo:
			return (f.lo+f.hi)/2 - t
		case t < f.hi:
			return (f.hi - t) / 2
		}
		return 0
	}
	return f.tab.at(t)
}

// h2 is the H2 rank from e = p1·e^{−(μ1−μ2)t}: 1/h with h = μ2 + (μ1 −
// μ2)·u, u = e/(e + p2) = 1/(1 + p2/e). Each operation takes the previous
// result alone, so the computed rank is monotone in t (the quotient (e +
// p2)/(e·μ1 + p2·μ2) is not: its numerator and denominator round at
// different t, and the computed rank wobbled by an ulp past t ≈ 16 means,
// which the rising-rank path's per-class order cannot follow, see
// gittinsrise.go), and non-increasing in e: each operation is a correctly
// rounded one of a monotone function.
func (f *rankFn) h2(e float64) float64 {
	return 1 / (f.mu2 + (f.mu1-f.mu2)/(1+f.p2/e))
}

// h2Plateau sets platAt and plat: the computed H2 rank reaches its limit
// 1/μ2 (h2(0): p2/0 = +Inf, so h = μ2 + 0) at a finite age, once (μ1 −
// μ2)·u is below half an ulp of μ2, and stays there, h2 being monotone in
// e and bounded by h2(0). Ranks there need no exponential: on H2 past
// saturation (BenchmarkLevelsH2 at the L = 1300 rate) 35% of the ranks the
// rising-rank path computes are old jobs' plateau values.
//
// Exactness does not rest on math.Exp being monotone. eStar is the largest
// e with h2(e) = 1/μ2 (bisection over the bit patterns of e ∈ [0, p1],
// ordered as the values; h2 is non-increasing in e, so that set is [0,
// eStar]); platAt is an age from which the true p1·e^{−(μ1−μ2)t} is at most
// eStar/4, with 10⁻⁹ of relative slack on the age. The computed e is within
// a few ulps of the true one (Exp's error is below an ulp, the two products
// round once each), far inside that factor 4, so h2 of the computed e is
// 1/μ2 from platAt on: at returns exactly what it computed before.
// TestH2Plateau checks it on a grid of ages past platAt. Where eStar is not
// a normal number (no plateau before e underflows) platAt stays +Inf.
func (f *rankFn) h2Plateau() {
	f.plat, f.platAt = f.h2(0), math.Inf(1)
	if f.h2(f.p1) == f.plat {
		return // not expected (μ1 > μ2 by a margin): leave at alone
	}
	lo, hi := uint64(0), math.Float64bits(f.p1) // h2 = plat at lo, not at hi
	for hi-lo > 1 {
		if mid := lo + (hi-lo)/2; f.h2(math.Float64frombits(mid)) == f.plat {
			lo = mid
		} else {
			hi = mid
		}
	}
	eStar := math.Float64frombits(lo)
	if eStar < 4*math.SmallestNonzeroFloat64*(1<<52) { // below 4 × the least normal
		return
	}
	if t := math.Log(f.p1/(eStar/4)) / (f.mu1 - f.mu2) * (1 + 1e-9); t > 0 && !math.IsInf(t, 1) {
		f.platAt = t
	}
}

// rankCache shares rank tables between policy instances and replications: a
// table costs milliseconds to build, a replication may be much shorter.
// Keys are the distribution's exact description (String prints every
// parameter with round-trip precision), or its pointer for empirical
// distributions, whose String does not identify them.
var rankCache = struct {
	sync.Mutex
	m map[any]*rankFn
}{m: map[any]*rankFn{}}

const rankCacheMax = 256

// newRankFn returns the Gittins rank function of a duration distribution.
func newRankFn(d dist.Dist) (*rankFn, error) {
	switch d := d.(type) {
	case *dist.Exponential:
		return &rankFn{kind: rankConst, c: d.Mean(), nonIncreasing: true, constant: true}, nil
	case *dist.Deterministic:
		return &rankFn{kind: rankDet, c: d.Mean(), nonIncreasing: true}, nil
	case *dist.HyperExp:
		p1, r1, r2 := d.Phases()
		p2 := 1 - p1
		if r1 == r2 {
			return &rankFn{kind: rankConst, c: 1 / r1, nonIncreasing: true, constant: true}, nil
		}
		if r1 < r2 {
			p1, p2, r1, r2 = p2, p1, r2, r1
		}
		f := &rankFn{kind: rankH2, p1: p1, p2: p2, mu1: r1, mu2: r2, nonDecreasing: true}
		f.h2Plateau()
		return f, nil
	case *dist.Uniform:
		// Uniform keeps its bounds private; mean m and SCV c give them back:
		// c = (w/2/m)²/3 for width w.
		m := d.Mean()
		half := m * math.Sqrt(3*d.SCV())
		return &rankFn{kind: rankUniform, lo: m - half, hi: m + half, nonIncreasing: true}, nil
	case *dist.Weibull:
		shape, scale := d.Params()
		switch {
		case shape == 1:
			return &rankFn{kind: rankConst, c: scale, nonIncreasing: true, constant: true}, nil
		case shape < 1:
			return &rankFn{kind: rankWeibullDHR, shape: shape, scale: scale, nonDecreasing: true}, nil
		}
	}
	cdfer, ok := d.(dist.CDFer)
	if !ok {
		return nil, fmt.Errorf("gittins: no rank for %s: the distribution has no CDF", d)
	}
	var key any = fmt.Sprintf("%T %s", d, d)
	if _, emp := d.(*dist.Empirical); emp {
		key = d
	}
	rankCache.Lock()
	f, hit := rankCache.m[key]
	rankCache.Unlock()
	if hit {
		return f, nil
	}
	var tab *rankTable
	var err error
	if e, emp := d.(*dist.Empirical); emp {
		tab, err = empiricalTable(e)
	} else {
		sf, lo, hi := survival(d, cdfer)
		tab, err = continuousTable(sf, d.Mean(), lo, hi)
	}
	if err != nil {
		return nil, fmt.Errorf("gittins: %s: %w", d, err)
	}
	f = &rankFn{kind: rankTab, tab: tab, nonIncreasing: tab.nonIncreasing()}
	rankCache.Lock()
	if len(rankCache.m) >= rankCacheMax {
		clear(rankCache.m)
	}
	rankCache.m[key] = f
	rankCache.Unlock()
	return f, nil
}

// survival returns F̄ = 1 − F and the support [lo, hi] of d. F̄ is computed
// directly where the distribution's parameters are exported (so that it
// keeps full relative precision in the tail, where 1 − F cancels), as
// 1 − CDF otherwise.
func survival(d dist.Dist, c dist.CDFer) (sf func(float64) float64, lo, hi float64) {
	lo, hi = 0, math.Inf(1)
	switch d := d.(type) {
	case *dist.Lognormal:
		mu, sigma := d.Params()
		return func(x float64) float64 {
			if !(x > 0) {
				return 1
			}
			return 0.5 * math.Erfc((math.Log(x)-mu)/(sigma*math.Sqrt2))
		}, lo, hi
	case *dist.BoundedPareto:
		alpha, l, h := d.Params()
		r := math.Exp(-alpha * math.Log(h/l)) // (L/H)^α
		return func(x float64) float64 {
			switch {
			case x <= l:
				return 1
			case x >= h:
				return 0
			}
			return (math.Exp(-alpha*math.Log(x/l)) - r) / (1 - r)
		}, l, h
	case *dist.Weibull:
		shape, scale := d.Params()
		return func(x float64) float64 {
			if !(x > 0) {
				return 1
			}
			return math.Exp(-math.Pow(x/scale, shape))
		}, lo, hi
	case *dist.Frechet:
		alpha, scale := d.Params()
		return func(x float64) float64 {
			if !(x > 0) {
				return 1
			}
			return -math.Expm1(-math.Pow(x/scale, -alpha))
		}, lo, hi
	}
	return func(x float64) float64 { return 1 - c.CDF(x) }, lo, hi
}

// rankTable is G_D on a grid of ages, linearly interpolated between grid
// points and held at its last value beyond the grid.
//
// Construction (O(N log N) for N grid points):
//  1. I(x) = ∫_0^x F̄ is accumulated over the grid, by Simpson's rule on each
//     cell (F evaluated at both ends and the midpoint) for a continuous
//     distribution, exactly for a step CDF (F̄ is constant between atoms,
//     which are grid points).
//  2. For each grid age t_i, min over grid points u_j > t_i of
//     (I_j − I_i)/(F_j − F_i) is the least slope from P_i = (F_i, I_i) to
//     the points on its right: the tangent from P_i to their lower convex
//     hull. Sweeping i from right to left keeps that hull on a stack; the
//     tangent is found by binary search (the slope to the hull's vertices is
//     unimodal).
//  3. For a continuous distribution the limit u → t_i⁺, F̄(t_i)/f(t_i), is
//     also a candidate (it is the rank wherever the hazard falls, e.g. in a
//     lognormal's tail); f(t_i) is the derivative of the quadratic through
//     the cell's three CDF values.
//
// Accuracy: restricting u to the grid costs O(h²) relative where the
// optimum is interior (the ratio is flat there); the derivative in step 3
// (a central difference over 1% of the cell) and the linear interpolation
// between grid points are O(h²) too, for relative cell width h. The grid
// is geometric (8000 points from the 10^-6-quantile or mean/10^4 to the end,
// h ≈ 0.3% over 12 decades) plus 1000 points uniform in probability and 2000
// uniform in age over the bulk (up to the 0.9999-quantile), and 1024
// uniform points before the support starts (bounded Pareto). F̄ is
// computed directly (not as 1 − F) where the parameters are exported, so
// the tail keeps full relative precision. Measured against closed forms
// and independent references (gittins_test.go), the worst relative error
// over ages up to survival 1e-8 is 4.6e-5 (hyperexponential C² = 100, where
// the rank climbs steeply), 6e-6 (C² = 10), 1.4e-7 (exponential), 2e-6
// (bounded Pareto), 2e-7 (lognormal). Beyond the grid — the
// (1 − 1e-10)-quantile of an unbounded distribution — the last rank is
// held. A table costs a few milliseconds and is cached per distribution.
//
// Empirical distributions: F is a step function with atoms at the sample
// values (read back from the CDF by bisection, O(distinct values × 64 CDF
// calls)); atoms are grid points, each gap is split into up to 16 cells,
// ∫F̄ is exact, and the rank is exact at grid points (only the interpolation
// inside a gap, where the true rank is concave and piecewise linear, is
// approximate).
//
// Lookup: the general path evaluates the table once per running job of M
// per decision (thousands of times per event at k = 2048), so the grid
// index is found through a bucket index over the age's float64 bits
// (monotone for positive numbers) instead of a binary search over the
// whole grid; see newRankTable.
type rankTable struct {
	xs, rs []float64
	// Bucket index: an age a with xs[1] < a < xs[n-1] falls in bucket
	// j = (bits(a) − b1) >> shift, and the grid index of a (the least i
	// with xs[i] ≥ a) is in [first[j], first[j+1]].
	b1    uint64
	shift uint
	first []int32
}

// newRankTable returns the table of ranks rs at the grid ages xs (xs
// increasing from xs[0] ≥ 0) with its bucket index:
// first[j] is the least i ≥ 1 with bits(xs[i]) ≥ b1 + j<<shift, and the
// buckets, at most 2n of them, cover b1 .. bits(xs[n-1]), so a lookup is
// a binary search over the few grid points of one bucket (the ages in a
// bucket span a fixed fraction of their binade: the geometric part of the
// grid has about one point per bucket).
func newRankTable(xs, rs []float64) *rankTable {
	n := len(xs)
	t := &rankTable{xs: xs, rs: rs}
	if n < 2 {
		return t // at never searches: every age is at or beyond xs[0]
	}
	t.b1 = math.Float64bits(xs[1])
	span := math.Float64bits(xs[n-1]) - t.b1
	for span>>t.shift >= uint64(2*n) {
		t.shift++
	}
	nb := int(span>>t.shift) + 2
	t.first = make([]int32, nb)
	i := 1
	for j := range t.first {
		lo := t.b1 + uint64(j)<<t.shift
		for i < n-1 && math.Float64bits(xs[i]) < lo {
			i++
		}
		t.first[j] = int32(i)
	}
	return t
}

// index returns the least i with xs[i] ≥ a, for xs[0] < a < xs[n-1]: the
// index sort.SearchFloat64s(xs, a) returns, found within a's bucket.
func (t *rankTable) index(a float64) int {
	bits := math.Float64bits(a)
	if bits <= t.b1 {
		return 1 // xs[0] < a ≤ xs[1]
	}
	j := (bits - t.b1) >> t.shift
	lo, hi := int(t.first[j]), int(t.first[j+1])
	for lo < hi { // least i in [lo, hi] with xs[i] ≥ a; xs[hi] ≥ a
		m := int(uint(lo+hi) >> 1)
		if t.xs[m] < a {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo
}

func (t *rankTable) at(a float64) float64 {
	xs := t.xs
	if a <= xs[0] {
		return t.rs[0]
	}
	n := len(xs)
	if a >= xs[n-1] {
		return t.rs[n-1]
	}
	i := t.index(a) // xs[i-1] < a <= xs[i]
	x0, x1 := xs[i-1], xs[i]
	r0, r1 := t.rs[i-1], t.rs[i]
	return r0 + (r1-r0)*(a-x0)/(x1-x0)
}

func (t *rankTable) nonIncreasing() bool {
	for i := 1; i < len(t.rs); i++ {
		if t.rs[i] > t.rs[i-1] {
			return false
		}
	}
	return true
}

// upperQuantile returns the least x in [lo, hi] with sf(x) <= q, by
// bisection on the float64 bit patterns (monotone for non-negative numbers):
// exact to the last bit whatever the scale.
func upperQuantile(sf func(float64) float64, q, lo, hi float64) float64 {
	a, b := math.Float64bits(lo), math.Float64bits(hi)
	if sf(lo) <= q {
		return lo
	}
	for b-a > 1 {
		m := a + (b-a)/2
		if sf(math.Float64frombits(m)) <= q {
			b = m
		} else {
			a = m
		}
	}
	return math.Float64frombits(b)
}

const (
	tailProb  = 1e-10 // an unbounded distribution's grid ends at this survival probability
	geoPoints = 8000
	probPts   = 1000
	linPoints = 2000
)

// continuousTable builds the rank table of a continuous distribution with
// survival function sf, mean mean and support within [lo, hi] (hi may be
// +Inf).
func continuousTable(sf func(float64) float64, mean, lo, hi float64) (*rankTable, error) {
	if math.IsInf(hi, 1) {
		hi = mean
		for i := 0; sf(hi) > tailProb; i++ {
			if i > 2000 || math.IsInf(hi, 0) {
				return nil, fmt.Errorf("cannot find the %g tail quantile", 1-tailProb)
			}
			hi *= 2
		}
		hi = upperQuantile(sf, tailProb, 0, hi)
	}
	if !(hi > lo) || !(hi > 0) {
		return nil, fmt.Errorf("empty support [%g, %g]", lo, hi)
	}
	start := lo
	if start == 0 {
		start = math.Min(upperQuantile(sf, 1-1e-6, 0, hi), mean*1e-4)
		if !(start > 0) {
			start = hi * 1e-12
		}
	}
	xs := make([]float64, 0, geoPoints+probPts+linPoints+300)
	xs = append(xs, 0)
	if lo > 0 { // before the support the rank falls linearly-ish to its value at lo
		for i := 1; i < 1024; i++ {
			xs = append(xs, lo*float64(i)/1024)
		}
	}
	ratio := math.Pow(hi/start, 1/float64(geoPoints-1))
	x := start
	for i := 0; i < geoPoints; i++ {
		xs = append(xs, x)
		x *= ratio
	}
	bulk := upperQuantile(sf, 1e-4, lo, hi)
	for i := 1; i < probPts; i++ {
		xs = append(xs, upperQuantile(sf, 1-float64(i)/probPts, lo, hi))
	}
	for i := 1; i < linPoints; i++ {
		xs = append(xs, lo+(bulk-lo)*float64(i)/linPoints)
	}
	xs = append(xs, lo, hi)
	sort.Float64s(xs)
	w := 1
	for _, v := range xs[1:] {
		if v > xs[w-1]*(1+1e-12) && v <= hi {
			xs[w] = v
			w++
		}
	}
	xs = xs[:w]
	n := len(xs)
	S := make([]float64, n) // F̄ at the grid points
	I := make([]float64, n) // ∫_0^{x_i} F̄
	X := make([]float64, n) // −F̄: increasing with F, differences without cancellation
	for i, v := range xs {
		S[i] = sf(v)
		X[i] = -S[i]
	}
	for i := 0; i+1 < n; i++ {
		h := xs[i+1] - xs[i]
		I[i+1] = I[i] + h/6*(S[i]+4*sf(xs[i]+h/2)+S[i+1])
	}
	rs := hullRanks(X, I)
	for i := 0; i+1 < n; i++ {
		if xs[i] < lo {
			continue
		}
		// f(x_i) = −F̄'(x_i) by a central difference over ±1% of the
		// smaller neighbouring half-cell (one-sided at the support's lower
		// end): truncation error ~1e-4·h², rounding negligible with an exact
		// survival function.
		eps := 0.01 * (xs[i+1] - xs[i]) / 2
		if i > 0 {
			eps = math.Min(eps, 0.01*(xs[i]-xs[i-1])/2)
		}
		var d float64
		if xs[i]-eps < lo || i == 0 {
			d = (3*S[i] - 4*sf(xs[i]+eps) + sf(xs[i]+2*eps)) / (2 * eps)
		} else {
			d = (sf(xs[i]-eps) - sf(xs[i]+eps)) / (2 * eps)
		}
		if d > 0 {
			if r := S[i] / d; r < rs[i] {
				rs[i] = r
			}
		}
	}
	for i := range rs {
		if math.IsInf(rs[i], 1) { // nothing to the right with more probability
			switch {
			case S[i] <= 0 || i == 0:
				rs[i] = 0 // past the support: the job would have finished
			default:
				rs[i] = rs[i-1]
			}
		}
	}
	return newRankTable(xs, rs), nil
}

// empiricalTable builds the exact-at-grid-points rank table of an empirical
// distribution. Its sample values are not exported, so they are read back
// from the CDF: each distinct value is the least x at which the CDF exceeds
// its value at the previous one (bisection on float bits, exact).
func empiricalTable(e *dist.Empirical) (*rankTable, error) {
	hi := e.Mean()
	for i := 0; e.CDF(hi) < 1; i++ {
		if i > 2100 {
			return nil, fmt.Errorf("cannot find the largest sample")
		}
		hi *= 2
	}
	// least x in [from, hi] with CDF(x) > target
	above := func(from, target float64) float64 {
		a, b := math.Float64bits(from), math.Float64bits(hi)
		if e.CDF(from) > target {
			return from
		}
		for b-a > 1 {
			m := a + (b-a)/2
			if e.CDF(math.Float64frombits(m)) > target {
				b = m
			} else {
				a = m
			}
		}
		return math.Float64frombits(b)
	}
	var atoms []float64
	for x, c := 0.0, 0.0; c < 1; {
		x = above(x, c)
		c = e.CDF(x)
		atoms = append(atoms, x)
	}
	sub := max(1, min(16, 200000/len(atoms)))
	xs := []float64{0}
	last := 0.0
	for _, v := range atoms {
		if v <= 0 {
			continue
		}
		for s := 1; s < sub; s++ {
			xs = append(xs, last+(v-last)*float64(s)/float64(sub))
		}
		xs = append(xs, v)
		last = v
	}
	n := len(xs)
	F := make([]float64, n)
	I := make([]float64, n)
	for i, v := range xs {
		F[i] = e.CDF(v)
	}
	for i := 0; i+1 < n; i++ {
		I[i+1] = I[i] + (1-F[i])*(xs[i+1]-xs[i]) // F̄ is constant on [x_i, x_{i+1})
	}
	rs := hullRanks(F, I)
	for i := range rs {
		if math.IsInf(rs[i], 1) { // at or past the largest sample
			rs[i] = 0
		}
	}
	return newRankTable(xs, rs), nil
}

// hullRanks returns, for each i, min over j > i with F[j] > F[i] of
// (I[j] − I[i]) / (F[j] − F[i]) (+Inf if there is none). F is non-decreasing
// and I increasing in i; F may be the CDF or any increasing shift of it
// (the continuous tables pass −F̄).
func hullRanks(F, I []float64) []float64 {
	n := len(F)
	rs := make([]float64, n)
	hull := make([]int, 0, n) // lower hull of points right of i; top = leftmost
	slope := func(a, b int) float64 { return (I[b] - I[a]) / (F[b] - F[a]) }
	for i := n - 1; i >= 0; i-- {
		// Query: vertices hull[m] (m from top = len-1 down to 0) with F > F[i].
		top := len(hull) - 1
		if top >= 0 && F[hull[top]] <= F[i] {
			top-- // equal F (collapsed): the point directly above P_i
		}
		if top < 0 {
			rs[i] = math.Inf(1)
		} else {
			// Slopes from P_i to hull[top], hull[top-1], ... decrease then
			// increase; find the first m (from the top) where the next
			// vertex is no better.
			lo, hi := 0, top // answer index in [lo, hi], scanning downward = rightward
			for lo < hi {
				mid := (lo + hi + 1) / 2 // candidate vertex hull[mid]; compare with hull[mid-1]
				if slope(i, hull[mid-1]) < slope(i, hull[mid]) {
					hi = mid - 1
				} else {
					lo = mid
				}
			}
			rs[i] = slope(i, hull[lo])
		}
		// Insert P_i as the leftmost point.
		for len(hull) > 0 && F[hull[len(hull)-1]] <= F[i] {
			hull = hull[:len(hull)-1] // same F: P_i is lower (I increases with index)
		}
		for len(hull) >= 2 {
			a, b := hull[len(hull)-1], hull[len(hull)-2]
			if slope(i, a) >= slope(a, b) { // a is not below the segment i–b
				hull = hull[:len(hull)-1]
				continue
			}
			break
		}
		hull = append(hull, i)
	}
	return rs
}
