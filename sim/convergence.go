package sim

import (
	"math"

	"github.com/msjfarm/msjfarm/sim/stats"
)

// Run-length adequacy: is the run long enough for its means to be read as
// steady-state estimates?
//
// Evidence 1, the MSER truncation point. The recorder cuts the whole run —
// warm-up included, up to the arrival that closes the window — into
// convBatches equal parts by arrivals and keeps each part's time-average
// number in system (a fixed array of boundary times and areas, O(1) per
// event, memory flat whatever the run length). MSER-5 (White, Cobb & Spratt,
// "A comparison of five steady-state truncation heuristics", WSC 2000: MSER
// on means of 5 consecutive batches) then finds the truncation point d that
// minimises the standard error of the truncated mean. The search runs to
// three quarters of the run, not the customary half, precisely so that a
// point beyond half can be seen: then the series was still trending over
// most of the run — a transient longer than half the run (a slowly filling
// queue near saturation, or an overload the growth test has not yet
// flagged) — and the run is too short to estimate the steady state (Hoad,
// Robinson & Davies, J. Oper. Res. Soc. 61(11), 2010, reject such runs the
// same way). That is the "mser" reason, given only with a clear shift: the
// mean of the batches before the point must differ from the mean after it
// by more than convShiftZ = 4 standard errors (ShiftZ), because on a
// stationary but bursty series (MSF near saturation, heavy-job starvation
// episodes) a calm last quarter alone can make the MSER statistic smallest
// there. Measured on one-or-all with 1.1·10^5 arrivals per run: FCFS at
// λ = 2, 2 of 300 runs flagged (z 4.0 and 5.0); MSF at λ = 6, 13 of 300,
// each a run dominated by one starvation episode (its mean 43–105 against
// a median near 60), which is what the verdict is for; overloaded FCFS at
// λ = 3.2, every run (z ≥ 14); with 1.1·10^6 arrivals none of 50 FCFS
// runs at λ = 2 nor of 30 MSF runs at λ = 7. A point
// beyond the warm-up but within half the run does not count: MSER's
// choice inside a flat stretch of its statistic is arbitrary (on M/M/1 at
// ρ = 0.5 it lands anywhere in the first half). MSER detects a transient
// from the initial state, not slow mixing: a stationary run that is short
// against its relaxation time (FCFS on one-or-all at λ = 2.95 with 10^5
// arrivals, means 26–78 across seeds) converges by this rule, and the
// confidence interval's width across replications is what shows it.
//
// Evidence 2, completed cycles. A policy that alternates between long
// phases (Quickswap's drain phases, Kill-Smart's kill cycles, Balanced
// Splitting's use of its helper servers) has a steady state only over many
// cycles: the window's mean is an average over the cycles it contains, and
// with c cycles its between-cycle part has the spread of a mean of c
// cycle contributions. Fewer than MinCycles = 30 completed cycles in the
// measured window is the "cycles" reason: 30 is the usual floor for the
// normal approximation of a mean of i.i.d. cycle contributions on which the
// regenerative method's confidence intervals rest (Crane & Iglehart,
// "Simulating stable stochastic systems, I: general multiserver queues",
// J. ACM 21(1), 1974; Law, Simulation Modeling and Analysis, §9.5.3), and
// with fewer the cycle-to-cycle variation (a phase length is heavy-tailed
// near saturation) is not averaged out. Policies report their cycles through
// the optional CycleReporter capability. The rule also flags the overload
// the growth test misses: MSFQ (ℓ = 31) on one-or-all past its limit
// 7.805 alternates ever longer phases, a sawtooth of growing amplitude
// whose segment means are too irregular for a slope test (with 10^6
// arrivals growth fired in 0 of 4 runs at λ = 7.9 and 8.2, 3 of 4 at
// λ = 9; only the ρ ≥ 1 overload rule flagged them all), while its
// completed cycles in the window fell below 30 in 11 of those 12 runs.
const (
	convBatches = 320 // 64 MSER-5 groups of 5 batches
	// ConvergenceMinArrivals is the fewest arrivals (warm-up included)
	// of a run the engine gives a convergence verdict, once it reaches
	// the end of its window.
	ConvergenceMinArrivals = 5 * convBatches
	// MinCycles is the fewest completed policy cycles in the measured
	// window for a converged verdict (see above).
	MinCycles = 30
	// convShiftZ is the shift z (Convergence.ShiftZ) above which a late
	// MSER point is read as a transient (see above).
	convShiftZ = 4.0
)

// CycleReporter is implemented by policies whose behaviour runs in long
// cycles (phases, kill cycles, helper use). Cycles returns what a cycle is
// (e.g. "phase_switches") and how many completed during the measurement
// window; the engine calls it once at the end of the replication, and the
// count feeds the converged verdict (Convergence).
type CycleReporter interface {
	Cycles() (name string, n int64)
}

