// Package killsmart holds Kill-Smart, the preemption-restart policy of
// K = Anggraito, Razumchik, Marin, "Kill Smart, Run Fast: Using Job
// Termination for Resource Efficiency in Data Centers" (ICPE 2026): jobs are
// served nearly first come first served, and when head-of-line blocking
// wastes servers, the few jobs in service are killed (their work is lost,
// they restart later with their original size, K §3) so that the blocked
// job at the head of the line can start.
//
// Two policies share one implementation:
//
//   - "killsmart": the one-or-all policy of K §4.1 with the idle restart of
//     §4.6 (every class needs 1 or all k servers);
//   - "killsmart-multiclass": the extension to any set of classes of K §5,
//     Algorithm 1 (e.g. the Google Borg cells, workload "borg-b", "borg-e").
//
// The saturation formulas of K §4.3–4.4 (Theorem 4.4 and Lemmas 4.2–4.7) are
// in theory.go, for checking a simulation against them.
package killsmart

import (
	"fmt"
	"strconv"

	"github.com/msjfarm/msjfarm/sdk"
)

// Policies lists the policies of this family.
var Policies = []sdk.Spec{{
	Name: "killsmart",
	Doc: "Kill-Smart for one-or-all workloads (K §4.1, §4.6): with a big job blocked at the head of the line, " +
		"kill the ≤ ν small jobs in service (never a job twice); killed jobs restart together, non-preemptably, " +
		"after K big-job services (at most K−1 kills) or when the system empties. Parameters K (default 21) and " +
		"nu (ν; default −1 = ⌊k/(K−1)⌋).",
	New: func() sdk.Policy { return New(OneOrAll, DefaultKOneOrAll, -1) },
}, {
	Name: "killsmart-multiclass",
	Doc: "Kill-Smart for any classes (K §5, Algorithm 1): when at most ν servers are busy and the head-of-line " +
		"job fits neither the idle nor the busy servers, kill every job in service and start it; killed jobs restart " +
		"together, non-preemptably, after K−1 kills or when the system empties. Parameters K (default 5) and nu " +
		"(ν; default −1 = ⌊k/(K−1)⌋).",
	New: func() sdk.Policy { return New(MultiClass, DefaultKMultiClass, -1) },
}}

// Mode selects which of K's two definitions a KillSmart instance follows.
type Mode uint8

const (
	// OneOrAll is the policy of K §4.1 and §4.6: a cycle ends after K
	// big-job services (or K−1 kills) or when the system empties.
	OneOrAll Mode = iota
	// MultiClass is K §5, Algorithm 1: a cycle ends after K−1 kills or when
	// the system empties.
	MultiClass
)

// Defaults of the parameter K. K does not fix one value; these follow its
// experiments and its rule of thumb ν(K−1) ≈ N (§4.6), with ν resolved from
// K by default: on the N = 2048 one-or-all workload K = 21 gives ν = 102,
// next to Fig. 4's (K, ν) = (21, 100); on the Borg cells K = 5 gives ν = 512,
// one of the four configurations of the paper's Borg runs ((3, 1024),
// (5, 512), (9, 256), (17, 128), all with ν(K−1) = N), the moderate K that
// §5.1 finds best.
const (
	DefaultKOneOrAll   = 21
	DefaultKMultiClass = 5
)

// Job.Tag bits.
const (
	tagKilled = 1 << iota // killed once: in the box, or restarted
	tagNonPre             // started by a restart: must not be killed
)

