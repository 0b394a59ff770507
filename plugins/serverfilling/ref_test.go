package serverfilling

// This file is a frozen copy of the ServerFilling family as it was before the
// O(C · log n) rework (issue #18): refPolicy is today's decisions, kept as
// the reference the equivalence tests compare the new implementation with,
// event by event. Do not edit it except to follow renames and changes of
// definition. One so far: engine 0.5.0's total order of the SRPT and
// Gittins orderings (srptfastorder.go: keys of running jobs from fin, ties
// by rate, running first, fin, arrival; crossing timers at refCrossAt,
// with no tolerance), written out again here (refKeyAt, less, refSetRun,
// refStopRun, refCrossAt) so that the production code is checked against
// an independent copy; the crossing timer still takes every served job of
// M as a candidate, which checks armCrossing's reduction to the last
// running job of each bucket.

import (
	"fmt"
	"math"
	"slices"

	"github.com/msjfarm/msjfarm/sdk"
)

// refPolicy is one member of the family (see the package comment).
//
// SRPT orderings: what is kept ordered, and why it is correct. Remaining
// size r = need × remaining duration / k falls at rate need/k while a job
// runs and is frozen while it waits. So running jobs only ever move forward
// past waiting ones, but running jobs of different needs move at different
// rates and can swap (a wide job with a short remaining duration overtakes
// a narrow one): the order by remaining size among running jobs is NOT
// preserved, only the order among running jobs of one need. The jobs outside
// M are all waiting (every running job is in M), their keys are frozen, and
// every job of M is ahead of them at a decision and only moves forward
// after it; hence the policy keeps exactly those in a static heap on
// (remaining size, arrival index), and at each decision recomputes the keys
// of M's running jobs (need/k × (remaining duration at the last start −
// service since), the engine's own arithmetic for System.Remaining),
// re-sorts M and merges it with the heap.
//
// Crossings (parameter crossings, default on): S's policy is defined at
// every instant, so a swap inside M between events can change what it
// serves. With crossings on the policy is that continuous-time policy
// exactly: after each decision it computes the first instant at which the
// choice can change and asks the engine for a timer then.
//   - ServerFilling: the choice depends only on M as a set (within one need
//     the served jobs are the first in the ordering, and running jobs of one
//     need move together, ahead of waiting ones). A job x of M can leave M
//     only if the jobs overtaking it carry need ≥ k − (need ahead of x);
//     since the jobs behind x in M sum to Σ(M) − (need ahead of x) − need_x,
//     and everything in M but the boundary job b (the last, whose need takes
//     the total to ≥ k) sums to less than k, x leaves only if b overtakes it
//     and need_x ≤ Σ(M) − k. Leaving changes the choice only if x is served,
//     or is the first job that did not fit while servers are idle. The timer
//     is the earliest such overtaking, (r_b − r_x)/(rate_b − rate_x) — none
//     when Σ(M) = k, the usual case in the power-of-two setting.
//   - DivisorFilling: M, the k smallest, cannot change between events (the
//     rest are waiting and behind, M's keys only fall), and by the same
//     argument neither can the subproblems of Cases 1 and 2 and of Case 3's
//     Mp branch, nor which jobs of one need they serve. Only Case 3's
//     extraction takes "the k/p smallest" across needs of a set that mixes
//     served and unserved jobs, so only after an extraction is a timer armed,
//     at the earliest crossing of adjacent jobs of M.
//
// TestCrossingTimersSuffice checks both against a variant that decides at
// every crossing of any two jobs of M. Crossings are Zeno-free: a job a
// crossing preempts waits with a frozen key and only running jobs (which
// move forward) can pass it. At a tie within 1e-13 × max(1, now) (far above
// the keys' rounding) the faster job is ordered first, which is the order
// just after the instant. With crossings off the policy decides at arrivals
// and completions only, keys exact at those instants.
//
// Gittins orderings take no crossing timers. A Gittins rank can rise with
// attained service (for a hyperexponential the rank is 1/hazard, rising for
// ever: the Gittins policy is then foreground–background, which shares
// servers between equally old jobs in infinitely fast alternation); whole
// server allocations cannot follow that, so the Gittins variants re-evaluate
// every rank exactly at every arrival and completion and hold the schedule
// in between. Ranks are recomputed only for running jobs of classes whose
// rank is not constant (a waiting job's rank is frozen, and an exponential
// class's rank never changes). For exponential classes this is exact; with
// deterministic durations it equals SRPT with crossings off (B §2's remark;
// TestGittinsDeterministicIsSRPT).
//
// DivisorFilling and backfill (parameter backfill, default on). As defined
// in S App. C.1 the recursion may serve nothing while servers are idle when
// fewer than k jobs are present (k = 12 and one job of need 1: not Case 1
// since 1 < 12/6, and Case 2 recurses on the empty set of even-need jobs),
// and jobs can be stranded until the next arrival. With backfill on, once
// the recursion has chosen, the idle servers are filled first-fit from M in
// ordering order. This keeps both of S's guarantees: the served jobs are
// still a subset of M, and with at least k jobs present the recursion
// already fills all k servers (Theorem C.1), so backfill never acts then.
// backfill=false is the literal definition.
//
// Shortcuts (exact; TestShortcutsExact compares traces with and without):
// an arrival whose key is behind every job of a full M (keys that cannot
// rise) changes nothing and costs one heap push; when every job is in M and
// served, an arrival that still fits just starts, and a completion changes
// nothing.
type refPolicy struct {
	ord       Order
	proc      Procedure
	crossings bool
	backfill  bool

	k    int
	invK float64

	slots []refSlot
	free  []int32
	m     []int32 // the candidate set M, sorted by current key at the last decision
	next  []int32 // scratch for the new M
	sumM  int     // total need of M
	// maxKey is the key of M's last job at the last decision; under orderings
	// whose keys never rise it bounds every key of M since.
	maxKey   float64
	monotone bool
	rest     refRestQueue

	cls      []refClassInfo
	nBuckets int
	bneed    []int32 // need of each bucket
	counts   []int32
	sorted   []int32
	starts   []int32 // scratch: jobs to start

	lpf   []int32   // largest prime factor of 0..k
	dfBuf [][]int32 // per recursion depth: the subset recursed on
	dfSub [][]int32 // per recursion depth: Case 3's subproblem

	timerAt   float64 // earliest pending timer (Inf if none)
	sameTime  int     // timers fired at the same instant in a row
	lastTimer float64

	timers int64 // crossing timers that fired (counter)

	exhaustive bool // tests: no arrival/completion shortcuts, a full decision every time
	allPairs   bool // tests: a crossing timer for every approaching pair of M

	dfExtracted bool  // the last DivisorFilling choice used a Case 3 extraction
	stopper     int32 // the last ServerFilling choice: first job that did not fit (-1: none)
	idle        int   // servers it left idle
}

