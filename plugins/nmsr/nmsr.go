// Package nmsr is the non-preemptive Markovian Service Rate policy (nMSR) of
// Chen, Grosof and Berg, "Improving Multiresource Job Scheduling with
// Markovian Service Rate Policies", Proc. ACM Meas. Anal. Comput. Syst. 9(2),
// 2025 (arXiv:2412.08915) — reference [28] of the Quickswap paper, which
// compares against it (Q §2.2, §6.2) without defining it.
//
// # Where the definition comes from
//
// The paper's text beyond its abstract was not available to us. The abstract
// and Q §2.2 say: an MSR policy precomputes a set of schedules with high
// resource utilisation and switches between them according to a
// continuous-time Markov chain independent of the system state (queue
// lengths); the non-preemptive variant cannot interrupt running jobs. The
// precise rules implemented here were read from the authors' own simulator
// for the paper's Borg experiment, github.com/jcpwfloi/msr-borg at commit
// 46ae0aa6e41947930a8619653806bd95e02438e4: src/borg-nmsr.cpp ("nMSR w/
// BackFilling", the variant in the paper's figure, see borg/plot-all.py),
// src/borg-nmsr-no-ff.cpp (without backfilling), borg/maxmin.py (candidate
// construction) and borg/simulate.py (post-processing and CTMC rates). That
// code is for two resources (CPU, memory) with capacity 1 each; here the one
// resource is the k servers and a class-i job uses n_i of them.
//
// # The policy
//
// Offline (Init; see [Optimise]): candidate schedules u_1..u_m ∈ ℕ^C (u_{s,i}
// class-i jobs, Σ_i n_i u_{s,i} <= k) and time fractions α_s maximising the
// smallest relative gap min_i (Σ_s α_s u_{s,i} − ℓ_i)/ℓ_i between the
// schedules' average service and the class loads ℓ_i = λ_i E[S_i]; candidates
// with α_s <= cutoff are dropped, α renormalised, and the rest put in order
// of decreasing α. The CTMC is a loop s → s+1 (mod m); the initial state is
// drawn from α; the mean sojourn in state s is α_s·T, so that (switching
// aside) the fraction of time in state s is α_s and one loop lasts T on
// average.
//
// Online, at every arrival, completion and transition:
//
//  1. for each class i in index order, start the oldest waiting class-i jobs
//     while fewer than u_{s,i} class-i jobs are in service and one fits in
//     the idle servers;
//  2. if switching and every class has at most u_{s,i} jobs in service,
//     switching ends;
//  3. if not switching and backfilling is on, repeatedly start the oldest
//     waiting job (across classes, by arrival) that fits.
//
// A transition s → s+1 happens at rate 1/(α_s T) while not switching; it
// starts a switching period during which the CTMC is frozen and no
// backfilling happens, which ends once the jobs in excess of u_{s+1} have
// completed (no preemption). Backfilled jobs count as in service for rule 2.
//
// # Choices
//
//   - Candidates: the authors solve the max-min problem as an integer
//     program (Gurobi) with C candidate slots; we solve the same problem
//     exactly by column generation over all packings (see [Optimise]); the
//     optimum value is the same, and where the optimum is not unique our
//     solution may differ from Gurobi's. The objective is invariant to
//     scaling ℓ, so ℓ_i ∝ p_i E[S_i] from the class shares and service means
//     (the authors also reuse the candidates computed at one load for every
//     load).
//   - cutoff: the authors' script drops candidates with α_s <= 0.001. Our
//     default is 0 (drop only numerically zero ones): on the Borg workloads
//     the 0.001 cut removes the only candidates that serve some rare
//     classes, which are then served by backfilling alone (without it they
//     would never be served), contradicting the throughput optimality the
//     construction is for. Set cutoff = 0.001 to reproduce their script.
//   - T, the mean loop duration: the authors set rate_s = a·Σ_j α_j²/α_s
//     with a free factor a (alpha_scale), i.e. T = 1/(a·Σ_j α_j²), and
//     neither paper states the value Q used. We parametrise it as
//     T = cycle · m · max_i E[S_i] (parameter "cycle", default 10), so that a
//     state with the average share α_s = 1/m lasts on average cycle times the
//     longest mean job duration — the time scale of a non-preemptive switch,
//     which must drain the previous schedule's jobs. The default is ours: on
//     one-or-all (λ = 4, 6) and four-class (λ = 4) it gave the lowest mean
//     response time of cycle ∈ {1, 10, 100}; at cycle = 1 switching takes
//     about 70% of the time and the system is unstable from λ = 6
//     (one-or-all). On Borg-like workloads (26 classes, mean durations from
//     0.2 to 1.4·10⁴) no value works well: a fast loop spends its time
//     draining long jobs, a slow one leaves the wide jobs of the current
//     schedule starving behind backfilled narrow ones — which agrees with Q
//     §6.4 omitting nMSR from its Borg figure for poor performance. The
//     authors' own Borg figure uses a slow loop (a = 10⁻⁷ s⁻¹, T ≥ 10⁷ s,
//     against job durations capped at 2·10⁵ s).
//   - Backfilling (parameter "backfill") is on by default: the non-preemptive
//     variant shown in the MSR paper's figure is "nMSR w/ BackFilling".
//   - The authors' simulator resamples the transition clock at every event,
//     which by memorylessness is a rate-1/(α_s T) exponential clock running
//     while not switching; we draw one exponential per sojourn. While the
//     system is empty no clock is kept: at the next arrival the loop's
//     evolution over the empty period is drawn exactly (with no jobs present
//     a switching period ends at once), so a replayed trace can end.
//   - Ties in "oldest" are impossible (job ids increase in arrival order).
//
// # Counters
//
// stability_margin: min_i (Σ_s α_s u_{s,i})/ℓ_i for the workload's actual
// loads (> 1 is necessary for stability; the switching periods take some of
// the margin); candidates: m; cycle_time: T; transitions: CTMC transitions
// during the measurement window; switching_fraction: fraction of the window
// spent switching (up to the last event of the window).
//
// # Cost
//
// An arrival costs O(1); a completion or transition costs O(C) plus O(C)
// per job started.
package nmsr