// KillSmart is Kill-Smart (K §4.1, §4.6, §5 Algorithm 1).
//
// # The rules
//
// Jobs wait in one arrival-order buffer and are started first come first
// served with head-of-line blocking: the oldest waiting job starts when it
// fits, and nothing overtakes it ("nearly FCFS", K abstract; Algorithm 1
// line 11). Killed jobs do not return to the buffer: they wait apart, in
// "the box" (the orange box of K Fig. 1). After every arrival and
// departure the policy
//
//  1. unless a restart is pending (below), starts waiting jobs FCFS;
//  2. kills (Algorithm 1 line 13) if killing is permitted (no
//     non-preemptable job is in service), at most ν servers are busy, fewer
//     than K−1 kills happened in the current cycle (one-or-all also: fewer
//     than K big jobs started in it), and the head-of-line job needs more
//     servers than are idle (it is blocked) and more than are busy (killing
//     improves utilisation, §5 condition (ii)). A kill preempts every job in
//     service (PreemptRestart: the engine discards their progress and counts
//     it as wasted work), puts them in the box, and starts the head-of-line
//     job and then any later jobs that fit, FCFS (§5: "Additional subsequent
//     jobs may also be admitted");
//  3. restarts when a restart is due: the cycle is complete (K−1 kills; in
//     one-or-all, also K big jobs started since the last restart — §4.1
//     "after at most every K big job services") or the system is idle (the
//     buffer is empty and no job is in service, §4.6) with jobs in the box.
//     The restart waits, starting nothing else (Algorithm 1 lines 19–23,
//     jobs_can_enter ← false), until the idle servers can hold the whole box;
//     then it starts every boxed job, then waiting jobs FCFS, all of them
//     non-preemptable (lines 24–31), and resets the cycle counters. Killing
//     is permitted again once every non-preemptable job has left (line 35).
//
// A killed job is only restarted by a restart, where it becomes
// non-preemptable, so no job is killed twice (§4.1's first rule); the kill
// code checks it anyway and panics (a policy error of the run) if broken.
//
// # Choices where K is ambiguous
//
//   - ν counts servers: a kill needs at most ν busy servers (§5 (i), "the
//     number of servers occupied by the job(s) selected for termination must
//     be not greater than ν"), which in one-or-all is §4.1's "number of small
//     jobs in service".
//   - The cycle in one-or-all counts big-job services, as §4.1 and the
//     saturation analysis of §4.3 do (K big jobs per cycle, a batch of small
//     jobs after each of the first K−1 where preemption can occur, possibly
//     empty — an empty batch kills nothing but still counts); it also stops
//     at K−1 kills, as Algorithm 1 does, since in the unsaturated system a
//     kill can precede the cycle's first big job. Algorithm 1 (multi-class)
//     counts kills only. A big job is counted when it starts (§4.3's K-th big
//     job then runs while the restart waits for the servers, so the boxed
//     jobs restart when it completes, "after the service of every K big
//     jobs"). The reference simulator of the paper's figures
//     (github.com/UniVe-NeDS-Lab/mjqm-simulator, KillSmart.cpp) counts the
//     same way.
//   - A restart due with an empty box (one-or-all: K big jobs started without
//     a kill) happens at once and only resets the counters; an idle system
//     with an empty box is not a restart (Algorithm 1's reset of kill_cycle
//     there is a no-op, since kill_cycle > 0 implies a non-empty box).
//   - The kill test runs after the FCFS start of step 1, at the same
//     instant, and killing is permitted as soon as the last non-preemptable
//     job has left. Algorithm 1, read as a loop over events, updates
//     killing_permitted at the end of an event and so delays such a kill to
//     the next arrival or departure; that delay is an artifact of the loop's
//     structure, not a rule of §4.1 ("kill ... when their number is less than
//     or equal to ν"). (The reference simulator also delays them, and tests
//     the kill before starting jobs, so a kill made possible by that start
//     waits for the next event too.)
//   - The restart fill, like every fill, is FCFS with head-of-line blocking
//     (Algorithm 1 line 28's "while idle_servers > 0" would loop forever on a
//     head job that does not fit).
//   - A batch of at most ν jobs that starts with a blocked big job right
//     behind it (e.g. the small jobs between two big jobs, started when the
//     first completes) is killed at the instant it starts, with zero wasted
//     work: §4.3's "these do not enter in service", whose jobs Lemma 4.6
//     still counts as preempted and whose kill counts in the cycle.
//   - Conditions (ii) and "the head job does not fit" together mean that a
//     kill needs a head job of more than k/2 servers. On Borg cell E as the
//     workload package defines it (k = 2048, largest need 1000) Algorithm 1
//     therefore never kills and is FCFS (tested); K §5.1 reports kills on
//     cell E, so its runs must have used fewer servers there (k = 1024, the
//     power of two above the largest need, gives kills).
//   - K·ν ≤ N (§5) ensures that the box fits in the servers; what is needed is
//     (K−1)·ν ≤ N (at most K−1 kills of at most ν servers each), which is
//     also what the paper's own Borg configurations satisfy ((3, 1024) on
//     N = 2048 has Kν > N). Init rejects (K−1)·ν > k, where a full box could
//     never restart.
//   - K = 1 never kills (no kill cycle is allowed): the policy is FCFS.
//     ν = 0 never kills either.
//
// # Counters
//
// All over the measurement window only (sim.Measurer), by the instant of the
// event counted:
//
//	kills                  kill operations
//	preemptions            jobs killed (= Result.Preemptions)
//	jobs_per_kill          preemptions / kills
//	preempted_fraction     preemptions / departures; also per class as
//	                       preempted_fraction/<class name>
//	restarts               restarts of a non-empty box; idle_restarts those
//	                       triggered by an idle system (§4.6)
//	restarted_jobs         jobs restarted
//	wasted_work            Σ need × service discarded by kills (= Result.WastedWork,
//	                       summed in the same order, bit for bit)
//	wasted_power           wasted_work / window length: K §4.4's W^{K,ν},
//	                       the rate of wasted computation in servers, what
//	                       K Fig. 2b, 4f, 5b and 6b plot
//	extra_delay_preempted  mean extra delay of a preempted job, K Lemma 4.7's
//	                       D_Jp: Σ extra delay / restarted_jobs
//	extra_delay_per_small_job (one-or-all) or extra_delay_per_job
//	                       (multi-class): Σ extra delay / departures of small
//	                       (need-1) jobs, resp. of all jobs: K Lemma 4.6's D_Js
//	                       ("normalized delay per all small jobs", Fig. 4e)
//
// The extra delay of a preempted job (K §4.4, proof of Lemma 4.6) is the time
// from its first start to its restart: the service it received before the
// kill ("the processing time of the other shorter jobs in the same batch")
// plus the time it waited in the box ("the service of the other K−1−i
// sequences of a big job and a batch of small jobs"). It is added when the
// job restarts. In saturation the denominators are the jobs served; in a
// stable system they equal the arrivals of K's definition (λ p_s t).
//
// # Cost
//
// A decision costs O(1) plus O(1) per job it starts; a kill costs O(jobs
// killed) (at most ν servers' worth) and a restart O(jobs restarted). No
// allocation in steady state.
type KillSmart struct {
	mode            Mode
	kParam, nuParam int // as configured (nu −1: auto)
	K, nu           int // resolved

	k       int
	big     []bool // per class (one-or-all): needs all k servers
	small   []bool // per class: counted in the extra delay's denominator
	q       sdk.FIFO
	box     []*sdk.Job
	boxNeed int
	kills   int // kill operations in the current cycle (kill_cycle)
	bigs    int // one-or-all: big jobs started in the current cycle
	nonPre  int // non-preemptable jobs in service
	scratch []*sdk.Job
	sys     *sdk.System

	measuring bool
	t0, t1    float64
	c         counts
	classPre  []int64
	classDone []int64
	names     []string
}