type refClassInfo struct {
	need   int32
	bucket int32   // index of the class's need in descending order of distinct needs
	scale  float64 // need/k: size per unit of duration
	rank   *rankFn // Gittins only
	rank0  float64 // key of a new job (Gittins)
}

// refSlot is the policy's record of a job in the system (Job.Idx indexes it).
type refSlot struct {
	j      *sdk.Job
	id     int64
	key    float64 // current key (frozen while waiting)
	age    float64 // Gittins: attained service while waiting
	since  float64 // time of the last start
	rate   float64 // SRPT with crossings: need/k while running, else 0
	fin    float64 // while running: SRPT, the instant the key reaches 0; Gittins, the instant of age 0
	need   int32
	class  int32
	bucket int32 // the class's need bucket (needs in descending order)
	serve  bool  // scratch: chosen by the current decision
	dead   bool  // completed; released at the next decision
	moving bool  // running with a key that moves (SRPT; Gittins of a class whose rank is not constant)
}

// newRef returns a policy of the family. The SRPT variants start with
// crossings on; the DivisorFilling variants with backfill on.
func newRef(o Order, p Procedure) *refPolicy {
	return &refPolicy{ord: o, proc: p, crossings: o == SRPTOrder, backfill: true}
}

// Preemption declares preemptive-resume.
func (p *refPolicy) Preemption() sdk.Preemption { return sdk.PreemptResume }

// SizeAware is true for the SRPT orderings (they read remaining durations).
func (p *refPolicy) SizeAware() bool { return p.ord == SRPTOrder }

