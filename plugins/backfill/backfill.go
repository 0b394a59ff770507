// Package backfill holds the backfilling schedulers that studies of
// Parallel Workloads Archive (SWF) traces use as their baseline: EASY
// backfilling (Lifka 1995, the Argonne SP scheduler; Mu'alem and Feitelson,
// IEEE TPDS 2001) and conservative backfilling (Mu'alem and Feitelson 2001).
// Both are non-preemptive and serve jobs in arrival order, letting a later
// job start early ("backfill") when that does not delay the reservations
// they protect.
//
// # EASY
//
// Only the first waiting job (the head) holds a reservation. Whenever a job
// arrives or completes: jobs start in arrival order while the head fits in
// the idle servers (FCFS). If the head does not fit, its shadow time is the
// earliest instant at which, by the running jobs' estimated completion
// times, enough servers will be idle for it, and the extra servers are
// those idle at the shadow time beyond the head's need. Then every later
// waiting job, in arrival order, starts now if it fits in the idle servers
// and either its estimated completion is no later than the shadow time or
// its need is at most the extra servers (which it then uses up).
//
// # Conservative
//
// Every waiting job holds a reservation: the earliest start at which it
// fits, for its estimated duration, in the profile of idle servers over
// time left by the running jobs (their estimated completion times) and by
// every other reservation. A new job gets its reservation on arrival,
// behind all earlier ones; it starts now only if its reservation is now,
// i.e. only if starting it delays no reservation. At every event the
// schedule is compressed: in arrival order, each waiting job's reservation
// is withdrawn and the job re-placed at its earliest fit — never later than
// its old reservation, which is still free — and every job whose
// reservation is now starts. Compression in arrival order is our reading
// where the sources leave the order open; it guarantees that no waiting
// job's reservation ever moves later while estimates hold.
//
// # Estimates
//
// Both schedule on estimated durations; jobs run for their real size, as
// the model requires. Parameter estimate = "exact" (default) uses the real
// size; "requested" uses the user's requested time of a replayed SWF trace
// (field 9, sim.TraceJob.Requested; a job with none falls back to its real
// size and is counted in estimate_unknown). Parameter overestimate (≥ 1,
// default 1) multiplies the estimate, as in the over-estimation studies of
// Mu'alem and Feitelson. With exact sizes and overestimate ≥ 1 no job runs
// past its estimate; with requested times it can (users under-estimate).
// Real schedulers then kill the job or extend its reservation; here it runs
// to its real size, and while it overruns the policy expects it to end
// immediately: its estimated completion is taken as the instant just after
// the current one, re-planned at every event until it does end (counted in
// estimate_exceeded). So an overrun never lets a job start on servers that
// are still busy, and backfilled jobs are held to the reservations as if
// the overrunning job were about to end.
//
// Estimates are sizes: both policies declare SizeAware (an exact estimate
// reads the size; a requested-time estimate reads it only as a fallback and
// to count overruns).
//
// # Counters
//
//   - backfilled: the fraction of measured arrivals that started while an
//     earlier-arrived job was still waiting.
//   - estimate_exceeded: measured jobs that ran past their estimate.
//   - estimate_unknown: measured arrivals with no requested time (estimate
//     = requested only), scheduled on their real size.
//
// # Cost
//
// EASY: O(1) per started job plus, when the head is blocked and some idle
// server could take a waiting job, O(R) for the shadow time over the R
// running jobs (kept sorted by estimated completion, O(log R + R) memmove
// per start and completion) and O(Q) for the scan of the Q waiting jobs.
// Conservative: O(R) for the profile of the running jobs, then O(R + Q)
// per waiting job to re-place its reservation (the compression), so
// O(Q·(R + Q)) per event — the price of keeping every reservation. It is
// the costlier of the two, increasingly so as the queue grows: on Borg
// cell B at λ = 1 (k = 2048, hundreds of jobs running) it measured about
// 4.8 µs per event against 80 ns for EASY and FCFS (BenchmarkBorgBStable);
// on one-or-all and powers-of-two it is within 2× of FCFS.
package backfill

import (
	"fmt"
	"math"
	"sort"

	"github.com/msjfarm/msjfarm/sdk"
)