type counts struct {
	kills, preempted, restarts, idleRestarts, restarted int64
	departures, smallDepartures                         int64
	wasted, extraDelay                                  float64
}

// New returns Kill-Smart in the given mode with parameters K and ν (nu = −1:
// ⌊k/(K−1)⌋, resolved by Init).
func New(mode Mode, K, nu int) *KillSmart { return &KillSmart{mode: mode, kParam: K, nuParam: nu} }

// Preemption declares preemption-restart (K §3: a killed job keeps its
// original size and loses its progress).
func (p *KillSmart) Preemption() sdk.Preemption { return sdk.PreemptRestart }

// Params: K and ν.
func (p *KillSmart) Params() []sdk.Param {
	defK := DefaultKOneOrAll
	kdoc := "cycle length K ≥ 1: killed jobs restart together after K big-job services or K−1 kills (K §4.1); 1 never kills (FCFS)"
	if p.mode == MultiClass {
		defK = DefaultKMultiClass
		kdoc = "cycle length K ≥ 1: killed jobs restart together after K−1 kills (K §5, Algorithm 1); 1 never kills (FCFS)"
	}
	return []sdk.Param{
		{Name: "K", Type: sdk.Int, Default: defK, Min: sdk.Bound(1), Max: sdk.Bound(1 << 30), Doc: kdoc},
		{Name: "nu", Type: sdk.Int, Default: -1, Min: sdk.Bound(-1), Max: sdk.Bound(1 << 30),
			Doc: "kill threshold ν: kill only when at most ν servers are busy (K §4.1, §5 (i)); 0 never kills; " +
				"−1 (default) means ⌊k/(K−1)⌋ (K §4.6: best when ν(K−1) ≈ N); (K−1)·ν must be ≤ k"},
	}
}

