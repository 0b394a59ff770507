package sim

import (
	"context"
	"errors"
	"fmt"
	"math"
	"runtime/debug"

	"github.com/msjfarm/msjfarm/sim/rng"
	"github.com/msjfarm/msjfarm/sim/stats"
)

// Version is the engine version recorded in every result. Bump it whenever a
// change can alter any result bit for bit. 0.2.0: variances from Welford's
// accumulator and Jain's index from sim/stats (low-order bits); 0.3.0: the
// calibrated growth test, the overload rule, and a capped run reported as
// truncated rather than unstable, with lower-bound flags (new fields and
// flags; every mean is unchanged); 0.4.0: the converged verdict
// (Result.Convergence, a new field: every earlier number is unchanged, but
// a 0.3.0 record lacks the evidence, so it must not be reused as if it had
// it); 0.5.0: ServerFilling-SRPT, DivisorFilling-SRPT and the Gittins
// variants with ranks that change with age order jobs by a total order
// (plugins/serverfilling, srptfastorder.go): exact keys, a running job's
// key computed from the instant it would finish (SRPT) or started at age 0
// (Gittins), ties by rate, running first, that instant, arrival, instead of
// keys tied within 1e-13 × now, which is not transitive and made the order
// depend on its own history; crossing timers at the first instant the
// recomputed keys cross. Decisions change only at near-ties and crossing
// instants move by ulps; every other policy is unchanged. (The engine's
// speed work that came with it, variates drawn a block at a time and a
// leaner event heap, changes no result: every built-in policy on eight
// workloads, 202 results, compared bit for bit with 0.4.0's); 0.6.0: the
// standard exponential (rng.Stream.Exp, ExpFill) is drawn by a ziggurat
// instead of −log U (sim/rng/exp.go): every number of every workload with
// an exponential inter-arrival or service time changes (the same
// distribution, other draws); coupling across arrival rates is kept. Also
// in 0.6.0: the Gittins ranks of hyperexponential and of Weibull with shape
// below 1/2 are computed by formulas monotone in age to the last bit
// (plugins/serverfilling/gittins.go), which moves ServerFilling- and
// DivisorFilling-Gittins results on those sizes in low-order digits.
// 0.7.0: the work-deficit test (deficit.go: Result.Deficits, the
// "deficit" reason, the pooled deficit rule of Pool) and the converged
// verdict's "throughput" rule; every mean, variance, count and time
// average is bit for bit 0.6.0's (only verdict fields and their evidence
// are new), but a 0.6.0 record lacks the evidence and its verdict may
// differ. 0.7.1: every replication's record is bit for bit 0.7.0's (the
// golden result differs only in this string); what changes is how a
// point's replications are pooled, so a summary aggregated from the same
// records can differ: Stouffer's z of the pooled deficit divides each
// replication's t by its AR(1) factor (fewer stable points with long
// episodes, such as MSF on Borg cell B, called unstable by "deficit-z"); a
// pooled deficit that more than halved from the window's first half to its
// second is a transient and does not fire (PooledDeficit.Transient: fewer
// stable points whose warm-up was too short called unstable, e.g.
// First-Fit on one-or-all at ρ = 0.97); and the converged verdict's pooled
// shortfall adds Stouffer's z of the replications' window t (more points
// not converged: a policy whose cycles are as long as the run). 0.7.2: a
// replication's deficit test batches each quantity by its own time scale
// (deficit.go, deficitBatch: a class silent for several segments is tested
// on merged batches, or not at all when silent for an eighth of the
// window) — Deficit.Batch, T, Phi, Critical, Fired and the reasons and
// point verdicts that follow change only for such quantities; every mean,
// variance, count and time average is bit for bit 0.7.1's. 0.7.3: the
// pooled deficit's Stouffer z reads every replication's t at the point's
// autocorrelation, the mean of the replications' own (deficit.go,
// pooledPhi; PooledDeficit.Phi) — point verdicts change, every
// replication's record is bit for bit 0.7.2's but for this string. 0.7.4:
// a point whose class is served in episodes longer than the batches in
// most replications is undecided rather than unstable (episodes.go;
// PointVerdict.Episodic, Overruled) — point verdicts change, every
// replication's record is bit for bit 0.7.3's but for this string.
const Version = "0.7.4"