// Params: crossings for the SRPT orderings, backfill for DivisorFilling.
func (p *refPolicy) Params() []sdk.Param {
	var ps []sdk.Param
	if p.ord == SRPTOrder {
		ps = append(ps, sdk.Param{Name: "crossings", Type: sdk.Bool, Default: true,
			Doc: "also decide when remaining sizes cross in a way that changes the packing (exact continuous-time " +
				"policy); false: decide at arrivals and completions only"})
	}
	if p.proc == DivisorFilling {
		ps = append(ps, sdk.Param{Name: "backfill", Type: sdk.Bool, Default: true,
			Doc: "after the App. C recursion, fill idle servers first-fit from the k candidates " +
				"(false: the literal recursion, which can leave a lone job waiting)"})
	}
	return ps
}

// Configure applies resolved parameters.
func (p *refPolicy) Configure(v sdk.Values) error {
	if p.ord == SRPTOrder {
		p.crossings = v.Bool("crossings")
	}
	if p.proc == DivisorFilling {
		p.backfill = v.Bool("backfill")
	}
	return nil
}

// StartMeasuring restarts the counter at the end of the warm-up.
func (p *refPolicy) StartMeasuring(*sdk.System) { p.timers = 0 }

// Counters reports the crossing timers that fired in the measurement window
// (SRPT with crossings).
func (p *refPolicy) Counters() []sdk.Counter {
	if !p.kinetic() {
		return nil
	}
	return []sdk.Counter{{Name: "crossing_decisions", Value: float64(p.timers)}}
}

// Init checks the workload and resets all state.
func (p *refPolicy) Init(s *sdk.System) error {
	p.k = s.Servers()
	p.invK = 1 / float64(p.k)
	classes := s.Classes()
	p.cls = p.cls[:0]
	needs := map[int]bool{}
	for i, c := range classes {
		if p.proc == DivisorFilling && p.k%c.Need != 0 {
			return fmt.Errorf("divisorfilling: class %d need %d does not divide k = %d (S App. C needs the divisible setting)", i, c.Need, p.k)
		}
		needs[c.Need] = true
		ci := refClassInfo{need: int32(c.Need), scale: float64(c.Need) * p.invK}
		if p.ord == GittinsOrder {
			f, err := newRankFn(c.Service)
			if err != nil {
				return fmt.Errorf("class %d: %w", i, err)
			}
			ci.rank = f
			ci.rank0 = ci.scale * f.at(0)
		}
		p.cls = append(p.cls, ci)
	}
	// Buckets: distinct needs, largest first.
	p.nBuckets = 0
	for n := p.k; n >= 1; n-- {
		if !needs[n] {
			continue
		}
		for i := range p.cls {
			if int(p.cls[i].need) == n {
				p.cls[i].bucket = int32(p.nBuckets)
			}
		}
		p.nBuckets++
	}
	p.counts = make([]int32, p.nBuckets+1)
	p.bneed = make([]int32, p.nBuckets)
	for _, c := range p.cls {
		p.bneed[c.bucket] = c.need
	}
	p.monotone = true
	if p.ord == GittinsOrder {
		for _, c := range p.cls {
			p.monotone = p.monotone && c.rank.nonIncreasing
		}
	}
	if p.proc == DivisorFilling {
		p.lpf = refLargestPrimeFactors(p.k)
	}
	for i := range p.slots {
		p.slots[i] = refSlot{}
	}
	p.slots = p.slots[:0]
	p.free = p.free[:0]
	p.m = p.m[:0]
	p.next = p.next[:0]
	p.sumM = 0
	p.maxKey = math.Inf(-1)
	p.rest.reset(p.ord == ArrivalOrder)
	p.timerAt = math.Inf(1)
	p.sameTime, p.lastTimer = 0, math.Inf(-1)
	p.timers = 0
	return nil
}

func refLargestPrimeFactors(k int) []int32 {
	lpf := make([]int32, k+1)
	for i := 2; i <= k; i++ {
		if lpf[i] == 0 { // prime
			for j := i; j <= k; j += i {
				lpf[j] = int32(i) // later (larger) primes overwrite
			}
		}
	}
	if k >= 1 {
		lpf[1] = 1
	}
	return lpf
}

