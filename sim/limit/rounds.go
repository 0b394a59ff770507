package limit

import (
	"errors"
	"fmt"
	"math"
	"sort"

	"github.com/msjfarm/msjfarm/sim"
)

// RoundFunc evaluates a round of rates at once (each with the search's
// replications) and returns one Point per rate, in the same order. It is how
// a search runs on the farm: every round is one batch of tasks, so the
// farm's workers run the round's rates and replications in parallel.
type RoundFunc func(rates []float64) ([]Point, error)

// PointOf pools one rate's replications into a Point (sim.Pool verdict and
// the mean throughput).
func PointOf(lambda float64, rs []*sim.Result) (Point, error) {
	v, err := sim.Pool(rs)
	if err != nil {
		return Point{}, fmt.Errorf("limit: λ = %v: %w", lambda, err)
	}
	var thr float64
	for _, r := range rs {
		thr += r.Throughput
	}
	return Point{Lambda: lambda, Verdict: v, Throughput: thr / float64(len(rs))}, nil
}

// MaxRounds is the number of rounds a round search with probes interior
// rates per round runs at most: the first round (both ends and probes
// interior rates) and then rounds of probes rates, each dividing the
// bracket's log width by probes+1, until the tolerance.
func (o Options) MaxRounds(probes int) int {
	o = o.withDefaults()
	if probes < 1 {
		probes = 1
	}
	if !(o.Hi > o.Lo && o.Lo > 0) || !(o.RelTol > 0) {
		return 1
	}
	ratio := math.Log(o.Hi/o.Lo) / math.Log1p(o.RelTol)
	if ratio <= 1 {
		return 1
	}
	return max(1, int(math.Ceil(math.Log(ratio)/math.Log(float64(probes+1))-1e-9)))
}

// SearchRounds is Search by rounds: the first round evaluates Lo, Hi and
// probes rates geometrically spaced between them; every later round
// evaluates probes rates spaced inside the current bracket. After a round
// the bracket's top is the lowest rate called unstable (or truncated) so
// far, and its bottom the highest rate called stable below that top. With
// probes = 1 this is Search's bisection; with p probes a round divides the
// bracket's log width by p+1, so that p·Reps replications run in parallel
// per round. Verdicts that contradict monotonicity (a stable rate above an
// unstable one) are kept in Points but cannot move the bracket down: the
// lowest unstable rate decides, since a real overload is never to be
// missed. The outcomes, Confidence (a union bound over every evaluated
// rate) and the one-sided verdicts are Search's.
func SearchRounds(eval RoundFunc, opt Options, probes int) (*Limit, error) {
	if eval == nil {
		return nil, errors.New("limit: no round function")
	}
	if err := opt.Validate(); err != nil {
		return nil, err
	}
	if probes < 1 {
		return nil, fmt.Errorf("limit: probes must be >= 1, got %d", probes)
	}
	opt = opt.withDefaults()
	res := &Limit{}
	round := func(rates []float64) ([]Point, error) {
		ps, err := eval(rates)
		if err != nil {
			return nil, err
		}
		if len(ps) != len(rates) {
			return nil, fmt.Errorf("limit: a round of %d rates returned %d points", len(rates), len(ps))
		}
		for i, p := range ps {
			if p.Lambda != rates[i] {
				return nil, fmt.Errorf("limit: point %d is at λ = %v, want %v", i, p.Lambda, rates[i])
			}
			res.Points = append(res.Points, p)
			res.Runs += p.Verdict.N
			res.note(p.Verdict.Verdict)
		}
		return ps, nil
	}
	unstable := func(p Point) bool { return p.Verdict.Verdict != sim.VerdictStable }
	falseU, miss := sim.MajorityErrors(opt.Reps, opt.PerRunError, opt.PerRunError)
	lo, hi := opt.Lo, opt.Hi
	rates := append([]float64{lo}, interior(lo, hi, probes)...)
	rates = append(rates, hi)
	for r := range opt.MaxRounds(probes) {
		ps, err := round(rates)
		if err != nil {
			return nil, err
		}
		if r == 0 {
			if unstable(ps[0]) {
				res.Outcome, res.Lo, res.Hi, res.Confidence = UnstableAtLowest, opt.Lo, opt.Lo, 1-falseU
				return res, nil
			}
			if !unstable(ps[len(ps)-1]) {
				res.Outcome, res.Lo, res.Hi, res.Confidence = NoLimitInRange, opt.Hi, opt.Hi, 1-miss
				return res, nil
			}
		}
		sort.Slice(ps, func(i, j int) bool { return ps[i].Lambda < ps[j].Lambda })
		for _, p := range ps {
			if unstable(p) && p.Lambda < hi {
				hi = p.Lambda
			}
		}
		for _, p := range ps {
			if !unstable(p) && p.Lambda > lo && p.Lambda < hi {
				lo = p.Lambda
			}
		}
		if hi/lo-1 <= opt.RelTol*(1+1e-9) { // the geometric spacing's rounding
			break
		}
		rates = interior(lo, hi, probes)
	}
	res.Outcome, res.Lo, res.Hi = Found, lo, hi
	res.Estimate = math.Sqrt(lo * hi)
	res.Confidence = unionBound(len(res.Points), math.Max(falseU, miss))
	return res, nil
}