// Policies lists the policies of this family.
var Policies = []sdk.Spec{{
	Name: "easy-backfill",
	Doc: "EASY backfilling (Lifka 1995; Mu'alem & Feitelson 2001): FCFS, and the blocked head gets a reservation at its " +
		"shadow time; a later job starts now if it fits and ends (by its estimate) by the shadow time or uses only the " +
		"extra servers. Estimates: exact sizes (default), or SWF requested time; times overestimate ≥ 1.",
	New: func() sdk.Policy { return &Policy{} },
}, {
	Name: "conservative-backfill",
	Doc: "Conservative backfilling (Mu'alem & Feitelson 2001): every waiting job holds a reservation in arrival order in " +
		"the profile of idle servers; a job starts now only if that delays no reservation; compressed at every event. " +
		"Estimates as easy-backfill.",
	New: func() sdk.Policy { return &Policy{conservative: true} },
}}

// Values of the "estimate" parameter.
const (
	EstimateExact     = "exact"
	EstimateRequested = "requested"
)

// Job.Tag bits.
const (
	tagMeasured = 1 // arrived in the measurement window
)

// Policy is EASY (conservative = false) or conservative backfilling.
type Policy struct {
	conservative bool
	estimate     string
	factor       float64

	trace   []float64 // requested times by job ID (estimate = requested)
	minNeed int

	// Waiting jobs in arrival order; Job.Key is the estimated duration.
	q []qent
	// Running jobs sorted by (estimated completion, ID); Job.Key is the
	// estimated completion.
	run []*sdk.Job
	// Conservative: the profile of idle servers, rebuilt at every event.
	prof profile

	nArr, nBackfilled, nExceeded, nUnknown int64
}

type qent struct {
	j   *sdk.Job
	res float64 // conservative: reservation (NaN until placed)
}

// Params: the estimate source and the over-estimation factor.
func (p *Policy) Params() []sdk.Param {
	return []sdk.Param{{
		Name: "estimate", Type: sdk.String, Default: EstimateExact, Enum: []string{EstimateExact, EstimateRequested},
		Doc: "what the scheduler believes a job's duration is: exact (its real size) or requested (the SWF requested time " +
			"of a replayed trace, field 9; jobs without one use their real size)",
	}, {
		Name: "overestimate", Type: sdk.Float, Default: 1.0, Min: sdk.Bound(1),
		Doc: "multiplies every estimate (≥ 1): users' over-estimation of their run times",
	}}
}

// Configure sets the estimate source and factor.
func (p *Policy) Configure(v sdk.Values) error {
	switch e := v.String("estimate"); e {
	case EstimateExact, EstimateRequested:
		p.estimate = e
	default:
		return fmt.Errorf("estimate: unknown estimate source %q (exact, requested)", e)
	}
	f := v.Float("overestimate")
	if !(f >= 1) || math.IsInf(f, 0) {
		return fmt.Errorf("overestimate: must be a finite number >= 1, got %v", f)
	}
	p.factor = f
	return nil
}

// SizeAware: estimates are sizes (see the package comment).
func (p *Policy) SizeAware() bool { return true }

// Init checks that the estimates can be read on this workload and resets
// the state.
func (p *Policy) Init(s *sdk.System) error {
	if p.estimate == "" {
		p.estimate = EstimateExact
	}
	if p.factor == 0 {
		p.factor = 1
	}
	name := "easy-backfill"
	if p.conservative {
		name = "conservative-backfill"
	}
	p.trace = p.trace[:0]
	if p.estimate == EstimateRequested {
		w := s.Workload()
		if !w.Replayed() {
			return fmt.Errorf("%s: estimate: %q needs a replayed trace with requested times (SWF field 9); workload %q is synthetic", name, EstimateRequested, w.Name())
		}
		any := false
		for _, tj := range w.Trace() {
			p.trace = append(p.trace, tj.Requested)
			any = any || tj.Requested > 0
		}
		if !any {
			return fmt.Errorf("%s: estimate: %q, but no job of trace %q has a requested time (SWF field 9 unknown throughout)", name, EstimateRequested, w.Name())
		}
	}
	p.minNeed = s.Servers()
	for _, c := range s.Classes() {
		p.minNeed = min(p.minNeed, c.Need)
	}
	clear(p.q)
	p.q = p.q[:0]
	clear(p.run)
	p.run = p.run[:0]
	p.nArr, p.nBackfilled, p.nExceeded, p.nUnknown = 0, 0, 0, 0
	return nil
}

// StartMeasuring resets the counters to the measurement window.
func (p *Policy) StartMeasuring(*sdk.System) {
	p.nArr, p.nBackfilled, p.nExceeded, p.nUnknown = 0, 0, 0, 0
}