func (p *refPolicy) alloc(j *sdk.Job) int32 {
	var i int32
	if n := len(p.free); n > 0 {
		i = p.free[n-1]
		p.free = p.free[:n-1]
	} else {
		p.slots = append(p.slots, refSlot{})
		i = int32(len(p.slots) - 1)
	}
	c := &p.cls[j.Class()]
	p.slots[i] = refSlot{j: j, id: j.ID(), need: c.need, class: int32(j.Class()), bucket: c.bucket}
	j.Idx = int(i)
	return i
}

// full reports whether M has reached its stopping rule at the last decision.
func (p *refPolicy) full() bool {
	if p.proc == ServerFilling {
		return p.sumM >= p.k
	}
	return len(p.m) >= p.k
}

// Arrive records j and re-decides unless j lands behind a full M.
func (p *refPolicy) Arrive(s *sdk.System, j *sdk.Job) {
	i := p.alloc(j)
	sl := &p.slots[i]
	c := &p.cls[sl.class]
	switch p.ord {
	case ArrivalOrder:
		sl.key = float64(sl.id)
	case SRPTOrder:
		sl.key = c.scale * s.Size(j)
	case GittinsOrder:
		sl.key = c.rank0
	}
	if p.exhaustive {
		p.rest.push(p, i)
		p.decide(s)
		return
	}
	if p.allServed() && p.sumM+int(sl.need) <= p.k {
		// Every job is in M and the total need, j's included, fits: all are
		// served whatever the order, so j simply starts (M stays unsorted
		// until the next full decision, whose insertion sort places j).
		p.m = append(p.m, i)
		p.sumM += int(sl.need)
		p.maxKey = math.Max(p.maxKey, sl.key)
		p.start(s, sl, s.Now())
		return
	}
	p.rest.push(p, i)
	if p.full() && p.monotone && sl.key > p.maxKey {
		return // behind every job of M, whose keys have not risen: M unchanged
	}
	p.decide(s)
}

// allServed reports whether, at the last decision, every job in the system
// was in M and served (M is every job and its total need fits): then it
// stays so at a completion, and at an arrival that fits.
func (p *refPolicy) allServed() bool {
	return p.rest.len() == 0 && p.sumM <= p.k && (p.proc == ServerFilling || p.backfill)
}

// Complete drops j and re-decides.
func (p *refPolicy) Complete(s *sdk.System, j *sdk.Job) {
	i := int32(j.Idx)
	sl := &p.slots[i]
	if p.allServed() && !p.exhaustive { // still all served: nothing to decide
		p.sumM -= int(sl.need)
		k := slices.Index(p.m, i)
		p.m = slices.Delete(p.m, k, k+1)
		*sl = refSlot{}
		p.free = append(p.free, i)
		return
	}
	sl.dead = true
	sl.j = nil
	p.sumM -= int(sl.need) // a running job is always in M
	p.decide(s)
}

// Timer is a crossing instant (or a superseded one: deciding again is
// harmless).
func (p *refPolicy) Timer(s *sdk.System, _ int) {
	now := s.Now()
	if now >= p.timerAt {
		p.timerAt = math.Inf(1)
	}
	if now == p.lastTimer {
		p.sameTime++
	} else {
		p.sameTime, p.lastTimer = 0, now
	}
	p.timers++
	p.decide(s)
}

// kinetic reports whether the policy follows key crossings between events
// (SRPT ordering with crossings on).
func (p *refPolicy) kinetic() bool { return p.ord == SRPTOrder && p.crossings }

// refKeyAt is sl's key at t (0.5.0: a running job's from its fin).
func (p *refPolicy) refKeyAt(sl *refSlot, t float64) float64 {
	if !sl.moving {
		return sl.key
	}
	c := &p.cls[sl.class]
	if p.ord == SRPTOrder {
		return c.scale * math.Max(sl.fin-t, 0)
	}
	if p.ord == GittinsOrder && !c.rank.constant {
		return c.scale * c.rank.at(t-sl.fin)
	}
	return sl.key
}

// less orders slots a and b: key, then the faster first, then running
// first, then (both running) fin, then arrival (0.5.0).
func (p *refPolicy) less(a, b int32) bool {
	sa, sb := &p.slots[a], &p.slots[b]
	switch {
	case sa.key != sb.key:
		return sa.key < sb.key
	case sa.rate != sb.rate:
		return sa.rate > sb.rate
	case sa.moving != sb.moving:
		return sa.moving
	case sa.moving && sa.fin != sb.fin:
		return sa.fin < sb.fin
	}
	return sa.id < sb.id
}