// Config is the run length and instrumentation of one replication.
type Config struct {
	// Seed determines the job sequence (and the policy's random stream).
	Seed uint64
	// Warmup arrivals are simulated and discarded before measuring.
	Warmup int64
	// Arrivals is the number of measured ("tagged") arrivals after the warm-up.
	Arrivals int64
	// MSER replaces the fixed warm-up by MSER-5 truncation: a first pass
	// measures every one of Warmup+Arrivals arrivals and records response-time
	// batch means (batches of 5 jobs in arrival order); the truncation point
	// d minimising the MSER statistic over the first half is found; a second
	// pass of the same (deterministic) sample path, under a fresh policy
	// instance, then discards the first 5d arrivals and measures the rest.
	// Result.Warmup reports 5d. Only RunFresh runs it (Run refuses it).
	MSER bool
	// MaxInSystem stops the run once more jobs than this are in the system:
	// Result.Truncated, reason "truncated", means lower bounds (0: the
	// default from a memory budget, DefaultMaxInSystem; a positive value
	// below the number of servers is an error). Memory is O(jobs in
	// system), so this bounds memory on a runaway queue.
	MaxInSystem int
	// DrainLimit bounds the extra arrivals simulated after the window while
	// waiting for the last measured jobs to leave (0: Arrivals, at least
	// 1000). It applies only while a measured job is still waiting (one in
	// service will finish, however long its size); measured jobs still
	// waiting then make the run flagged unstable.
	DrainLimit int64
	// SeriesInterval > 0 samples the number in system every SeriesInterval
	// time units of the measurement window, at most SeriesMax samples
	// (0: 10000; at most MaxSeriesMax).
	SeriesInterval float64
	SeriesMax      int
	// Progress, if set, is called about 100 times per run with the number of
	// arrivals simulated so far and the planned total.
	Progress func(done, total int64)
	// Context, if set, cancels the run: it is polled every 1,024 events
	// (a non-blocking channel receive, well under 0.1 ns per event), and Run
	// then returns an error wrapping the context's error.
	Context context.Context
	// Beat, if set with Context, is called each time the context is polled
	// (every 1,024 events, MSER's first pass included): a sign of life from
	// the loop itself, which a host that cannot see the loop reads to tell a
	// replication that is slow from one hung in policy code (internal/wire
	// streams the count; worker/pluginhost's stall limit reads it). Progress
	// cannot serve: it counts arrivals and stops at the measurement window's
	// end, before the drain.
	Beat func()
	// Observer, if set, receives every arrival, start, preemption and
	// completion as it happens: the decision trace that tests and the plugin
	// conformance check verify. It costs one nil check per action when unset.
	Observer func(TraceRecord)
}

// TraceKind is the kind of a TraceRecord. The values are part of the plugin
// wire contract (TraceChunk.kind): do not renumber them.
type TraceKind uint8

// Traced actions. They are prefixed so as not to read as the System methods
// (Start, Preempt) or Policy callbacks (Arrive, Complete) of the same names.
const (
	TraceArrive TraceKind = iota + 1
	TraceStart
	TracePreempt
	TraceComplete
)

func (k TraceKind) String() string {
	if k > TraceComplete {
		return "?"
	}
	return [...]string{"?", "arrive", "start", "preempt", "complete"}[k]
}

// TraceRecord is one entry of the decision trace (not to be confused with the
// engine's scheduled events, which are internal). Busy is the number of busy
// servers after the action.
type TraceRecord struct {
	Time  float64
	Kind  TraceKind
	Job   int64
	Class int
	Need  int
	Busy  int
}

// MaxArrivals bounds a replication's arrival counts: Arrivals, Warmup,
// their sum and DrainLimit are each at most 2^53. A count that large is
// exact as a float64 (the estimates, rates and time averages divide by
// counts), sums of two of them cannot overflow int64, and at the
// engine's ~10^7 arrivals a second it is already 28 years of one core.
// Unbounded, arrivals 2^63-1 passed every check, warmup+arrivals
// wrapped negative and a dry run estimated "-2562047h" of CPU.
const MaxArrivals = 1 << 53