// DescribeCounters labels the counters (sdk.CounterDescriber).
func (p *Policy) DescribeCounters() []sdk.CounterInfo {
	return []sdk.CounterInfo{
		{Name: "backfilled", Label: "arrivals backfilled", Kind: sdk.KindFraction,
			Doc: "fraction of measured arrivals started while an earlier arrival waited"},
		{Name: "estimate_exceeded", Label: "jobs past their estimate", Kind: sdk.KindCount,
			Doc: "measured jobs that ran past their estimated duration"},
		{Name: "estimate_unknown", Label: "arrivals with no estimate", Kind: sdk.KindCount,
			Doc: "measured arrivals with no requested time, scheduled on their real size"},
	}
}

// Counters reports the backfilled fraction and the estimate overruns.
func (p *Policy) Counters() []sdk.Counter {
	var frac float64
	if p.nArr > 0 {
		frac = float64(p.nBackfilled) / float64(p.nArr)
	}
	return []sdk.Counter{
		{Name: "backfilled", Value: frac},
		{Name: "estimate_exceeded", Value: float64(p.nExceeded)},
		{Name: "estimate_unknown", Value: float64(p.nUnknown)},
	}
}

// Arrive records j's estimated duration, queues it behind every waiting job
// and schedules.
func (p *Policy) Arrive(s *sdk.System, j *sdk.Job) {
	if s.Measuring() {
		j.Tag = tagMeasured
		p.nArr++
	}
	est := 0.0
	if p.estimate == EstimateRequested {
		if id := j.ID(); id < int64(len(p.trace)) {
			est = p.trace[id]
		}
		if !(est > 0) {
			est = s.Size(j)
			if j.Tag&tagMeasured != 0 {
				p.nUnknown++
			}
		}
	} else {
		est = s.Size(j)
	}
	j.Key = est * p.factor
	p.q = append(p.q, qent{j: j, res: math.NaN()})
	p.schedule(s)
}

// Complete drops j from the running jobs, counts an overrun and schedules.
func (p *Policy) Complete(s *sdk.System, j *sdk.Job) {
	i := sort.Search(len(p.run), func(i int) bool { return !before(p.run[i], j) })
	if i == len(p.run) || p.run[i] != j {
		panic(fmt.Sprintf("backfill: completed job %d not among the running jobs", j.ID()))
	}
	p.run = append(p.run[:i], p.run[i+1:]...)
	if s.Now() > j.Key && j.Tag&tagMeasured != 0 {
		p.nExceeded++
	}
	p.schedule(s)
}

func (p *Policy) schedule(s *sdk.System) {
	if p.conservative {
		p.conservativePass(s)
	} else {
		p.easyPass(s)
	}
}

// before orders running jobs by estimated completion, then arrival.
func before(a, b *sdk.Job) bool {
	return a.Key < b.Key || (a.Key == b.Key && a.ID() < b.ID())
}

// start puts waiting job j into service: its Key becomes its estimated
// completion, and it joins the sorted running jobs. older reports whether
// an earlier-arrived job is still waiting (a backfill).
func (p *Policy) start(s *sdk.System, j *sdk.Job, older bool) {
	j.Key += s.Now()
	i := sort.Search(len(p.run), func(i int) bool { return before(j, p.run[i]) })
	p.run = append(p.run, nil)
	copy(p.run[i+1:], p.run[i:])
	p.run[i] = j
	if older && j.Tag&tagMeasured != 0 {
		p.nBackfilled++
	}
	s.Start(j)
}

// expectedEnd is a running job's estimated completion as the planner uses
// it: an overrunning job (estimate already past) is expected to end just
// after now (see the package comment).
func expectedEnd(j *sdk.Job, now float64) float64 {
	if j.Key > now {
		return j.Key
	}
	return math.Nextafter(now, math.Inf(1))
}

// easyPass is one EASY decision (see the package comment).
func (p *Policy) easyPass(s *sdk.System) {
	h := 0
	for h < len(p.q) && p.q[h].j.Need() <= s.Free() {
		p.start(s, p.q[h].j, false)
		h++
	}
	if h > 0 { // shift down rather than reslice, so appends reuse the array
		n := copy(p.q, p.q[h:])
		clear(p.q[n:])
		p.q = p.q[:n]
	}
	free := s.Free()
	if len(p.q) < 2 || free < p.minNeed {
		return
	}
	// Shadow time and extra servers of the blocked head.
	now := s.Now()
	head := p.q[0].j.Need()
	avail := free
	shadow, extra := math.Inf(1), 0
	for _, r := range p.run {
		avail += r.Need()
		if avail >= head {
			shadow, extra = expectedEnd(r, now), avail-head
			break
		}
	}
	w := 1
	for i := 1; i < len(p.q); i++ {
		if free < p.minNeed { // nothing else can start: keep the rest as is
			w += copy(p.q[w:], p.q[i:])
			break
		}
		e := p.q[i]
		n := e.j.Need()
		if n <= free {
			switch {
			case now+e.j.Key <= shadow:
				p.start(s, e.j, true)
				free -= n
				continue
			case n <= extra:
				p.start(s, e.j, true)
				free -= n
				extra -= n
				continue
			}
		}
		p.q[w] = e
		w++
	}
	clear(p.q[w:])
	p.q = p.q[:w]
}