// refCrossAt is the first instant from the straight-line estimate on at
// which b (faster) is ahead of y by the recomputed keys (0.5.0).
func (p *refPolicy) refCrossAt(b, y *refSlot, now float64) float64 {
	ahead := func(t float64) bool { return p.refKeyAt(b, t) <= p.refKeyAt(y, t) }
	at := now + math.Max((p.refKeyAt(b, now)-p.refKeyAt(y, now))/(b.rate-y.rate), 0)
	for n := 0; !ahead(at); n++ {
		if y.moving && at >= y.fin {
			return b.fin
		}
		if n >= 256 {
			panic("refCrossAt: no crossing within 256 ulps of the estimate")
		}
		at = math.Nextafter(at, math.Inf(1))
	}
	return at
}

// decide recomputes M and the served set, and applies the difference.
func (p *refPolicy) decide(s *sdk.System) {
	now := s.Now()

	// 1. Drop completed jobs; refresh the keys of running jobs.
	w := 0
	for _, i := range p.m {
		sl := &p.slots[i]
		if sl.dead {
			*sl = refSlot{}
			p.free = append(p.free, i)
			continue
		}
		if sl.j.Running() {
			sl.key = p.refKeyAt(sl, now)
		}
		p.m[w] = i
		w++
	}
	m := p.m[:w]

	// 2. Re-sort M (nearly sorted: insertion sort).
	for a := 1; a < len(m); a++ {
		x := m[a]
		b := a
		for b > 0 && p.less(x, m[b-1]) {
			m[b] = m[b-1]
			b--
		}
		m[b] = x
	}

	// 3. Merge M with the waiting jobs outside it up to the stopping rule,
	// counting M's jobs per need bucket.
	next := p.next[:0]
	cnt := p.counts
	clear(cnt)
	sum, a := 0, 0
	sf := p.proc == ServerFilling
	for sf && sum < p.k || !sf && len(next) < p.k {
		var pick int32
		if a < len(m) && (p.rest.len() == 0 || p.less(m[a], p.rest.top())) {
			pick = m[a]
			a++
		} else if p.rest.len() > 0 {
			pick = p.rest.pop(p)
		} else {
			break
		}
		next = append(next, pick)
		sl := &p.slots[pick]
		sum += int(sl.need)
		cnt[sl.bucket]++
	}
	evicted := m[a:]

	// 4. Choose; preempt what is no longer chosen (preemptions all come
	// before starts) and collect what must start.
	starts := p.starts[:0]
	for _, i := range evicted {
		sl := &p.slots[i]
		if sl.j.Running() {
			p.preempt(s, sl, now)
		}
		p.rest.push(p, i)
	}
	if sf {
		starts = p.serverFill(s, next, starts, now)
	} else {
		for _, i := range next {
			p.slots[i].serve = false
		}
		p.dfExtracted = false
		p.divFill(next, p.k, 1, 0)
		if p.backfill {
			p.fillFirstFit(next)
		}
		for _, i := range next {
			sl := &p.slots[i]
			switch run := sl.j.Running(); {
			case run && !sl.serve:
				p.preempt(s, sl, now)
			case !run && sl.serve:
				starts = append(starts, i)
			}
		}
	}

	// 5. Start.
	for _, i := range starts {
		p.start(s, &p.slots[i], now)
	}
	p.starts = starts[:0]
	p.next, p.m = m[:0], next
	p.sumM = sum
	if len(next) > 0 {
		p.maxKey = p.slots[next[len(next)-1]].key
	} else {
		p.maxKey = math.Inf(-1)
	}

	// 6. Crossing timer.
	if p.kinetic() {
		p.armCrossing(s, now)
	}
}

// start puts a waiting job into service.
func (p *refPolicy) start(s *sdk.System, sl *refSlot, now float64) {
	s.Start(sl.j)
	sl.since = now
	c := &p.cls[sl.class]
	switch {
	case p.ord == SRPTOrder:
		sl.moving = true
		fin := now + s.Remaining(sl.j)
		for c.scale*math.Max(fin-now, 0) > sl.key {
			fin = math.Nextafter(fin, math.Inf(-1))
		}
		sl.fin = fin
		if p.crossings {
			sl.rate = c.scale
		}
	case p.ord == GittinsOrder && !c.rank.constant:
		sl.moving = true
		fin := now - sl.age
		for now-fin < sl.age {
			fin = math.Nextafter(fin, math.Inf(-1))
		}
		sl.fin = fin
	}
}

