// Package limit finds a policy's stability limit λ_max — the largest
// arrival rate it sustains on a workload — by a sequential search on the
// engine's pooled stability verdict (sim.Pool) over independent
// replications.
//
// The search is a bisection in log λ inside a caller's bracket [Lo, Hi]:
// the ends are evaluated first, so that "no limit in the range" (stable at
// Hi) and "unstable at the lowest rate" (unstable at Lo) are verdicts, not
// loops; then the geometric midpoint of the current bracket is evaluated
// until hi/lo − 1 ≤ RelTol. Each evaluation runs Reps replications at one
// rate and pools them by majority (sim.Pool). The number of evaluations is
// bounded in advance: 2 + ⌈log2(ln(Hi/Lo) / ln(1+RelTol))⌉.
//
// Why bisection on a majority verdict is enough. λ_max is a threshold: the
// queue is positive recurrent below it and transient above it, so the
// verdict is monotone in λ up to the test's errors. λ_max ∈ [lo, hi] exactly
// when the final lo's "stable" and hi's "unstable" verdicts are right; a
// wrong verdict anywhere can become a final end (bisection never revisits),
// so the result is right whenever every evaluated verdict is. With
// replications erring independently with probability at most e, a majority
// of n is wrong with probability at most P(Bin(n, e) ≥ ⌈n/2⌉)
// (sim.MajorityErrors), and a union bound over the evaluations gives
// Confidence.
//
// Resolution. The per-replication error rate e is bounded by calibration
// only away from the limit (the growth test: false-alarm rate ≤ 10^-3 up to
// ρ = 0.97, power ≥ 0.99 with 10^6 arrivals at ρ = 1.02 on M/M/1 and 5.7%
// beyond the limit for FCFS on one-or-all, sim/stability_long_test.go). Closer to λ_max an overloaded queue grows too
// slowly to be seen — the growth t statistic scales like (λ/λ_max − 1)·√A
// for A measured arrivals — and a stable one mixes too slowly, so a bracket
// narrower than the test's resolution at the run length is not more
// accurate: choose RelTol no smaller than it, or lengthen the runs (four
// times the arrivals halve it). Point.Throughput helps there: in overload
// the departure rate of a monotone system is its saturation throughput,
// which is λ_max for FCFS-like policies (the saturation rule). Since engine
// 0.7.0 the verdict also pools the work deficit over the replications
// (sim/deficit.go): an overload shows in every replication as work
// delivered short of the offer, and pooled that is seen closer to λ_max
// than the growth test sees it — Kill-Smart (5, 100), closed form 1.7765,
// is bracketed in [1.7748, 1.7842] with 5 replications of 10^6 arrivals
// (the upper end decided by the pooled deficit, Stouffer's z 10.8 against
// 4.36 with each replication's t divided by its AR(1) factor, engine
// 0.7.1; 13.0 without), the same bracket as engine 0.7.0's.
package limit

import (
	"errors"
	"fmt"
	"math"
	"runtime"
	"sync"

	"github.com/msjfarm/msjfarm/sim"
)

// RunFunc runs replication rep (0 ≤ rep < Reps) at arrival rate lambda.
// Using the same seed for the same rep at every rate (common random
// numbers) keeps the verdicts of nearby rates consistent.
type RunFunc func(lambda float64, rep int) (*sim.Result, error)

// Options configure a search.
type Options struct {
	// Lo and Hi bracket the arrival rates searched: 0 < Lo < Hi, finite.
	Lo, Hi float64
	// Reps is the number of replications per evaluated rate (0: 5). An odd
	// number avoids ties (which count as unstable, see sim.Pool).
	Reps int
	// RelTol stops the search once hi/lo − 1 ≤ RelTol (0: 0.02, i.e. the
	// bracket's geometric midpoint is within ±1% of both ends).
	RelTol float64
	// PerRunError is the per-replication error rate assumed for
	// Confidence (0: 0.01, one minus the growth test's calibrated power;
	// its calibrated false-alarm rate is ten times smaller).
	PerRunError float64
	// Parallel is the number of replications run at once (0: GOMAXPROCS).
	Parallel int
}

// Outcome is how a search ended.
type Outcome string

// Search outcomes.
const (
	// Found: λ_max is bracketed, Lo stable and Hi unstable.
	Found Outcome = "found"
	// NoLimitInRange: stable at the top of the range; Lo = Hi = the top
	// (λ_max ≥ Lo, no upper bound found).
	NoLimitInRange Outcome = "no_limit_in_range"
	// UnstableAtLowest: unstable (or truncated) at the bottom of the range;
	// Lo = Hi = the bottom (λ_max ≤ Hi, no lower bound found).
	UnstableAtLowest Outcome = "unstable_at_lowest"
)

