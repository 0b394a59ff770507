package sim

import (
	"errors"
	"fmt"
	"math"

	"github.com/msjfarm/msjfarm/sim/stats"
)

// Memory budget and the default cap on jobs in system.
//
// Memory is O(jobs in system): the Job struct (96 bytes), the pool's free
// list and the policy's queues (pointers in ring buffers or heaps that
// double as they grow). Measured as bytes allocated per job held, with every
// built-in policy driven past its limit on one-or-all at λ = 12 up to 2·10^5
// jobs: about 120 B for the queue-based policies (FCFS, MSF, the Quickswap
// family, Kill-Smart, Balanced Splitting), 150 B for First-Fit, 184 B for
// the Gittins variants and 461 B for ServerFilling (its per-job index).
// BytesPerJob rounds the worst of these up, so the default cap keeps every
// built-in policy's replication within MemoryBudget (plus the garbage
// collector's head room); a replication is one goroutine, and a worker runs
// one per core.
const (
	// BytesPerJob is the documented memory cost of one job in the system.
	BytesPerJob = 512
	// MemoryBudget is the memory one replication may use for jobs in the
	// system when Config.MaxInSystem is 0.
	MemoryBudget = 512 << 20
	// DefaultMaxInSystem = MemoryBudget / BytesPerJob = 1,048,576 jobs: far
	// above any stable queue of the papers' settings (Static Quickswap holds
	// 1.4·10^5–3.8·10^5 jobs on Borg cell B at λ = 3.5–4.25) and reached
	// only by a runaway queue, which the growth test has usually flagged
	// long before.
	DefaultMaxInSystem = MemoryBudget / BytesPerJob
	// MaxMaxInSystem bounds Config.MaxInSystem: 2^25 = 33,554,432 jobs,
	// 16 GiB at BytesPerJob, 32 times the default's MemoryBudget. A cap
	// is the guard that stops a runaway queue before it takes the
	// memory; unbounded, max_in_system: 1e18 switched it off, and an
	// overloaded replication's memory grew with its queue to the end of
	// its arrivals, or until it ran out: its plugin process's address
	// space (the task failed, with no truncated result) or, in process
	// (a worker's --runner inprocess, simulate, a dry run's calibration),
	// the host's. The default cap fits the address space a
	// plugin process is given per replication (internal/sandbox: 5 ×
	// MemoryBudget, for the heap growth GOGC=400 allows); a cap above it
	// needs --plugin-memory raised, by 2.5 GiB per 2^20 jobs at the most.
	// The bound leaves room for what long runs need and use: a queue of
	// MSF on Borg cell B passes 10^6 jobs within 10^8 arrivals, and the
	// runs of docs/design.md set 10^7 and 2·10^7 (TestBorgBLongRunsStable),
	// 0.6 times the bound. At the costs measured above, 2^25 jobs are
	// 4 GB of a queue-based policy's and 15 GB of ServerFilling's.
	MaxMaxInSystem = 32 * DefaultMaxInSystem
)

// checkCap rejects a cap too small to run at all: below k, an idle-server
// system could be stopped by its own waiting line before any policy
// decision matters, and every mean would be a bound.
func checkCap(w *Workload, c *Config) error {
	if c.MaxInSystem > 0 && c.MaxInSystem < w.Servers {
		return fmt.Errorf("run: max_in_system = %d is below the %d servers: the run could not even fill them (0 means the default, %d, from a %d MiB budget at %d bytes per job)",
			c.MaxInSystem, w.Servers, DefaultMaxInSystem, MemoryBudget>>20, BytesPerJob)
	}
	return nil
}