// preempt takes a running job out of service. Its key is already its value
// at this instant, which stays frozen while it waits.
func (p *refPolicy) preempt(s *sdk.System, sl *refSlot, now float64) {
	s.Preempt(sl.j)
	if p.ord == GittinsOrder && sl.moving {
		sl.age = now - sl.fin
	}
	sl.rate = 0
	sl.moving = false
}

// armCrossing asks for a timer at the first instant the SRPT ordering can
// change the packing (see refPolicy).
func (p *refPolicy) armCrossing(s *sdk.System, now float64) {
	m := p.m
	t := math.Inf(1)
	if p.allPairs {
		for a := range m {
			for b := a + 1; b < len(m); b++ {
				x, y := &p.slots[m[a]], &p.slots[m[b]]
				if y.rate > x.rate {
					t = math.Min(t, p.refCrossAt(y, x, now))
				}
			}
		}
	} else if p.proc == ServerFilling {
		if p.sumM < p.k || len(m) == 0 {
			return // every job is in M: the packing cannot change before an event
		}
		b := &p.slots[m[len(m)-1]]
		if b.rate == 0 {
			return
		}
		slack := int32(p.sumM - p.k)
		if slack <= 0 {
			return // M is exactly full: no job of M can leave it (see refPolicy)
		}
		for _, i := range m[:len(m)-1] {
			y := &p.slots[i]
			if y.need <= slack && y.rate < b.rate && (y.serve || i == p.stopper && p.idle > 0) {
				t = math.Min(t, p.refCrossAt(b, y, now))
			}
		}
	} else {
		if !p.dfExtracted {
			return // the choice cannot change before an event (see refPolicy)
		}
		for a := 1; a < len(m); a++ {
			x, y := &p.slots[m[a-1]], &p.slots[m[a]]
			if y.rate > x.rate {
				t = math.Min(t, p.refCrossAt(y, x, now))
			}
		}
	}
	if math.IsInf(t, 1) {
		return
	}
	at := t
	if at == now && p.sameTime > 64 {
		return // safety net against a same-instant loop (not expected: see refPolicy)
	}
	if at < p.timerAt {
		s.SetTimer(at, 0)
		p.timerAt = at
	}
}

// serverFill is S §3.2's packing of M (list, in ordering order, with
// p.counts holding its jobs per need bucket): largest need first, ties by
// the ordering, until the next job does not fit. In that order the served
// jobs are whole buckets down to a cut bucket, of which the first
// floor(rem/need) in ordering order are served, so the cut is found from the
// counts and one pass over list marks, preempts and collects the starts.
func (p *refPolicy) serverFill(s *sdk.System, list, starts []int32, now float64) []int32 {
	rem := int32(p.k)
	cut, take := int32(p.nBuckets), int32(0) // buckets < cut whole, then take of cut
	for b, c := range p.counts[:p.nBuckets] {
		n := p.bneed[b]
		if c*n <= rem {
			rem -= c * n
			continue
		}
		cut, take = int32(b), rem/n
		rem -= take * n
		break
	}
	p.stopper, p.idle = -1, int(rem)
	for _, i := range list {
		sl := &p.slots[i]
		serve := sl.bucket < cut
		if sl.bucket == cut {
			if take > 0 {
				serve = true
				take--
			} else if take == 0 && p.stopper < 0 {
				p.stopper = i
			}
		}
		sl.serve = serve
		switch run := sl.j.Running(); {
		case run && !serve:
			p.preempt(s, sl, now)
		case !run && serve:
			starts = append(starts, i)
		}
	}
	return starts
}