// MaxSeriesMax bounds SeriesMax. A stored result is allowed 64 bytes a
// sample on top of its 1 MiB (worker/resultcheck.SampleBytes), so 10^6
// samples are a 65 MB record per replication (16 MB of samples in
// memory), 100 times the default of 10^4. Unbounded, series_max
// 2^63-1 with a series_interval of 10^-12 had a dry run's calibration
// take a sample per event until it held 24 GB.
const MaxSeriesMax = 1_000_000

// Validate checks the run length and limits; Run calls it, and a caller
// that dispatches runs elsewhere can reject a bad configuration early.
func (c *Config) Validate() error {
	switch {
	case c.Arrivals < 1:
		return fmt.Errorf("run.arrivals: must be >= 1, got %d", c.Arrivals)
	case c.Arrivals > MaxArrivals:
		return fmt.Errorf("run.arrivals: must be at most 2^53 = %d (counts stay exact as float64), got %d", int64(MaxArrivals), c.Arrivals)
	case c.Warmup < 0:
		return fmt.Errorf("run.warmup: must be >= 0, got %d", c.Warmup)
	case c.Warmup > MaxArrivals:
		return fmt.Errorf("run.warmup: must be at most 2^53 = %d (counts stay exact as float64), got %d", int64(MaxArrivals), c.Warmup)
	case c.Warmup+c.Arrivals > MaxArrivals:
		// Each at most 2^53: the sum does not overflow.
		return fmt.Errorf("run.arrivals: warmup+arrivals = %d, more than 2^53 = %d (counts stay exact as float64)", c.Warmup+c.Arrivals, int64(MaxArrivals))
	case c.MaxInSystem < 0:
		return fmt.Errorf("run.max_in_system: must be >= 0, got %d", c.MaxInSystem)
	case c.MaxInSystem > MaxMaxInSystem:
		return fmt.Errorf("run.max_in_system: must be at most %d (2^25 jobs: %d GiB at %d bytes a job, 32 times the default's %d MiB budget; 0 is the default, %d), got %d",
			MaxMaxInSystem, MaxMaxInSystem*BytesPerJob>>30, BytesPerJob, MemoryBudget>>20, DefaultMaxInSystem, c.MaxInSystem)
	case c.DrainLimit < 0:
		return fmt.Errorf("run.drain_limit: must be >= 0, got %d", c.DrainLimit)
	case c.DrainLimit > MaxArrivals:
		// The run stops at warmup+arrivals+drain_limit arrivals: 2^63-1
		// wrapped that negative.
		return fmt.Errorf("run.drain_limit: must be at most 2^53 = %d, got %d", int64(MaxArrivals), c.DrainLimit)
	case c.SeriesInterval < 0 || math.IsNaN(c.SeriesInterval):
		return fmt.Errorf("run.series_interval: must be >= 0, got %v", c.SeriesInterval)
	case c.SeriesMax > MaxSeriesMax:
		return fmt.Errorf("run.series_max: must be at most %d (10^6 samples: a 65 MB result per replication), got %d", MaxSeriesMax, c.SeriesMax)
	case c.MSER && c.Warmup+c.Arrivals < 20:
		return fmt.Errorf("run.mser: MSER-5 needs at least 20 arrivals, got %d", c.Warmup+c.Arrivals)
	}
	return nil
}

// PolicyError is an invariant the policy broke (starting a job that does not
// fit, preempting without declaring it, ...). The engine enforces these
// whatever the policy does, and turns them into an error of the run.
type PolicyError struct {
	Time float64
	Msg  string
}

func (e *PolicyError) Error() string { return fmt.Sprintf("policy error at t=%g: %s", e.Time, e.Msg) }