// conservativePass is one conservative decision: build the profile of the
// running jobs and the current reservations, compress in arrival order,
// start what is reserved now (see the package comment).
func (p *Policy) conservativePass(s *sdk.System) {
	if len(p.q) == 0 {
		return
	}
	now := s.Now()
	pr := &p.prof
	// Once the running jobs' releases leave as many idle servers as all the
	// waiting jobs need together, every waiting job fits there whatever the
	// others reserve, so no placement looks further: the profile stops
	// there (the placements are exactly those of the full profile).
	waitNeed := 0
	for _, e := range p.q {
		waitNeed += e.j.Need()
	}
	pr.reset(now, s.Free())
	for _, r := range p.run { // sorted by estimated end: O(R) in all
		if pr.f[len(pr.f)-1] >= waitNeed {
			break
		}
		pr.release(expectedEnd(r, now), r.Need())
	}
	for _, e := range p.q {
		if !math.IsNaN(e.res) {
			pr.add(math.Max(e.res, now), e.j.Key, -e.j.Need())
		}
	}
	for i := range p.q {
		e := &p.q[i]
		n, d := e.j.Need(), e.j.Key
		if !math.IsNaN(e.res) {
			pr.add(math.Max(e.res, now), d, n)
		}
		e.res = pr.earliest(n, d)
		pr.add(e.res, d, -n)
	}
	w := 0
	for _, e := range p.q {
		if e.res == now {
			p.start(s, e.j, w > 0) // w > 0: an earlier job still waits
			continue
		}
		p.q[w] = e
		w++
	}
	clear(p.q[w:])
	p.q = p.q[:w]
}

// profile is the number of idle servers over [now, ∞) as a step function:
// f[i] idle servers on [t[i], t[i+1]), the last step extending to infinity.
type profile struct {
	t []float64
	f []int
}

// reset starts the profile at now with free idle servers.
func (pr *profile) reset(now float64, free int) {
	pr.t = append(pr.t[:0], now)
	pr.f = append(pr.f[:0], free)
}

// release adds n idle servers from time at on (a running job's expected
// completion, at > now). Calls come in non-decreasing order of at (the
// running jobs are sorted by estimated end), so each appends or extends the
// last step: O(1).
func (pr *profile) release(at float64, n int) {
	last := len(pr.t) - 1
	if pr.t[last] == at {
		pr.f[last] += n
		return
	}
	pr.t = append(pr.t, at)
	pr.f = append(pr.f, pr.f[last]+n)
}

// add adds n idle servers (n < 0: takes them) on [a, a+d).
func (pr *profile) add(a, d float64, n int) {
	i := pr.point(a)
	e := pr.point(a + d)
	for ; i < e; i++ {
		pr.f[i] += n
	}
}

// point returns the index of the breakpoint at time x (≥ t[0]), inserting
// one (with the idle count of the step it splits) if needed.
func (pr *profile) point(x float64) int {
	i := sort.SearchFloat64s(pr.t, x)
	if i < len(pr.t) && pr.t[i] == x {
		return i
	}
	pr.t = append(pr.t, 0)
	pr.f = append(pr.f, 0)
	copy(pr.t[i+1:], pr.t[i:])
	copy(pr.f[i+1:], pr.f[i:])
	pr.t[i] = x
	pr.f[i] = pr.f[i-1]
	return i
}

// earliest returns the earliest breakpoint time t at which n servers are
// idle throughout [t, t+d). After the last reservation ends, the last step
// has all k servers idle, or at least the waiting jobs' total need (see
// conservativePass), so there is always one. Each breakpoint is examined at
// most once: a failing step moves the candidate past it.
func (pr *profile) earliest(n int, d float64) float64 {
	i := 0
	for {
		end := pr.t[i] + d
		ok := true
		for m := i; m < len(pr.t) && pr.t[m] < end; m++ {
			if pr.f[m] < n {
				i, ok = m+1, false
				break
			}
		}
		if ok {
			return pr.t[i]
		}
	}
}