// byNeedDesc returns list stably sorted by descending need (counting sort
// over the need buckets).
func (p *refPolicy) byNeedDesc(list []int32) []int32 {
	cnt := p.counts
	clear(cnt)
	for _, i := range list {
		cnt[p.cls[p.slots[i].class].bucket+1]++
	}
	for b := 1; b < len(cnt); b++ {
		cnt[b] += cnt[b-1]
	}
	if cap(p.sorted) < len(list) {
		p.sorted = make([]int32, len(list), 2*len(list))
	}
	out := p.sorted[:len(list)]
	for _, i := range list {
		b := p.cls[p.slots[i].class].bucket
		out[cnt[b]] = i
		cnt[b]++
	}
	return out
}

// fillFirstFit serves, in list order, every unserved job that fits in the
// servers the choice so far leaves idle.
func (p *refPolicy) fillFirstFit(list []int32) {
	rem := p.k
	for _, i := range list {
		if p.slots[i].serve {
			rem -= int(p.slots[i].need)
		}
	}
	for _, i := range list {
		sl := &p.slots[i]
		if rem == 0 {
			return
		}
		if !sl.serve && int(sl.need) <= rem {
			sl.serve = true
			rem -= int(sl.need)
		}
	}
}

// refRestQueue holds the waiting jobs outside M, whose keys are frozen: a FIFO
// under arrival order (a job never leaves M there, so arrivals come in key
// order and nothing is pushed back), a binary min-heap on (key, arrival
// index) otherwise. Nothing is ever removed from the middle.
type refRestQueue struct {
	fifo bool
	q    sdk.FIFO
	h    []int32
}

func (r *refRestQueue) reset(fifo bool) {
	r.fifo = fifo
	r.q.Reset()
	r.h = r.h[:0]
}

func (r *refRestQueue) len() int {
	if r.fifo {
		return r.q.Len()
	}
	return len(r.h)
}

func (r *refRestQueue) top() int32 {
	if r.fifo {
		return int32(r.q.Front().Idx)
	}
	return r.h[0]
}

func refHeapLess(p *refPolicy, a, b int32) bool {
	sa, sb := &p.slots[a], &p.slots[b]
	return sa.key < sb.key || sa.key == sb.key && sa.id < sb.id
}

func (r *refRestQueue) push(p *refPolicy, i int32) {
	if r.fifo {
		r.q.Push(p.slots[i].j)
		return
	}
	r.h = append(r.h, i)
	r.up(p, len(r.h)-1)
}

func (r *refRestQueue) pop(p *refPolicy) int32 {
	if r.fifo {
		return int32(r.q.Pop().Idx)
	}
	h := r.h
	top := h[0]
	n := len(h) - 1
	h[0] = h[n]
	r.h = h[:n]
	if n > 0 {
		r.down(p, 0)
	}
	return top
}

func (r *refRestQueue) up(p *refPolicy, i int) {
	h := r.h
	x := h[i]
	for i > 0 {
		parent := (i - 1) / 2
		if !refHeapLess(p, x, h[parent]) {
			break
		}
		h[i] = h[parent]
		i = parent
	}
	h[i] = x
}

func (r *refRestQueue) down(p *refPolicy, i int) {
	h := r.h
	n := len(h)
	x := h[i]
	for {
		c := 2*i + 1
		if c >= n {
			break
		}
		if c+1 < n && refHeapLess(p, h[c+1], h[c]) {
			c++
		}
		if !refHeapLess(p, h[c], x) {
			break
		}
		h[i] = h[c]
		i = c
	}
	h[i] = x
}