// Convergence is the run-length adequacy verdict of one replication and its
// evidence. It is absent when the run stopped before its window closed
// (truncated, trace ended), whose verdict says more.
type Convergence struct {
	// Converged reports that no reason fired.
	Converged bool `json:"converged"`
	// Reasons lists the rules that fired: "mser" (the MSER-5 truncation
	// point is beyond half the run), "cycles" (fewer than MinCycles
	// completed policy cycles in the window), "throughput" (deficit.go)
	// and (engine ≥ 0.7.2) "episodes" (a busy class delivered nothing for
	// an eighth of the window: SilentClass names it).
	Reasons []string `json:"reasons,omitempty"`
	// MSERPoint is the MSER-5 truncation point in arrivals from the start
	// of the run, RunArrivals the arrivals it was searched over (warm-up
	// plus window); MSERFraction is their ratio.
	MSERPoint    int64   `json:"mser_point"`
	RunArrivals  int64   `json:"run_arrivals"`
	MSERFraction float64 `json:"mser_fraction"`
	// CycleName and Cycles are the policy's cycle count in the window
	// (CycleReporter); Cycles is -1 for a policy without cycles.
	CycleName string `json:"cycle_name,omitempty"`
	Cycles    int64  `json:"cycles"`
	// ShiftZ is the standardized difference between the mean of the
	// batches before the MSER point and after it (0 when the point is 0).
	ShiftZ float64 `json:"shift_z"`
	// SilentClass is the class that made the "episodes" reason.
	SilentClass string `json:"silent_class,omitempty"`
}

// convBoundary is the arrival index at which batch i of the run starts.
func (r *recorder) convBoundary(i int) int64 {
	return (r.cfg.Warmup + r.cfg.Arrivals) * int64(i) / convBatches
}

// convCheckpoint records the run-wide area at batch boundaries (arrival id,
// any phase of the run).
func (r *recorder) convCheckpoint(s *System, id int64) {
	for r.convNext < convBatches && id == r.convAt {
		r.convT[r.convNext], r.convArea[r.convNext] = s.now, r.areaAll
		r.convNext++
		r.convAt = r.convBoundary(r.convNext)
	}
}

// convergence computes the verdict; nil when the batches are incomplete
// (the run stopped before its window closed, or it has fewer arrivals than
// batches).
func (r *recorder) convergence(p Policy, ds []Deficit) *Convergence {
	total := r.cfg.Warmup + r.cfg.Arrivals
	if r.convNext != convBatches+1 || total < ConvergenceMinArrivals {
		return nil
	}
	means := make([]float64, convBatches)
	prev := 0.0
	for i := range means {
		d := r.convT[i+1] - r.convT[i]
		if d > 0 {
			prev = (r.convArea[i+1] - r.convArea[i]) / d
		}
		means[i] = prev // a batch of simultaneous arrivals repeats its predecessor
	}
	groups := stats.BatchMeans(means, 5)
	d := stats.MSERUpTo(groups, 3*len(groups)/4)
	c := &Convergence{RunArrivals: total, Cycles: -1}
	c.MSERPoint = total * int64(5*d) / convBatches
	c.MSERFraction = float64(c.MSERPoint) / float64(total)
	c.ShiftZ = shiftZ(groups, d)
	if 2*d > len(groups) && c.ShiftZ > convShiftZ {
		c.Reasons = append(c.Reasons, "mser")
	}
	if cr, ok := p.(CycleReporter); ok {
		c.CycleName, c.Cycles = cr.Cycles()
		if c.Cycles < MinCycles {
			c.Reasons = append(c.Reasons, "cycles")
		}
	}
	if lowThroughput(ds) {
		c.Reasons = append(c.Reasons, "throughput")
	}
	if c.SilentClass = silentClass(ds); c.SilentClass != "" {
		c.Reasons = append(c.Reasons, "episodes")
	}
	c.Converged = len(c.Reasons) == 0
	return c
}

// Episodes: a class silent for silentSegments segments or more of the
// tested half (an eighth of the window) while offered at least
// silentOffer jobs over the half (4 per segment: a Poisson flow that busy
// is silent for 8 segments with probability about 25·e^-32) is served in
// episodes longer than the batches, which this run holds too few of to
// judge: its deficit is not tested per replication (deficitBatch), and the
// replication is not converged with reason "episodes", naming the class.
// MSF on Borg cell B serves its 2000-server class only once the others
// leave at most 48 servers busy, then its whole backlog: at λ = 4.25 the
// class waits about 10^6 time units, as long as a run of 10^7 arrivals
// (docs/design.md: whether it then keeps up is not settled by such runs).
const (
	silentSegments = 8
	silentOffer    = 4 * growthSegments / 2
)

// silentClass names the class with the longest silence that makes the
// "episodes" reason, or "".
func silentClass(ds []Deficit) string {
	name, longest := "", 0
	for _, d := range ds {
		if d.Class >= 0 && d.Silence >= silentSegments && d.Offered >= silentOffer && d.Silence > longest {
			name, longest = d.Name, d.Silence
		}
	}
	return name
}