// The growth test: is the number in system still growing through the second
// half of the measurement window?
//
// Data. The window is cut into growthSegments equal parts by arrivals (64:
// a fixed array of 65 boundary times and areas, recorded at arrivals, O(1)
// per event, no allocation); part i's time average Y_i = area_i/duration_i
// is a batch mean of the jobs-in-system process. The test regresses the 32
// batch means of the second half on their mid-times (ordinary least
// squares): slope b, residuals e_i, t = b/se(b) with 30 degrees of freedom.
// The first half is left out so that a warm-up too short for a slowly
// mixing policy (the queue still filling from empty) is not read as growth.
//
// Why batch means with a fixed number of batches. For a stationary process
// the means of a fixed number of batches become independent and normal as
// the batch length grows (Schmeiser, "Batch size effects in the analysis of
// simulation output", Oper. Res. 30(3), 1982: 10 to 30 batches are enough),
// so the slope's t statistic has a Student t(30) null distribution whatever
// the process's autocorrelation, provided each batch is long against it —
// the standardized-time-series argument (Schruben, "Confidence interval
// estimation using standardized time series", Oper. Res. 31(6), 1983). An
// overloaded queue instead grows linearly, N(t) ≈ c·t, with random-walk
// noise of order √t: t grows like √(run length), so a strict critical value
// costs no power at realistic run lengths (with 10^6 arrivals, over 300
// replications each: t ≥ 29, median 70, for M/M/1 at ρ = 1.02; t ≥ 44,
// median 95, for FCFS on one-or-all at λ = 3.2).
//
// Accounting for the autocorrelation left between batches. Near saturation
// a 1/64 of a 10^6-arrival window is not always long against the queue's
// relaxation time, so batch means stay correlated and the t(30) law is
// optimistic: at ρ = 0.97 the measured spread of t is up to 1.7 times the
// t(30) spread (MSF on one-or-all). The critical value is therefore
//
//	t_crit = t_{30}(1 − 10^-6) · √growthInflation · √((1+φ)/(1−φ)),
//
// where growthInflation = 3 allows for that measured variance inflation and
// the last factor is the AR(1) variance inflation of a trend's slope
// (Bayley & Hammersley 1946; Santer et al., J. Geophys. Res. 105(D6), 2000)
// with φ the lag-1 autocorrelation of the residuals, clamped to [0, 0.5]:
// a visibly autocorrelated residual raises the bar up to √3 times. The clamp
// matters because an overloaded queue's residuals around its trend are a
// random walk (φ ≈ 0.7): an unclamped AR(1) correction would take back most
// of the power. t_crit ranges from 10.2 to 17.6.
//
// Material growth. The test also requires the growth the slope implies over
// the tested half to exceed 25% of that half's mean plus 2 jobs, so that a
// statistically clear but negligible drift is not called instability. An
// overloaded queue after a warm-up of W arrivals and a window of A passes it
// when W < 1.25·A (growth 0.5 against a level of W/A + 0.75 window-rates).
//
// Calibration (stability_test.go, stability_long_test.go, fixed seeds,
// 10^6 arrivals after 10^5 of warm-up): no false positive in 3000
// replications of issue #15's stable cases at ρ = 0.97 and of its reported
// false alarms' settings (largest t 7.4, First-Fit at λ = 7), so the
// per-replication false-positive rate is at most 0.0998% (exact binomial
// 95% bound); power 300 of 300 on M/M/1 at ρ = 1.02 and on FCFS on
// one-or-all at λ = 3.2 (at least 99.0%, 95% bound). The table and the
// commands are in the long test's doc comment.
const (
	growthSegments  = 64
	growthDF        = growthSegments/2 - 2
	growthAlpha     = 1e-6
	growthInflation = 3.0
	growthPhiMax    = 0.5
	growthMaterial  = 0.25
	growthMinJobs   = 2.0
)

// growthBase is t_{30}(1 − 10^-6)·√3 ≈ 10.17, the critical value when the
// residuals show no autocorrelation.
var growthBase = stats.TQuantile(1-growthAlpha, growthDF) * math.Sqrt(growthInflation)

// GrowthCritical is the growth test's critical value for a residual lag-1
// autocorrelation phi (clamped to [0, 0.5]).
func GrowthCritical(phi float64) float64 {
	phi = math.Max(0, math.Min(phi, growthPhiMax))
	if math.IsNaN(phi) {
		phi = growthPhiMax
	}
	return growthBase * math.Sqrt((1+phi)/(1-phi))
}