// Point is one evaluated rate.
type Point struct {
	Lambda  float64          `json:"lambda"`
	Verdict sim.PointVerdict `json:"verdict"`
	// Throughput is the mean departure rate over the replications; in
	// overload it estimates the saturation throughput.
	Throughput float64 `json:"throughput"`
}

// Limit is a search's result.
type Limit struct {
	Outcome Outcome `json:"outcome"`
	// Lo and Hi bracket λ_max (see Outcome for the one-sided results).
	Lo float64 `json:"lo"`
	Hi float64 `json:"hi"`
	// Estimate is the bracket's geometric midpoint (Found only, else 0).
	Estimate float64 `json:"estimate"`
	// Confidence is a lower bound on the probability that the result is
	// right if each replication errs independently with probability
	// Options.PerRunError: for Found, 1 − (evaluations)·P(a majority is
	// wrong), a union bound over every evaluated verdict; for the one-sided
	// outcomes, 1 − P(the deciding end's majority is wrong). See the package
	// comment for its scope.
	Confidence float64 `json:"confidence"`
	// Truncated reports that some evaluated rate hit MaxInSystem without an
	// unstable majority; such a rate is treated as unstable (a queue past
	// the memory budget is not a usable operating point either way).
	Truncated bool `json:"truncated"`
	// Undecided reports that some evaluated rate was undecided (engine ≥
	// 0.7.4: a class served in episodes longer than the window's batches,
	// sim.VerdictUndecided); such a rate is treated as unstable too, so the
	// bracket's upper end may be a stable rate with cycles longer than the
	// run: run longer to place it.
	Undecided bool `json:"undecided,omitempty"`
	// Points lists every evaluated rate in order; Runs counts replications.
	Points []Point `json:"points"`
	Runs   int     `json:"runs"`
}

// note records a verdict that is not a decision (truncated, undecided),
// which the search counts as unstable.
func (l *Limit) note(v sim.Verdict) {
	switch v {
	case sim.VerdictTruncated:
		l.Truncated = true
	case sim.VerdictUndecided:
		l.Undecided = true
	}
}

// MaxEvals is the number of rates a search with these options evaluates at
// most: both ends, then bisection steps until the tolerance.
func (o Options) MaxEvals() int {
	o = o.withDefaults()
	if !(o.Hi > o.Lo && o.Lo > 0) || !(o.RelTol > 0) {
		return 2
	}
	steps := math.Ceil(math.Log2(math.Log(o.Hi/o.Lo) / math.Log1p(o.RelTol)))
	return 2 + int(math.Max(steps, 0))
}

func (o Options) withDefaults() Options {
	if o.Reps == 0 {
		o.Reps = 5
	}
	if o.RelTol == 0 {
		o.RelTol = 0.02
	}
	if o.PerRunError == 0 {
		o.PerRunError = 0.01
	}
	if o.Parallel == 0 {
		o.Parallel = runtime.GOMAXPROCS(0)
	}
	return o
}

// Validate checks the options; errors name the field.
func (o Options) Validate() error {
	finite := func(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }
	switch {
	case !finite(o.Lo) || o.Lo <= 0:
		return fmt.Errorf("limit: lo must be a positive arrival rate, got %v", o.Lo)
	case !finite(o.Hi) || o.Hi <= o.Lo:
		return fmt.Errorf("limit: hi must be a finite arrival rate above lo = %v, got %v", o.Lo, o.Hi)
	case o.Reps < 0:
		return fmt.Errorf("limit: reps must be >= 1 (0: 5), got %d", o.Reps)
	case !finite(o.RelTol) || o.RelTol < 0:
		return fmt.Errorf("limit: rel_tol must be > 0 (0: 0.02), got %v", o.RelTol)
	case !(o.PerRunError >= 0 && o.PerRunError < 0.5):
		return fmt.Errorf("limit: per_run_error must be in [0, 0.5) (0: 0.01), got %v", o.PerRunError)
	case o.Parallel < 0:
		return fmt.Errorf("limit: parallel must be >= 0, got %d", o.Parallel)
	}
	return nil
}