import (
	"fmt"
	"slices"

	"github.com/msjfarm/msjfarm/sdk"
)

// Policies lists the policies of this family.
var Policies = []sdk.Spec{{
	Name: "nmsr",
	Doc: "Non-preemptive Markovian Service Rate policy (Chen, Grosof, Berg, POMACS 2025; Quickswap ref. [28]): " +
		"cycles through precomputed schedules on a load-independent Markov chain, draining jobs before each switch, " +
		"with optional backfilling.",
	New: func() sdk.Policy { return New() },
}}

// Parameter defaults.
const (
	DefaultCycle  = 100.0
	DefaultCutoff = 0.0
)

// New returns an nMSR policy with the default parameters.
func New() *NMSR {
	return &NMSR{backfill: true, cycle: DefaultCycle, cutoff: DefaultCutoff}
}

// NMSR is the non-preemptive MSR policy (see the package documentation).
type NMSR struct {
	backfill bool
	cycle    float64 // T / (m · max_i E[S_i])
	cutoff   float64

	// Offline data, recomputed only when the classes change.
	sch     *Schedule
	keyK    int
	keyN    []int
	keyL    []float64
	keyCut  float64
	rate    []float64
	cycleT  float64
	margin  float64
	initial []float64 // cumulative α

	// State.
	state     int
	switching bool
	paused    bool
	pausedAt  float64
	u         []int
	q         sdk.ClassQueues

	// Test hooks: a fixed initial state (fixedInit) and a replacement for
	// the mean-1 exponential draws of the sojourns (expDraw).
	fixedInit bool
	initState int
	expDraw   func() float64

	// Counters.
	transitions   int64
	swTime, lastT float64
	winStart      float64
	inWindow      bool
}