// Growth is the growth test's statistics, reported for every replication
// whose window was long enough to run it (so that a point's replications can
// be pooled, see Pool), whether it fired or not.
type Growth struct {
	// T is the slope's t statistic (0 when the residuals are exactly zero:
	// JSON has no infinity).
	T float64 `json:"t"`
	// Critical is the critical value it was compared with (GrowthCritical).
	Critical float64 `json:"critical"`
	// Phi is the lag-1 autocorrelation of the residuals.
	Phi float64 `json:"phi"`
	// Rate is the slope in jobs per unit time.
	Rate float64 `json:"rate"`
	// Relative is the growth the slope implies over the second half divided
	// by the second half's mean number in system.
	Relative float64 `json:"relative"`
	// Fired reports that the test found growth: T > Critical and the growth
	// is material (see the growth test's description above).
	Fired bool `json:"fired"`
}

// growthTest runs the test on the recorded boundary times and areas. It
// returns nil when the window did not have growthSegments distinct parts
// (fewer arrivals than that, or a run stopped inside the window), and the
// time average of each part.
func growthTest(segT, segArea *[growthSegments + 1]float64) (*Growth, []float64) {
	means := make([]float64, growthSegments)
	mid := make([]float64, growthSegments)
	for i := range means {
		d := segT[i+1] - segT[i]
		if !(d > 0) {
			return nil, nil
		}
		means[i] = (segArea[i+1] - segArea[i]) / d
		mid[i] = (segT[i] + segT[i+1]) / 2
	}
	xs, ys := mid[growthSegments/2:], means[growthSegments/2:]
	n := float64(len(xs))
	var mx, my float64
	for i := range xs {
		mx += xs[i]
		my += ys[i]
	}
	mx, my = mx/n, my/n
	var sxx, sxy float64
	for i := range xs {
		sxx += (xs[i] - mx) * (xs[i] - mx)
		sxy += (xs[i] - mx) * (ys[i] - my)
	}
	if !(sxx > 0) {
		return nil, nil
	}
	b := sxy / sxx
	var sse, c1, prev float64
	for i := range xs {
		e := ys[i] - my - b*(xs[i]-mx)
		sse += e * e
		if i > 0 {
			c1 += e * prev
		}
		prev = e
	}
	g := &Growth{Rate: b}
	if sse > 0 {
		g.Phi = c1 / sse
	}
	g.Critical = GrowthCritical(g.Phi)
	se := math.Sqrt(sse / (n - 2) / sxx)
	if se > 0 {
		g.T = b / se
	}
	span := segT[growthSegments] - segT[growthSegments/2]
	if my > 0 {
		g.Relative = b * span / my
	}
	g.Fired = b > 0 && (se == 0 || g.T > g.Critical) && b*span > growthMaterial*my+growthMinJobs
	return g, means
}

// Verdict is the stability verdict of a parameter point.
type Verdict string

// Point verdicts.
const (
	// VerdictStable: fewer than half the replications show evidence of
	// instability, and the truncated ones could not change that.
	VerdictStable Verdict = "stable"
	// VerdictUnstable: at least half the replications show evidence of
	// instability (growth, deficit, drain_limit, trace_ended, overload),
	// or the pooled work-deficit test fired.
	VerdictUnstable Verdict = "unstable"
	// VerdictTruncated: no majority either way because replications hit
	// MaxInSystem: had they run on, they could have decided it. Raise the
	// cap (or the memory budget) to get a verdict.
	VerdictTruncated Verdict = "truncated"
	// VerdictUndecided (engine ≥ 0.7.4): a rule found evidence of
	// instability, but in most replications a class was served in episodes
	// longer than the tests' batches (episodes.go): in a window that short
	// a stable point with long cycles shows the same evidence as an
	// overload, so the run cannot tell them apart. Run longer.
	VerdictUndecided Verdict = "undecided"
)