// interior returns n rates geometrically spaced strictly inside (lo, hi).
// One rate is the geometric midpoint √(lo·hi), as Search computes it.
func interior(lo, hi float64, n int) []float64 {
	if n == 1 {
		return []float64{math.Sqrt(lo * hi)}
	}
	out := make([]float64, n)
	step := math.Log(hi/lo) / float64(n+1)
	for i := range out {
		out[i] = lo * math.Exp(step*float64(i+1))
	}
	return out
}

// SaturationThroughput is the mean departure rate over the evaluated rates
// whose verdict is unstable (not merely truncated), and how many there
// were (0, 0 when none). In overload the departure rate of a system whose
// throughput is monotone in the arrival rate is its saturation
// throughput, and for FCFS-like policies (the saturation rule: Baccelli &
// Foss 1995) that is λ_max itself — measured by every overloaded run, not
// bracketed, so it is not limited by the growth test's resolution near
// the limit (FCFS on one-or-all with 10^6 arrivals: 3.0264 over the 10
// unstable rates of a farm search and 3.0216 over the 4 of a bisection,
// against the exact 3.0261, where the brackets sat 1.1–1.2% above it). It is not λ_max for a policy
// whose overloaded throughput collapses (MSF on one-or-all sustains
// λ ≈ 7.7 but departs at 4.4 under λ = 9): read it only for policies known
// to be monotone.
//
// Only the unstable rates up to twice the lowest one count: far above the
// limit a run of a fixed number of arrivals ends before its jobs leave
// (FCFS at λ = 10^12 with 3,000 arrivals: not one departure), so its
// departure rate measures the run's length, not the system, and a search
// bracketing [10^-12, 10^12] printed 2.25 for FCFS's 3.03.
func SaturationThroughput(l *Limit) (mean float64, n int) {
	lowest := math.Inf(1)
	for _, p := range l.Points {
		if p.Verdict.Verdict == sim.VerdictUnstable {
			lowest = math.Min(lowest, p.Lambda)
		}
	}
	var sum float64
	for _, p := range l.Points {
		if p.Verdict.Verdict == sim.VerdictUnstable && p.Lambda <= 2*lowest {
			sum += p.Throughput
			n++
		}
	}
	if n == 0 {
		return 0, 0
	}
	return sum / float64(n), n
}

// unionBound is the confidence that none of n verdicts is wrong, each
// wrong with probability at most p: 1 − n·p, and 0 (no bound) where that
// is negative; a search of more than 100 single-replication rates printed
// "confidence ≥ -0.3".
func unionBound(n int, p float64) float64 { return math.Max(0, 1-float64(n)*p) }