// Params is the parameter schema.
func (p *NMSR) Params() []sdk.Param {
	return []sdk.Param{
		{Name: "cycle", Type: sdk.Float, Default: DefaultCycle, Min: sdk.Bound(1e-6),
			Doc: "mean duration T of one loop of the schedule Markov chain (switching periods excluded), in units of (number of candidate schedules) × (largest class mean service time)"},
		{Name: "backfill", Type: sdk.Bool, Default: true,
			Doc: "when not switching, also start the oldest waiting jobs that fit (nMSR w/ BackFilling)"},
		{Name: "cutoff", Type: sdk.Float, Default: DefaultCutoff, Min: sdk.Bound(0), Max: sdk.Bound(0.5),
			Doc: "drop candidate schedules whose time fraction is at most this, then renormalise"},
	}
}

// Configure sets the parameters.
func (p *NMSR) Configure(v sdk.Values) error {
	p.cycle, p.backfill, p.cutoff = v.Float("cycle"), v.Bool("backfill"), v.Float("cutoff")
	if !(p.cycle > 0) {
		return fmt.Errorf("cycle must be > 0, got %v", p.cycle)
	}
	return nil
}

// Schedule returns the candidate schedules of the last Init.
func (p *NMSR) Schedule() *Schedule { return p.sch }

// Init computes (or reuses) the candidate schedules and resets the state.
func (p *NMSR) Init(s *sdk.System) error {
	cls := s.Classes()
	k := s.Servers()
	C := len(cls)
	var shares float64
	for _, c := range cls {
		shares += c.Share
	}
	needs := make([]int, C)
	ell := make([]float64, C)
	var maxSize float64
	for i, c := range cls {
		needs[i] = c.Need
		if shares > 0 {
			ell[i] = c.Share / shares * c.Service.Mean()
		}
		if c.Share > 0 {
			maxSize = max(maxSize, c.Service.Mean())
		}
	}
	if p.sch == nil || p.keyK != k || p.keyCut != p.cutoff || !slices.Equal(p.keyN, needs) || !slices.Equal(p.keyL, ell) {
		sch, err := Optimise(k, needs, ell, p.cutoff)
		if err != nil {
			return err
		}
		p.sch, p.keyK, p.keyN, p.keyL, p.keyCut = sch, k, needs, ell, p.cutoff
	}
	m := len(p.sch.Alpha)
	p.cycleT = p.cycle * float64(m) * maxSize
	p.rate = make([]float64, m)
	p.initial = make([]float64, m)
	var cum float64
	for i, a := range p.sch.Alpha {
		p.rate[i] = 1 / (a * p.cycleT)
		cum += a
		p.initial[i] = cum
	}

	// Margin against the actual per-class loads ℓ_i = ρ_i k / n_i.
	p.margin = 0
	rho := s.Workload().ClassLoads()
	first := true
	for i, r := range rho {
		if r <= 0 {
			continue
		}
		var x float64
		for st, u := range p.sch.Candidates {
			x += p.sch.Alpha[st] * float64(u[i])
		}
		if g := x / (r * float64(k) / float64(needs[i])); first || g < p.margin {
			p.margin, first = g, false
		}
	}

	x := s.Rand().Float64() * cum
	p.state = 0
	for p.state < m-1 && x > p.initial[p.state] {
		p.state++
	}
	if p.fixedInit {
		p.state = p.initState
	}
	p.switching = false
	if len(p.u) != C {
		p.u = make([]int, C)
	}
	clear(p.u)
	p.q.Reset(C)
	p.transitions, p.swTime, p.lastT, p.winStart, p.inWindow = 0, 0, 0, 0, false
	p.arm(s)
	return nil
}

// arm starts the transition clock of the current state, or pauses the chain
// if the system is empty.
func (p *NMSR) arm(s *sdk.System) {
	if s.InSystem() == 0 {
		p.paused, p.pausedAt = true, s.Now()
		return
	}
	p.paused = false
	s.SetTimer(s.Now()+p.exp(s)/p.rate[p.state], 0)
}

func (p *NMSR) exp(s *sdk.System) float64 {
	if p.expDraw != nil {
		return p.expDraw()
	}
	return s.Rand().Exp()
}