// divFill marks the jobs DivisorFilling serves (S App. C.1) among list
// (in ordering order) on kk servers, where a job of need n counts as need
// n/scale (scale servers combined into one).
//
// S App. C.1, on the subproblem (list, kk):
//
//	M = the first kk jobs of list (all if fewer).
//	Case 1, M has at least kk/6 jobs of need 1: serve M in descending need
//	  (ties by the ordering) while the next one fits (stop at the first that
//	  does not, i* of App. C.2), then M's other need-1 jobs in order while
//	  servers remain.
//	Case 2, kk = 2^a·3^b: M2 = even needs, M3 = odd needs > 1; recurse on M2
//	  with kk/2 and needs halved if 2|M2| ≥ 3|M3| (tie: M2), else on M3 with
//	  kk/3 and needs divided by 3.
//	Case 3, largest prime factor p ≥ 5 of kk: Mp = needs divisible by p; if
//	  p|Mp| ≥ kk recurse on Mp with kk/p and needs divided by p. Otherwise
//	  Mr = needs not divisible by p and > 1 (they divide kk/p); p times, or
//	  until Mr is empty: run the procedure on (Mr, kk/p), needs unchanged —
//	  its own M is Mr's first kk/p jobs — and remove what it serves from Mr.
//
// Choices where App. C.1 is silent: an empty set recursed on serves nothing
// (only when M has fewer than kk/6 need-1 jobs and no other: the Case 2
// tie, or Case 3 with nothing to extract); the jobs a Case 3 subproblem
// does not serve stay in Mr for the next extraction (only served jobs are
// "extracted").
func (p *refPolicy) divFill(list []int32, kk, scale, depth int) {
	if len(list) > kk {
		list = list[:kk]
	}
	if len(list) == 0 || kk < 1 {
		return
	}
	ones := 0
	for _, i := range list {
		if int(p.slots[i].need) == scale {
			ones++
		}
	}
	if 6*ones >= kk {
		p.dfCase1(list, kk, scale)
		return
	}
	buf := p.depthBuf(&p.dfBuf, depth, len(list))
	lp := int(p.lpf[kk])
	if lp <= 3 { // Case 2 (kk = 1 is always Case 1 when M is non-empty)
		n2, n3 := 0, 0
		for _, i := range list {
			n := int(p.slots[i].need) / scale
			if n%2 == 0 {
				n2++
			} else if n > 1 {
				n3++
			}
		}
		if 2*n2 >= 3*n3 {
			for _, i := range list {
				if (int(p.slots[i].need)/scale)%2 == 0 {
					buf = append(buf, i)
				}
			}
			p.dfBuf[depth] = buf
			if len(buf) > 0 {
				p.divFill(buf, kk/2, scale*2, depth+1)
			}
			return
		}
		for _, i := range list {
			if n := int(p.slots[i].need) / scale; n%2 == 1 && n > 1 {
				buf = append(buf, i)
			}
		}
		p.dfBuf[depth] = buf
		p.divFill(buf, kk/3, scale*3, depth+1)
		return
	}
	// Case 3.
	np := 0
	for _, i := range list {
		if (int(p.slots[i].need)/scale)%lp == 0 {
			np++
		}
	}
	if lp*np >= kk {
		for _, i := range list {
			if (int(p.slots[i].need)/scale)%lp == 0 {
				buf = append(buf, i)
			}
		}
		p.dfBuf[depth] = buf
		p.divFill(buf, kk/lp, scale*lp, depth+1)
		return
	}
	for _, i := range list {
		if n := int(p.slots[i].need) / scale; n%lp != 0 && n > 1 {
			buf = append(buf, i)
		}
	}
	p.dfBuf[depth] = buf
	p.dfExtracted = p.dfExtracted || len(buf) > 0
	sub := kk / lp
	for rep := 0; rep < lp && len(buf) > 0; rep++ {
		sb := p.depthBuf(&p.dfSub, depth, sub)
		sb = append(sb, buf[:min(len(buf), sub)]...)
		p.dfSub[depth] = sb
		p.divFill(sb, sub, scale, depth+1)
		w := 0
		for _, i := range buf {
			if !p.slots[i].serve {
				buf[w] = i
				w++
			}
		}
		buf = buf[:w]
	}
}

// dfCase1 is App. C.1.1 on (list, kk, scale); list has at most kk jobs.
func (p *refPolicy) dfCase1(list []int32, kk, scale int) {
	order := p.byNeedDesc(list)
	rem := kk
	for _, i := range order {
		n := int(p.slots[i].need) / scale
		if n > rem {
			break
		}
		p.slots[i].serve = true
		rem -= n
	}
	for _, i := range list {
		if rem == 0 {
			return
		}
		if sl := &p.slots[i]; !sl.serve && int(sl.need) == scale {
			sl.serve = true
			rem--
		}
	}
}

// depthBuf returns the empty scratch slice of the given depth, with room for
// n entries (allocation-free once the buffers have grown).
func (p *refPolicy) depthBuf(bufs *[][]int32, depth, n int) []int32 {
	for len(*bufs) <= depth {
		*bufs = append(*bufs, nil)
	}
	b := (*bufs)[depth]
	if cap(b) < n {
		b = make([]int32, 0, max(n, 2*cap(b)))
	}
	return b[:0]
}