// PointVerdict is the pooled verdict of one parameter point's replications.
type PointVerdict struct {
	Verdict Verdict `json:"verdict"`
	// N is the number of replications pooled; Unstable of them showed
	// evidence of instability; Truncated of the others hit the cap.
	N         int `json:"n"`
	Unstable  int `json:"unstable"`
	Truncated int `json:"truncated"`
	// LowerBound reports that at least one replication's per-job means are
	// lower bounds (measured jobs still present when it stopped): the
	// point's means must then be shown as bounds, never averaged into a
	// confidence interval as estimates.
	LowerBound bool `json:"lower_bound"`
	// MedianGrowthT is the median of the replications' growth t statistics
	// (over those that ran the test; 0 if none did), for display.
	MedianGrowthT float64 `json:"median_growth_t"`
	// Test names the rule that decided the verdict: TestMajority (at least
	// half the replications flagged unstable), TestDeficit followed by
	// "-t:" or "-z:" and the quantity (the pooled work-deficit test fired
	// by its Student t or its Stouffer z, e.g. "deficit-t:work"),
	// TestTruncated (unstable and truncated runs reach half) or TestNone
	// (stable: no rule fired). Statistic and Critical are its evidence:
	// for a vote, the replications counted and ⌈n/2⌉; for the deficit, the
	// statistic that fired and its critical value; for none, the vote's
	// count (the pooled deficits are in Deficits either way).
	Test      string  `json:"test"`
	Statistic float64 `json:"statistic"`
	Critical  float64 `json:"critical"`
	// Deficits is the pooled work-deficit test of every quantity (total
	// work, total jobs, each class's jobs; deficit.go), empty when no
	// replication carried the evidence.
	Deficits []PooledDeficit `json:"deficits,omitempty"`
	// Episodic names the class served in episodes longer than the batches
	// in at least half the replications (episodes.go), whatever the
	// verdict; EpisodicReps counts those replications. Overruled is the
	// rule (a Test value) that would have called an undecided point
	// unstable. (Engine ≥ 0.7.4.)
	Episodic     string `json:"episodic,omitempty"`
	EpisodicReps int    `json:"episodic_reps,omitempty"`
	Overruled    string `json:"overruled,omitempty"`
}

// The rules that can decide a point's verdict (PointVerdict.Test).
const (
	TestMajority  = "majority"
	TestDeficit   = "deficit"
	TestTruncated = "truncated"
	TestNone      = "none"
	// TestEpisodes decides an undecided point, followed by ":" and the
	// episodic class (PointVerdict.Episodic).
	TestEpisodes = "episodes"
)

// StrongestDeficit is the pooled deficit closest to firing (a fired one
// first, then the largest t over its critical value); false when none was
// tested (fewer than three replications with the evidence).
func (v PointVerdict) StrongestDeficit() (PooledDeficit, bool) {
	i := strongest(v.Deficits)
	if i < 0 {
		return PooledDeficit{}, false
	}
	return v.Deficits[i], true
}