// Configure reads K and ν (checked against k in Init).
func (p *KillSmart) Configure(v sdk.Values) error {
	p.kParam, p.nuParam = v.Int("K"), v.Int("nu")
	return nil
}

func (p *KillSmart) name() string {
	if p.mode == MultiClass {
		return "killsmart-multiclass"
	}
	return "killsmart"
}

// Init resolves ν, checks the workload and resets the state.
func (p *KillSmart) Init(s *sdk.System) error {
	k := s.Servers()
	K, nu := p.kParam, p.nuParam
	if K < 1 {
		return fmt.Errorf("%s: K must be >= 1, got %d", p.name(), K)
	}
	if nu < -1 {
		return fmt.Errorf("%s: nu must be >= 0 (or −1 for ⌊k/(K−1)⌋), got %d", p.name(), nu)
	}
	if nu == -1 {
		if K > 1 {
			nu = k / (K - 1)
		} else {
			nu = 0
		}
	}
	if K > 1 && (K-1)*nu > k {
		return fmt.Errorf("%s: (K−1)·ν = %d·%d = %d exceeds k = %d: the jobs killed in a cycle could not restart together (K §5 requires the box to fit in the servers)",
			p.name(), K-1, nu, (K-1)*nu, k)
	}
	p.K, p.nu, p.k = K, nu, k
	cls := s.Classes()
	p.big = resize(p.big, len(cls))
	p.small = resize(p.small, len(cls))
	p.names = p.names[:0]
	for i, c := range cls {
		name := c.Name
		if name == "" {
			name = strconv.Itoa(i)
		}
		p.names = append(p.names, name)
		if p.mode == OneOrAll {
			if c.Need != 1 && c.Need != k {
				return fmt.Errorf("killsmart: defined for one-or-all workloads only (K §4: every class needs 1 or k = %d servers); class %q needs %d (use killsmart-multiclass)", k, name, c.Need)
			}
			p.big[i] = c.Need == k && k > 1
			p.small[i] = c.Need == 1
		} else {
			p.big[i] = false
			p.small[i] = true
		}
	}
	p.q.Reset()
	clear(p.box)
	p.box = p.box[:0]
	clear(p.scratch)
	p.scratch = p.scratch[:0]
	p.boxNeed, p.kills, p.bigs, p.nonPre = 0, 0, 0, 0
	p.sys = s
	p.measuring = false
	p.t0, p.t1 = 0, 0
	p.c = counts{}
	p.classPre = resize64(p.classPre, len(cls))
	p.classDone = resize64(p.classDone, len(cls))
	return nil
}

func resize(b []bool, n int) []bool {
	if cap(b) < n {
		return make([]bool, n)
	}
	b = b[:n]
	clear(b)
	return b
}

func resize64(b []int64, n int) []int64 {
	if cap(b) < n {
		return make([]int64, n)
	}
	b = b[:n]
	clear(b)
	return b
}