// shiftZ is the standardized difference between the mean of the d deleted
// groups and the mean of the retained ones, with the retained groups'
// variance for both: how clearly the deleted prefix is a transient rather
// than a calm stretch at the end making the retained variance small.
func shiftZ(y []float64, d int) float64 {
	n := len(y)
	if d < 1 || n-d < 2 {
		return 0
	}
	var pre, suf stats.Acc
	for i, v := range y {
		if i < d {
			pre.Add(v)
		} else {
			suf.Add(v)
		}
	}
	se := math.Sqrt(suf.Var() * (1/float64(d) + 1/float64(n-d)))
	if !(se > 0) {
		return 0
	}
	return math.Abs(pre.Mean()-suf.Mean()) / se
}

// ConvergenceVerdict pools the converged verdicts of one parameter point's
// replications.
type ConvergenceVerdict struct {
	// N counts the replications with a verdict (Result.Convergence set);
	// Unconverged of them failed it, MSERLate by the MSER rule and
	// FewCycles by the cycles rule (a replication can fail both).
	N           int `json:"n"`
	Unconverged int `json:"unconverged"`
	MSERLate    int `json:"mser_late"`
	FewCycles   int `json:"few_cycles"`
	// Converged is the pooled verdict: fewer than half the replications
	// failed (the majority of Pool, for the same reason: one bursty run
	// does not overturn nine, while a run length that is too short for the
	// point fails in most replications). False when N = 0.
	Converged bool `json:"converged"`
	// MedianMSERFraction is the median MSER point as a fraction of the
	// run; MinCycles the fewest cycles of a replication (-1: the policy
	// has no cycles).
	MedianMSERFraction float64 `json:"median_mser_fraction"`
	MinCycles          int64   `json:"min_cycles"`
	// LowThroughput counts the replications failed by the throughput rule
	// (their whole window's departures, or delivered work, significantly
	// and materially short of the offer). Throughput pools that shortfall (1 − departures/
	// arrivals of the window, "jobs") over the replications: when it
	// fires, the point is not converged whatever the vote says — every
	// replication may be weakly short while the vote misses it.
	LowThroughput int `json:"low_throughput"`
	// Episodes counts the replications failed by the "episodes" rule (a
	// busy class silent for an eighth of the window), SilentClass the
	// class named by the first of them.
	Episodes    int            `json:"episodes,omitempty"`
	SilentClass string         `json:"silent_class,omitempty"`
	Throughput  *PooledDeficit `json:"throughput,omitempty"`
	// WorkShortfall pools the delivered work's shortfall the same way
	// (1 − delivered/offered work over the window): a starving class of
	// big jobs shows there while few jobs are missing.
	WorkShortfall *PooledDeficit `json:"work_shortfall,omitempty"`
}

// poolShortfall pools the whole-window relative deficit of the total
// quantity name over the replications carrying it, at level
// throughputAlpha/4 (the two totals and the two statistics share the
// converged verdict's level): Student's t over the replications, and
// Stouffer's z of their own window t statistics (64 increments: a t(63)
// scale), each capped at 5 as in the pooled deficit. Stouffer's z is what
// sees a policy whose cycles are as long as the run: MSF on Borg cell B
// at λ = 4.25, 10^7 arrivals × 4, delivered 7.5%–22% less work than
// offered (means of 11 seed groups) with window t from 0.5 to 23, a
// Student t of 2.7–7.6 against 16.3 with 3 degrees of freedom, but z of
// 4.6–8.7 against 3.54. Nil when no replication carries the evidence.
func poolShortfall(rs []*Result, name string) *PooledDeficit {
	xs, ts := windowDeficits(rs, name)
	if len(xs) == 0 {
		return nil
	}
	p := pooledTest(name, -1, xs, ts, pooling{throughputAlpha / 4, growthSegments - 1})
	return &p
}

// PoolConvergence pools the replications' converged verdicts (nil results
// and results without a verdict are skipped).
func PoolConvergence(rs []*Result) ConvergenceVerdict {
	v := ConvergenceVerdict{MinCycles: -1}
	var fr []float64
	for _, r := range rs {
		if r == nil || r.Convergence == nil {
			continue
		}
		c := r.Convergence
		v.N++
		if !c.Converged {
			v.Unconverged++
		}
		for _, why := range c.Reasons {
			switch why {
			case "mser":
				v.MSERLate++
			case "cycles":
				v.FewCycles++
			case "throughput":
				v.LowThroughput++
			case "episodes":
				v.Episodes++
				if v.SilentClass == "" {
					v.SilentClass = c.SilentClass
				}
			}
		}
		fr = append(fr, c.MSERFraction)
		if c.Cycles >= 0 && (v.MinCycles < 0 || c.Cycles < v.MinCycles) {
			v.MinCycles = c.Cycles
		}
	}
	v.Throughput = poolShortfall(rs, DeficitJobs)
	v.WorkShortfall = poolShortfall(rs, DeficitWork)
	short := func(p *PooledDeficit) bool { return p != nil && p.Fired }
	v.Converged = v.N > 0 && 2*v.Unconverged < v.N && !short(v.Throughput) && !short(v.WorkShortfall)
	v.MedianMSERFraction = median(fr)
	return v
}