// Search finds λ_max in [opt.Lo, opt.Hi]. An error of a run ends the
// search with that error (naming the rate and replication).
func Search(run RunFunc, opt Options) (*Limit, error) {
	if run == nil {
		return nil, errors.New("limit: no run function")
	}
	if err := opt.Validate(); err != nil {
		return nil, err
	}
	opt = opt.withDefaults()
	res := &Limit{}
	eval := func(lambda float64) (unstable bool, err error) {
		p, err := evaluate(run, lambda, opt)
		if err != nil {
			return false, err
		}
		res.Points = append(res.Points, p)
		res.Runs += p.Verdict.N
		res.note(p.Verdict.Verdict)
		return p.Verdict.Verdict != sim.VerdictStable, nil
	}
	// falseU: a stable rate's majority says unstable; miss: the reverse.
	falseU, miss := sim.MajorityErrors(opt.Reps, opt.PerRunError, opt.PerRunError)
	u, err := eval(opt.Lo)
	if err != nil {
		return nil, err
	}
	if u {
		res.Outcome, res.Lo, res.Hi, res.Confidence = UnstableAtLowest, opt.Lo, opt.Lo, 1-falseU
		return res, nil
	}
	if u, err = eval(opt.Hi); err != nil {
		return nil, err
	}
	if !u {
		res.Outcome, res.Lo, res.Hi, res.Confidence = NoLimitInRange, opt.Hi, opt.Hi, 1-miss
		return res, nil
	}
	lo, hi := opt.Lo, opt.Hi
	for range opt.MaxEvals() - 2 {
		if hi/lo-1 <= opt.RelTol {
			break
		}
		mid := math.Sqrt(lo * hi)
		if u, err = eval(mid); err != nil {
			return nil, err
		}
		if u {
			hi = mid
		} else {
			lo = mid
		}
	}
	res.Outcome, res.Lo, res.Hi = Found, lo, hi
	res.Estimate = math.Sqrt(lo * hi)
	res.Confidence = unionBound(len(res.Points), math.Max(falseU, miss))
	return res, nil
}

// evaluate runs opt.Reps replications at lambda, opt.Parallel at a time,
// and pools them.
func evaluate(run RunFunc, lambda float64, opt Options) (Point, error) {
	rs := make([]*sim.Result, opt.Reps)
	errs := make([]error, opt.Reps)
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(opt.Parallel, opt.Reps) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				rs[i], errs[i] = run(lambda, i)
				if errs[i] == nil && rs[i] == nil {
					errs[i] = errors.New("run returned no result")
				}
			}
		}()
	}
	for i := range opt.Reps {
		next <- i
	}
	close(next)
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			return Point{}, fmt.Errorf("limit: λ = %v, replication %d: %w", lambda, i, err)
		}
	}
	return PointOf(lambda, rs)
}

// FCFSOneOrAllLimit is the exact stability limit of FCFS on a one-or-all
// workload with k servers: light jobs (one server, exponential with mean
// meanLight) with probability p1, heavy jobs (all k servers, any
// distribution with mean meanHeavy) otherwise. FCFS is stable exactly below
// its saturation throughput (the saturation rule: Baccelli & Foss 1995;
// for this model Rumyantsev & Morozov 2017), computed here from the
// saturated system's renewal cycle: a heavy job alone (mean meanHeavy), then
// the run of G light jobs behind it, G geometric with P(G = g) = p1^g (1−p1),
// which lasts until the last of them leaves, the next heavy job waiting for
// all k servers. With g ≤ k lights all start at once: the maximum of g
// exponentials, mean H_g·meanLight (H_g the harmonic number); with g > k
// the first g − k completions come at rate k/meanLight while k are busy,
// then the last k drain in H_k·meanLight. A cycle serves 1/(1−p1) jobs on
// average, so λ_max = 1/((1−p1)·E[cycle]). As k → ∞ this is Kill-Smart's
// FCFS bound (K §4.4), 1/((1−p1)(meanHeavy − ln(1−p1)·meanLight)).
func FCFSOneOrAllLimit(k int, p1, meanLight, meanHeavy float64) float64 {
	var phase, pg, h float64
	pg = 1 - p1 // P(G = 0)
	for g := 0; pg > 1e-18 || g <= k; g++ {
		if g > 0 && g <= k {
			h += 1 / float64(g)
		}
		if g <= k {
			phase += pg * h * meanLight
		} else {
			phase += pg * (float64(g-k)/float64(k) + h) * meanLight
		}
		pg *= p1
	}
	return 1 / ((1 - p1) * (meanHeavy + phase))
}