// StartMeasuring opens the counters' window.
func (p *KillSmart) StartMeasuring(s *sdk.System) {
	p.measuring = true
	p.t0 = s.Now()
	p.c = counts{}
	clear(p.classPre)
	clear(p.classDone)
}

// tick notes the end of the measurement window: the engine closes it at an
// arrival and calls the policy at that instant with Measuring() false (or,
// if the run stops there, calls Counters at that instant).
func (p *KillSmart) tick(s *sdk.System) {
	if p.measuring && !s.Measuring() {
		p.measuring = false
		p.t1 = s.Now()
	}
}

// Arrive queues j and decides.
func (p *KillSmart) Arrive(s *sdk.System, j *sdk.Job) {
	p.tick(s)
	p.q.Push(j)
	p.step(s)
}

// Complete accounts for j's departure and decides.
func (p *KillSmart) Complete(s *sdk.System, j *sdk.Job) {
	p.tick(s)
	if j.Tag&tagNonPre != 0 {
		p.nonPre--
	}
	if s.Measuring() {
		p.c.departures++
		c := j.Class()
		p.classDone[c]++
		if p.small[c] {
			p.c.smallDepartures++
		}
	}
	p.step(s)
}

// cycleDone reports that the current cycle has ended: K−1 kills, or (one-or-
// all) K big jobs started. While it holds, a restart is pending.
func (p *KillSmart) cycleDone() bool {
	return p.kills >= p.K-1 || (p.mode == OneOrAll && p.bigs >= p.K)
}

// step is one decision (steps 1–3 of the type's doc).
func (p *KillSmart) step(s *sdk.System) {
	if !p.cycleDone() {
		p.fill(s, false)
	}
	if !p.cycleDone() && p.nonPre == 0 && s.Busy() <= p.nu {
		if h := p.q.Front(); h != nil && h.Need() > s.Free() && h.Need() > s.Busy() {
			p.kill(s)
			p.fill(s, false)
		}
	}
	if p.cycleDone() || (p.boxNeed > 0 && s.Busy() == 0 && p.q.Len() == 0) {
		if s.Free() >= p.boxNeed {
			p.restart(s)
		}
	}
}

// fill starts waiting jobs FCFS while the head of the line fits; restart
// marks them non-preemptable.
func (p *KillSmart) fill(s *sdk.System, restart bool) {
	for {
		j := p.q.Front()
		if j == nil || j.Need() > s.Free() {
			return
		}
		p.q.Pop()
		s.Start(j)
		j.Key = s.Now() // first start: extra delay and wasted work are measured from it
		if restart {
			j.Tag |= tagNonPre
			p.nonPre++
		}
		if p.big[j.Class()] {
			p.bigs++
		}
	}
}

// kill preempts every job in service into the box.
func (p *KillSmart) kill(s *sdk.System) {
	p.scratch = append(p.scratch[:0], s.Running()...)
	now, m := s.Now(), s.Measuring()
	for _, j := range p.scratch {
		if j.Tag != 0 {
			panic(fmt.Sprintf("%s: job %d would be killed twice or while non-preemptable (tag %d)", p.name(), j.ID(), j.Tag))
		}
		s.Preempt(j)
		j.Tag = tagKilled
		p.box = append(p.box, j)
		p.boxNeed += j.Need()
		if m {
			// The engine's own formula and order, so the sums agree exactly.
			p.c.wasted += float64(j.Need()) * (now - j.Key)
			p.c.preempted++
			p.classPre[j.Class()]++
		}
	}
	clear(p.scratch)
	p.kills++
	if m {
		p.c.kills++
	}
}

// restart starts every boxed job, then waiting jobs FCFS, all
// non-preemptable, and begins a new cycle.
func (p *KillSmart) restart(s *sdk.System) {
	if len(p.box) > 0 {
		now, m := s.Now(), s.Measuring()
		if m {
			p.c.restarts++
			if !p.cycleDone() {
				p.c.idleRestarts++
			}
		}
		for i, j := range p.box {
			s.Start(j)
			j.Tag |= tagNonPre
			p.nonPre++
			if m {
				p.c.restarted++
				p.c.extraDelay += now - j.Key
			}
			p.box[i] = nil
		}
		p.box = p.box[:0]
		p.boxNeed = 0
	}
	p.kills, p.bigs = 0, 0
	p.fill(s, true)
}