// System is the state of one replication as a policy sees it. Policies act
// through Start, Preempt and SetTimer and read the rest.
type System struct {
	w     *Workload
	k     int
	busy  int
	now   float64
	inSys int
	// arriving is the id of the job whose Arrive call is running, -1
	// outside one (Unpark reads it). It sits by inSys, which arrive also
	// writes: two stores into another cache line of System on every
	// arrival measured 5-11% of Static Quickswap's time per event.
	arriving int64
	nRun     int // jobs in service
	// running lists the jobs in service once a policy has asked for them
	// (listRunning); until then nothing keeps it, since most policies never
	// ask and keeping it costs a store into a second job at every departure.
	running     []*Job
	listRunning bool
	events      eventHeap
	pool        jobPool
	policy      Policy
	info        PolicyInfo
	timers      TimerHandler
	prng        *rng.Stream
	measure     bool
	obs         func(TraceRecord)

	preemptions int64
	wasted      float64
	// taggedRunning counts measured jobs in service: the drain limit applies
	// only while some measured job is still waiting, since a job in service
	// under a policy that cannot preempt it will finish.
	taggedRunning int64
	preemptedN    int64 // measured jobs preempted at least once

	// winStart and winEnd are the replication's measurement window (arrival
	// indices), classNeed each class's need (the source's table), and
	// parkedTagged counts the parked measured jobs per class: what Unpark
	// needs to restore a Job, and the end-of-run census its count of jobs
	// still in the system.
	winStart, winEnd int64
	classNeed        []int32
	parkedTagged     []int64

	// iota is 0, 1, 2, ...: the indices PreemptJobs and StartJobs hand
	// PreemptJobsIn and StartJobsIn with their list as the table.
	iota []int32
}

// Now is the current simulated time.
func (s *System) Now() float64 { return s.now }

// Servers is k.
func (s *System) Servers() int { return s.k }

// Free is the number of idle servers.
func (s *System) Free() int { return s.k - s.busy }

// Busy is the number of servers in use.
func (s *System) Busy() int { return s.busy }

// InSystem is the number of jobs in the system (waiting or running).
func (s *System) InSystem() int { return s.inSys }

// Classes returns the workload's classes (read-only).
func (s *System) Classes() []Class { return s.w.Classes }

// Workload returns a read-only view of the workload being simulated. Job
// sizes stay hidden from a policy that does not declare SizeAware: the view
// hands out a replayed trace (which holds every job's size in advance) only
// to a size-aware policy.
func (s *System) Workload() WorkloadView { return WorkloadView{s} }

// Running returns the jobs in service, in no particular order. The slice is
// the engine's own: read it, do not modify or keep it across calls.
func (s *System) Running() []*Job {
	if !s.listRunning {
		s.collectRunning()
	}
	return s.running
}

// collectRunning builds the list of running jobs at a policy's first call
// of Running, from the event list (every running job has its departure
// there, and nothing else in it is running), and has the engine keep it
// from then on. Its order is the event list's, a function of the run's own
// history, so results stay reproducible.
func (s *System) collectRunning() {
	s.listRunning = true
	s.running = s.running[:0]
	for i, e := range s.events.ev {
		if i == 0 && s.events.hole || e.j.state != stateRunning {
			continue
		}
		e.j.runIdx = int32(len(s.running))
		s.running = append(s.running, e.j)
	}
}

// Rand is the policy's own random stream, separate from the job sequence.
func (s *System) Rand() *rng.Stream { return s.prng }

// Measuring reports whether the warm-up is over.
func (s *System) Measuring() bool { return s.measure }

func (s *System) fail(format string, a ...any) {
	panic(&PolicyError{Time: s.now, Msg: fmt.Sprintf(format, a...)})
}

// Start puts waiting job j into service on j.Need() servers. Starting a job
// that is not waiting, or that does not fit in the idle servers, is a policy
// error.
func (s *System) Start(j *Job) {
	if j.state != stateWaiting || int(j.need) > s.k-s.busy {
		s.refuseStart(j)
	}
	s.busy += int(j.need)
	if j.tagged {
		s.taggedRunning++
	}
	j.state = stateRunning
	j.started = s.now
	s.nRun++
	if s.listRunning {
		j.runIdx = int32(len(s.running))
		s.running = append(s.running, j)
	}
	if s.obs != nil {
		s.observe(TraceStart, j)
	}
	// The event last, so that nothing is left to do after the call.
	t, h := s.now+j.remaining, &s.events
	if j.suspended {
		h.resume(t, j)
		return
	}
	// A preempting policy's restart, the commonest push, is made here
	// without the call when the heap has no hole and room (push
	// otherwise): the call and its frame were a sixth of a push, and a
	// push method doing this does not inline (cost 106 of 80).
	if i, ok := h.newSlot(j); ok {
		rise(h.ev, i, t, j)
		return
	}
	h.push(t, j)
}