// Pool pools one parameter point's replications into a verdict by two
// rules, in this order:
//
//   - unstable if at least half the replications (2u ≥ n) show evidence of
//     instability (Result.Unstable): Test "majority";
//   - unstable if the pooled work-deficit test fires on some quantity (the
//     total work, the total jobs or one class's jobs; deficit.go): Test
//     "deficit-t:<quantity>" or "deficit-z:<quantity>";
//   - otherwise truncated if the replications that hit the cap (and showed
//     no evidence) would reach that half (2(u+c) ≥ n);
//   - otherwise stable (Test "none").
//
// Then one rule can withdraw an unstable verdict: when a class was served
// in episodes longer than the batches in at least half the replications
// (episodes.go) and fewer than half were flagged for an offered load
// ρ ≥ 1, the point is undecided (Test "episodes:<class>", Overruled the
// rule withdrawn): its window is too short for either verdict.
//
// Why a majority. The per-replication tests' calibrated false-alarm rate α
// is at most 10^-3 up to ρ = 0.97; voters err independently (independent
// seeds), so with n = 10 a stable point is called unstable by the vote with
// probability P(Bin(10, α) ≥ 5) ≤ 2.5·10^-13 (MajorityErrors computes it
// for any n). One outlier among ten never decides, while the union rule it
// replaced (any flagged replication marks the point) turned a 10^-3
// per-replication false alarm into 10^-2 per point. Ties go to unstable.
//
// Why the pooled deficit as well. A vote needs each replication to see the
// overload on its own, which a strict per-replication test does only well
// past saturation: 1% past it (Kill-Smart (5, 100) at λ = 1.8, 10^6
// arrivals) one replication in ten saw it, and long overload cycles (FCFS
// on Borg cell B) leave half the replications unflagged. Every replication
// of such a point still delivers less than is offered; averaged over the
// replications that shortfall is clear (issue #31). The pooled test's level
// is 10^-4 per point (deficit.go), so the two rules together keep a stable,
// warmed-up point's false verdict nominally under 10^-3 (docs/design.md,
// "Verdict calibration", has the measured counts and their exact bounds).
//
// LowerBound is independent of the verdict: one bounded replication makes
// the point's means bounds. Results must be non-nil; an empty slice is an
// error.
func Pool(rs []*Result) (PointVerdict, error) {
	var v PointVerdict
	if len(rs) == 0 {
		return v, errors.New("pool: no replications")
	}
	var ts []float64
	for i, r := range rs {
		if r == nil {
			return v, fmt.Errorf("pool: replication %d is nil", i)
		}
		v.N++
		switch {
		case r.Unstable:
			v.Unstable++
		case r.Truncated:
			v.Truncated++
		}
		v.LowerBound = v.LowerBound || r.LowerBound
		if r.Growth != nil {
			ts = append(ts, r.Growth.T)
		}
	}
	v.Deficits = poolDeficits(rs, poolAlpha)
	v.Episodic, v.EpisodicReps = episodicClass(rs, v.N)
	half := float64((v.N + 1) / 2)
	d, tested := v.StrongestDeficit()
	switch {
	case 2*v.Unstable >= v.N:
		v.Verdict, v.Test, v.Statistic, v.Critical = VerdictUnstable, TestMajority, float64(v.Unstable), half
	case tested && d.Fired:
		which, stat, crit := d.Decider()
		v.Verdict, v.Test, v.Statistic, v.Critical = VerdictUnstable, TestDeficit+"-"+which+":"+d.Name, stat, crit
	case 2*(v.Unstable+v.Truncated) >= v.N:
		v.Verdict, v.Test, v.Statistic, v.Critical = VerdictTruncated, TestTruncated, float64(v.Unstable+v.Truncated), half
	default:
		v.Verdict, v.Test, v.Statistic, v.Critical = VerdictStable, TestNone, float64(v.Unstable), half
	}
	if v.Verdict == VerdictUnstable && v.Episodic != "" && 2*overloaded(rs) < v.N {
		v.Overruled = v.Test
		v.Verdict, v.Test, v.Statistic, v.Critical = VerdictUndecided, TestEpisodes+":"+v.Episodic, float64(v.EpisodicReps), half
	}
	v.MedianGrowthT = median(ts)
	return v, nil
}

// MajorityErrors returns, for n replications voting independently with
// per-replication false-alarm rate alpha and miss rate beta, the
// probabilities that Pool calls a stable point unstable (at least ⌈n/2⌉
// false alarms) and an unstable point stable (more than n/2 misses).
func MajorityErrors(n int, alpha, beta float64) (falseUnstable, missed float64) {
	return stats.BinomTail(n, (n+1)/2, alpha), stats.BinomTail(n, n/2+1, beta)
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := append([]float64(nil), xs...)
	// insertion sort: a point has a handful of replications
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j] < s[j-1]; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