// resume draws the loop's evolution over the empty period that ends now
// (each transition's switching period ends at once with no jobs present) and
// starts the clock of the sojourn in progress.
func (p *NMSR) resume(s *sdk.System) {
	t, now, m := p.pausedAt, s.Now(), len(p.rate)
	for {
		t += p.exp(s) / p.rate[p.state]
		if t > now {
			break
		}
		p.state = (p.state + 1) % m
		if s.Measuring() {
			p.transitions++
		}
	}
	p.paused = false
	s.SetTimer(t, 0)
}

// account adds the time since the last event to the switching time, while
// the measurement window is open.
func (p *NMSR) account(s *sdk.System) {
	if !s.Measuring() {
		return
	}
	now := s.Now()
	if !p.inWindow {
		p.inWindow, p.winStart = true, now
	} else if p.switching {
		p.swTime += now - p.lastT
	}
	p.lastT = now
}

// Arrive queues j; it can start only if its class queue was empty (rules 1
// and 3 are otherwise unchanged by an arrival: every head that could start
// already has).
func (p *NMSR) Arrive(s *sdk.System, j *sdk.Job) {
	p.account(s)
	if p.paused {
		p.resume(s)
	}
	i := j.Class()
	if p.q.Q[i].Len() == 0 && j.Need() <= s.Free() &&
		(p.u[i] < p.sch.Candidates[p.state][i] || (!p.switching && p.backfill)) {
		p.u[i]++
		s.Start(j)
		return
	}
	p.q.Push(j)
}

// Complete frees the job's servers and reschedules.
func (p *NMSR) Complete(s *sdk.System, j *sdk.Job) {
	p.account(s)
	p.u[j.Class()]--
	p.schedule(s)
}

// Timer is a transition of the schedule chain: move to the next candidate and
// start switching.
func (p *NMSR) Timer(s *sdk.System, _ int) {
	p.account(s)
	p.state = (p.state + 1) % len(p.rate)
	p.switching = true
	if s.Measuring() {
		p.transitions++
	}
	p.schedule(s)
}

func (p *NMSR) schedule(s *sdk.System) {
	cand := p.sch.Candidates[p.state]
	for i, c := range cand {
		for p.u[i] < c {
			j := p.q.Q[i].Front()
			if j == nil || j.Need() > s.Free() {
				break
			}
			p.q.Pop(i)
			p.u[i]++
			s.Start(j)
		}
	}
	if p.switching {
		for i, c := range cand {
			if p.u[i] > c {
				return
			}
		}
		p.switching = false
		p.arm(s)
	}
	if !p.backfill {
		return
	}
	for {
		c := p.q.Oldest(s.Free())
		if c < 0 {
			return
		}
		p.u[c]++
		s.Start(p.q.Pop(c))
	}
}

// DescribeCounters labels the counters (sdk.CounterDescriber).
func (p *NMSR) DescribeCounters() []sdk.CounterInfo {
	return []sdk.CounterInfo{
		{Name: "stability_margin", Label: "stability margin",
			Doc: "min over classes of the service the schedules give over the class load (above 1 is necessary)"},
		{Name: "candidates", Label: "candidate schedules", Kind: sdk.KindCount},
		{Name: "cycle_time", Label: "cycle time T", Unit: "time", Kind: sdk.KindTime},
		{Name: "transitions", Label: "schedule transitions", Kind: sdk.KindCount, Doc: "CTMC transitions in the measurement window"},
		{Name: "switching_fraction", Label: "time switching schedules", Kind: sdk.KindFraction},
	}
}

// Counters reports the schedule and switching statistics.
func (p *NMSR) Counters() []sdk.Counter {
	var frac float64
	if d := p.lastT - p.winStart; d > 0 {
		frac = p.swTime / d
	}
	return []sdk.Counter{
		{Name: "stability_margin", Value: p.margin},
		{Name: "candidates", Value: float64(len(p.rate))},
		{Name: "cycle_time", Value: p.cycleT},
		{Name: "transitions", Value: float64(p.transitions)},
		{Name: "switching_fraction", Value: frac},
	}
}