// refuseStart fails the run for a Start of j that Start refuses. Out of
// Start, so that the error's formatting does not weigh on every start.
func (s *System) refuseStart(j *Job) {
	if j.state == stateRunning {
		s.fail("job %d started while already running", j.id)
	}
	if j.state != stateWaiting {
		s.fail("job %d started but it is not in the system", j.id)
	}
	s.fail("job %d needs %d servers, only %d idle", j.id, j.need, s.k-s.busy)
}

func (s *System) observe(k TraceKind, j *Job) {
	s.obs(TraceRecord{Time: s.now, Kind: k, Job: j.id, Class: int(j.class), Need: int(j.need), Busy: s.busy})
}

// Preempt takes running job j out of service. Under PreemptResume it keeps
// its progress; under PreemptRestart its progress is lost (counted as wasted
// work) and it will need its full original size again. Only policies that
// declare preemption may call it.
func (s *System) Preempt(j *Job) {
	if s.info.Preemption == NoPreemption {
		s.fail("job %d preempted by a policy that did not declare preemption", j.id)
	}
	if j.state != stateRunning {
		s.fail("job %d preempted but it is not running", j.id)
	}
	s.events.suspend(j)
	s.removeRunning(j)
	s.busy -= int(j.need)
	if j.tagged {
		s.taggedRunning--
	}
	served := s.now - j.started
	if s.info.Preemption == PreemptRestart {
		if s.measure {
			s.wasted += float64(j.need) * served
		}
		j.remaining = j.size
	} else {
		j.remaining -= served
		if j.remaining < 0 {
			j.remaining = 0
		}
	}
	j.state = stateWaiting
	j.delayed = true
	j.preempted++
	if s.measure {
		s.preemptions++
	}
	if s.obs != nil {
		s.observe(TracePreempt, j)
	}
}

// SetTimer asks for a call to the policy's Timer(s, tag) at time at (>= Now).
func (s *System) SetTimer(at float64, tag int) {
	if s.timers == nil {
		s.fail("SetTimer called by a policy that does not implement TimerHandler")
	}
	if !(at >= s.now) {
		s.fail("timer set in the past (%v < now %v)", at, s.now)
	}
	tj := s.pool.get()
	tj.state, tj.id = stateTimer, int64(tag)
	s.events.push(at, tj)
}

// Size returns job j's original service duration (size-aware policies only).
func (s *System) Size(j *Job) float64 {
	if !s.info.SizeAware {
		s.fail("Size read by a policy that did not declare SizeAware")
	}
	return j.size
}

// Remaining returns job j's remaining service duration now (size-aware
// policies only). It is small enough to inline, its refusal panicking as
// fail does but without the call: ServerFilling's SRPT orders read it at
// every start, ~8 million times in a replication of BenchmarkLoads on Borg
// cell B at ρ = 0.95.
func (s *System) Remaining(j *Job) float64 {
	if !s.info.SizeAware {
		panic(&PolicyError{Time: s.now, Msg: "Remaining read by a policy that did not declare SizeAware"})
	}
	r := j.remaining
	if j.state == stateRunning {
		if r -= s.now - j.started; r < 0 {
			r = 0
		}
	}
	return r
}

func (s *System) removeRunning(j *Job) {
	s.nRun--
	if !s.listRunning {
		return
	}
	i := int(j.runIdx)
	last := len(s.running) - 1
	if i != last {
		m := s.running[last]
		s.running[i] = m
		m.runIdx = int32(i)
	}
	s.running[last] = nil
	s.running = s.running[:last]
}

// Run simulates one replication of workload w under policy p (configured and
// ready for Init) and returns its statistics. It never panics on a policy's
// misbehaviour: broken invariants and policy panics become errors.
//
// Run simulates a single pass, so it refuses Config.MSER, whose two passes
// each need a fresh policy instance: use RunFresh for that.
func Run(w *Workload, p Policy, cfg Config) (*Result, error) {
	if cfg.MSER {
		return nil, errors.New("run: MSER simulates the sample path twice, each pass with a fresh policy instance: use RunFresh")
	}
	return RunFresh(w, func() (Policy, error) { return p, nil }, cfg)
}