// Counters reports the window's counters (see the type's doc).
// Cycles counts the window's kills, each starting a kill cycle
// (sdk.CycleReporter).
func (p *KillSmart) Cycles() (string, int64) { return "kills", p.c.kills }

// DescribeCounters labels the counters in K's terms (sdk.CounterDescriber);
// preempted_fraction also describes its per-class form.
func (p *KillSmart) DescribeCounters() []sdk.CounterInfo {
	return []sdk.CounterInfo{
		{Name: "kills", Label: "kill operations", Kind: sdk.KindCount},
		{Name: "preemptions", Label: "jobs killed", Kind: sdk.KindCount},
		{Name: "jobs_per_kill", Label: "jobs killed per kill"},
		{Name: "preempted_fraction", Label: "jobs preempted", Kind: sdk.KindFraction, Doc: "preemptions over departures"},
		{Name: "restarts", Label: "restarts of the box", Kind: sdk.KindCount, Doc: "restarts of a non-empty box"},
		{Name: "idle_restarts", Label: "restarts on an idle system", Kind: sdk.KindCount},
		{Name: "restarted_jobs", Label: "jobs restarted", Kind: sdk.KindCount},
		{Name: "wasted_work", Label: "work lost to kills", Unit: "server-time", Doc: "need times service discarded by kills"},
		{Name: "wasted_power", Label: "wasted power W", Unit: "servers", Doc: "work discarded by kills per unit time (K §4.4)"},
		{Name: "extra_delay_preempted", Label: "delay per preempted job D_Jp", Unit: "time", Kind: sdk.KindTime,
			Doc: "mean extra delay of a preempted job (K Lemma 4.7)"},
		{Name: "extra_delay_per_job", Label: "extra delay per job D_J", Unit: "time", Kind: sdk.KindTime,
			Doc: "extra delay over all jobs (multi-class)"},
		{Name: "extra_delay_per_small_job", Label: "delay per small job D_Js", Unit: "time", Kind: sdk.KindTime,
			Doc: "extra delay over all small jobs (K Lemma 4.6)"},
	}
}

func (p *KillSmart) Counters() []sdk.Counter {
	t1 := p.t1
	if p.measuring && p.sys != nil {
		t1 = p.sys.Now()
	}
	c := p.c
	ratio := func(a, b float64) float64 {
		if b == 0 {
			return 0
		}
		return a / b
	}
	delayName := "extra_delay_per_job"
	if p.mode == OneOrAll {
		delayName = "extra_delay_per_small_job"
	}
	out := []sdk.Counter{
		{Name: "kills", Value: float64(c.kills)},
		{Name: "preemptions", Value: float64(c.preempted)},
		{Name: "jobs_per_kill", Value: ratio(float64(c.preempted), float64(c.kills))},
		{Name: "preempted_fraction", Value: ratio(float64(c.preempted), float64(c.departures))},
		{Name: "restarts", Value: float64(c.restarts)},
		{Name: "idle_restarts", Value: float64(c.idleRestarts)},
		{Name: "restarted_jobs", Value: float64(c.restarted)},
		{Name: "wasted_work", Value: c.wasted},
		{Name: "wasted_power", Value: ratio(c.wasted, t1-p.t0)},
		{Name: "extra_delay_preempted", Value: ratio(c.extraDelay, float64(c.restarted))},
		{Name: delayName, Value: ratio(c.extraDelay, float64(c.smallDepartures))},
	}
	for i, n := range p.names {
		out = append(out, sdk.Counter{Name: "preempted_fraction/" + n, Value: ratio(float64(p.classPre[i]), float64(p.classDone[i]))})
	}
	return out
}