// RunFresh is Run with a constructor instead of an instance: every pass of
// the replication gets its own instance from newPolicy (configured and ready
// for Init), so that no state can leak from MSER's first pass into the
// measured one and Init never has to undo an earlier run. An error from
// newPolicy is returned as is.
func RunFresh(w *Workload, newPolicy func() (Policy, error), cfg Config) (*Result, error) {
	if err := w.Validate(); err != nil {
		return nil, err
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if err := checkCap(w, &cfg); err != nil {
		return nil, err
	}
	if w.Trace != nil && int64(len(w.Trace)) < cfg.Warmup+cfg.Arrivals {
		return nil, fmt.Errorf("run: warmup+arrivals = %d exceeds the trace's %d jobs", cfg.Warmup+cfg.Arrivals, len(w.Trace))
	}
	p, err := newPolicy()
	if err != nil {
		return nil, err
	}
	if !cfg.MSER {
		return runOnce(w, p, cfg, nil)
	}
	n := cfg.Warmup + cfg.Arrivals
	batches := make([]float64, n/5)
	first := cfg
	first.Warmup, first.Arrivals, first.Progress, first.Observer = 0, n, nil, nil
	if _, err := runOnce(w, p, first, batches); err != nil {
		return nil, err
	}
	for i := range batches {
		batches[i] /= 5
	}
	d := stats.MSER(batches)
	second := cfg
	second.Warmup, second.Arrivals = int64(5*d), n-int64(5*d)
	if p, err = newPolicy(); err != nil {
		return nil, err
	}
	r, err := runOnce(w, p, second, nil)
	if err != nil {
		return nil, err
	}
	r.MSERBatches = int64(d)
	return r, nil
}

// stopReason is why a replication's event loop ended. The abnormal ones are
// recorded in Instability.Reasons under their String names, which are part
// of the result format.
type stopReason uint8

const (
	stopNone        stopReason = iota // still running
	stopDrained                       // the window closed and every measured job left (or the trace ran out with none left)
	stopTraceEnded                    // a replayed trace ended with measured jobs still present
	stopDrainLimit                    // measured jobs still waiting after Config.DrainLimit further arrivals
	stopMaxInSystem                   // more than Config.MaxInSystem jobs in the system: the run is truncated
)

func (r stopReason) String() string {
	switch r {
	case stopDrained:
		return "drained"
	case stopTraceEnded:
		return "trace_ended"
	case stopDrainLimit:
		return "drain_limit"
	case stopMaxInSystem:
		return "truncated"
	default:
		return "running"
	}
}

// unstable reports whether the run stopped for a reason that flags it
// unstable.
func (r stopReason) unstable() bool { return r >= stopTraceEnded }

// replication is the state of one pass of the event loop beyond what the
// policy sees in System: the job source with the next arrival held aside,
// the statistics recorder, the window bounds and the stop rules' limits.
type replication struct {
	s        *System
	p        Policy
	cfg      *Config
	st       *recorder
	src      *source
	measurer Measurer
	batches  []float64 // MSER's first pass: response-time sums per batch of 5

	next     *Job // the next arrival, generated lazily
	haveNext bool
	arrivals int64  // arrivals handled so far
	events   uint64 // events handled so far
	tagged   int64  // measured jobs still in the system

	winStart, winEnd int64 // arrival indices of the measurement window [winStart, winEnd)
	mark             int64 // the next arrival index at which marked has work (0: the first arrival)
	stopAt           int64 // arrival index at which draining gives up
	maxIn            int
	progEvery        int64
	nextProg         int64
	done             <-chan struct{}
}

func newReplication(w *Workload, p Policy, cfg *Config, batches []float64) *replication {
	s := &System{w: w, k: w.Servers, policy: p, info: Describe(p), obs: cfg.Observer}
	s.timers, _ = p.(TimerHandler)
	s.events.track = s.info.Preemption != NoPreemption
	s.prng = rng.Derive(cfg.Seed, StreamPolicy)
	r := &replication{s: s, p: p, cfg: cfg, st: newRecorder(w, cfg), src: newSource(w, cfg.Seed), batches: batches}
	r.measurer, _ = p.(Measurer)
	r.maxIn = cfg.MaxInSystem
	if r.maxIn == 0 {
		r.maxIn = DefaultMaxInSystem
	}
	drain := cfg.DrainLimit
	if drain == 0 {
		drain = max(cfg.Arrivals, 1000)
	}
	r.winStart, r.winEnd = cfg.Warmup, cfg.Warmup+cfg.Arrivals
	s.winStart, s.winEnd, s.arriving = r.winStart, r.winEnd, -1
	s.parkedTagged = make([]int64, len(w.Classes))
	s.classNeed = r.src.needs
	r.stopAt = r.winEnd + drain
	r.progEvery, r.nextProg = max(r.winEnd/100, 1), math.MaxInt64
	if cfg.Progress != nil {
		r.nextProg = r.progEvery
	}
	if cfg.Context != nil {
		r.done = cfg.Context.Done()
	}
	return r
}

func runOnce(w *Workload, p Policy, cfg Config, batches []float64) (res *Result, err error) {
	r := newReplication(w, p, &cfg, batches)
	defer func() {
		if v := recover(); v != nil {
			var pe *PolicyError
			if e, ok := v.(error); ok && errors.As(e, &pe) {
				res, err = nil, pe
				return
			}
			res, err = nil, fmt.Errorf("policy panicked at t=%g: %v\n%s", r.s.now, v, debug.Stack())
		}
	}()
	if err := p.Init(r.s); err != nil {
		return nil, fmt.Errorf("policy init: %w", err)
	}
	stop, err := r.loop()
	if err != nil {
		return nil, err
	}
	r.finish()
	return r.st.result(r.s, r.events, r.tagged, stop), nil
}

// loop runs events until a stop rule fires, in the style of SimPy's step():
// each turn takes the earliest event — a departure or a timer, which go
// before an arrival at the same instant (see the package doc) — and hands it
// to its step.
func (r *replication) loop() (stopReason, error) {
	s := r.s
	stop := stopNone
	r.next = s.pool.get()
	r.haveNext = r.src.next(r.next)
events:
	for {
		if r.done != nil && r.events&0x3ff == 0x3ff {
			if err := r.cancelled(); err != nil {
				return stopNone, err
			}
		}
		switch {
		case s.events.ready() && (!r.haveNext || s.events.next() <= r.next.arrival):
			e := s.events.pop()
			r.st.advance(s, e.t)
			s.now = e.t
			r.events++
			if e.j.state == stateTimer {
				tag := int(e.j.id)
				s.pool.put(e.j)
				s.timers.Timer(s, tag)
				continue events
			}
			r.depart(e.j)
			if r.drained() {
				stop = stopDrained
				break events
			}
		case !r.haveNext:
			stop = r.traceEnd()
			break events
		default:
			j := r.next
			r.st.advance(s, j.arrival)
			s.now = j.arrival
			r.events++
			id := r.arrivals
			r.arrivals++
			if id >= r.mark {
				if stop = r.marked(id); stop != stopNone {
					s.pool.put(j)
					break events
				}
			}
			r.arrive(j, id)
			if s.inSys > r.maxIn {
				stop = stopMaxInSystem
				break events
			}
			if r.arrivals >= r.nextProg {
				r.progress()
			}
			r.next = s.pool.get()
			r.haveNext = r.src.next(r.next)
		}
	}
	return stop, nil
}

// marked does what arrival id brings besides the arrival itself: the
// window's bounds, the growth test's and the convergence batches'
// boundaries, and the stop rules checked before admitting it (refuse). It
// then sets mark, the next arrival index at which any of them can act, so
// that the loop skips them all with one comparison on every other arrival.
func (r *replication) marked(id int64) stopReason {
	if id == r.winStart || id == r.winEnd {
		r.window(id)
	}
	r.st.checkpoint(r.s, id)
	r.st.convCheckpoint(r.s, id)
	if stop := r.refuse(id); stop != stopNone {
		return stop
	}
	r.mark = r.nextMark(id)
	return stopNone
}

// nextMark is the smallest arrival index after id at which marked has
// anything to do. After the window's closing arrival only the drain limit
// is left to check, from stopAt on: the other stop rule, drained, can only
// become true at a departure, and the loop checks it there.
func (r *replication) nextMark(id int64) int64 {
	if id >= r.winEnd {
		if id < r.stopAt {
			return r.stopAt
		}
		return id + 1
	}
	m := r.winEnd
	if id < r.winStart {
		m = min(m, r.winStart)
	}
	st := r.st
	if r.s.measure && st.segNext < growthSegments && st.segAt > id {
		m = min(m, st.segAt)
	}
	if st.convNext < convBatches && st.convAt > id {
		m = min(m, st.convAt)
	}
	return m
}

// cancelled polls the run's context (every 1,024 events).
func (r *replication) cancelled() error {
	select {
	case <-r.done:
		return fmt.Errorf("replication stopped at t=%g after %d arrivals: %w", r.s.now, r.arrivals, r.cfg.Context.Err())
	default:
		if r.cfg.Beat != nil {
			r.cfg.Beat()
		}
		return nil
	}
}

// depart completes job j: its servers are freed before the policy hears of
// it, so Complete can start the next jobs on them.
func (r *replication) depart(j *Job) {
	s := r.s
	s.removeRunning(j)
	s.busy -= int(j.need)
	s.inSys--
	j.state = stateFree
	if j.tagged {
		r.tagged--
		s.taggedRunning--
		r.st.depart(s, j, r.batches, r.winStart)
	}
	if s.measure {
		r.st.departures++
	}
	if s.obs != nil {
		s.observe(TraceComplete, j)
	}
	r.p.Complete(s, j)
	s.pool.put(j)
}

// drained reports the normal end: the window has closed (its closing
// arrival has been seen) and no measured job is left.
func (r *replication) drained() bool { return r.arrivals > r.winEnd && r.tagged == 0 }

// traceEnd is the stop reason when a replayed trace has no more jobs.
func (r *replication) traceEnd() stopReason {
	if r.tagged > 0 {
		return stopTraceEnded
	}
	return stopDrained
}

// window opens or closes the measurement window at one of its bounding
// arrivals. (The loop calls it only there, and advances the clock and
// records the growth test's segment boundaries inline: those run on every
// event, where a call costs measurably.)
func (r *replication) window(id int64) {
	s := r.s
	switch id {
	case r.winStart:
		s.measure = true
		r.st.start(s)
		if r.measurer != nil {
			r.measurer.StartMeasuring(s)
		}
	case r.winEnd:
		r.st.end(s)
		s.measure = false
	}
}

// refuse applies the stop rules checked before arrival id is admitted: the
// normal end, and the drain limit (which applies only while some measured
// job is still waiting: one in service will finish).
func (r *replication) refuse(id int64) stopReason {
	switch {
	case r.drained():
		return stopDrained
	case id >= r.stopAt && r.tagged > r.s.taggedRunning:
		return stopDrainLimit
	}
	return stopNone
}

// arrive admits job j as arrival id, counted in the system before the
// policy hears of it.
func (r *replication) arrive(j *Job, id int64) {
	s := r.s
	j.id = id
	j.state = stateWaiting
	j.remaining = j.size
	j.tagged = id >= r.winStart && id < r.winEnd
	if j.tagged {
		r.tagged++
	}
	s.inSys++
	if s.obs != nil {
		s.observe(TraceArrive, j)
	}
	s.arriving = id
	r.p.Arrive(s, j)
	s.arriving = -1
	if j.state == stateWaiting {
		j.delayed = true
	}
}

// progress reports progress (about 100 times per run: the loop calls it
// when arrivals reach nextProg).
func (r *replication) progress() {
	r.nextProg += r.progEvery
	if r.arrivals <= r.winEnd {
		r.cfg.Progress(r.arrivals, r.winEnd)
	}
}

// finish closes a window the run stopped inside (max_in_system, trace end)
// and reports the final progress.
func (r *replication) finish() {
	if r.s.measure {
		r.st.end(r.s)
		r.s.measure = false
	}
	if r.cfg.Progress != nil {
		r.cfg.Progress(min(r.arrivals, r.winEnd), r.winEnd)
	}
}
