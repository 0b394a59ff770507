// Package srpt holds the size-based heuristics GreedySRPT and FirstFit-SRPT
// (ServerFilling-SRPT paper, S §6; Balanced Splitting paper, B §2) and the
// lower-bound reference SRPT-1, SRPT on the resource-pooled single server
// (S §3.1, §4.1, §6).
//
// Sizes are as in S §3.1: a job of server need n and duration d has size
// n·d/k, the area of its rectangle as a fraction of the whole system, and its
// remaining size is n·(remaining duration)/k.
package srpt

import (
	"math"
	"slices"

	"github.com/msjfarm/msjfarm/sdk"
)

// Policies lists the policies of this family.
var Policies = []sdk.Spec{
	{
		Name: "greedy-srpt",
		Doc: "GreedySRPT (S §6): preemptive-resume, size-aware; jobs in increasing remaining size " +
			"n·(remaining duration)/k (order=duration: remaining duration) are served while they fit, " +
			"stopping at the first that does not.",
		New: func() sdk.Policy { return &GreedySRPT{} },
	},
	{
		Name: "firstfit-srpt",
		Doc: "FirstFit-SRPT (S §6, B §2; \"Smallest Area First\"): as GreedySRPT, but a job that does not " +
			"fit is skipped and the scan continues.",
		New: func() sdk.Policy { return &FirstFitSRPT{} },
	},
}

// References lists this family's reference models, SRPT-1 and Gittins-1:
// not policies of the k-server system but the single-server models that
// size-aware and size-blind policies are compared against (S §3.1, §5.1),
// served beside the policies under their own names, on the same job
// sequence.
var References = []sdk.Reference{{
	Name: "srpt-1",
	Doc:  "SRPT-1 (S §3.1, §6): SRPT on the resource-pooled single server (job size n·d/k at rate 1), the lower bound, on the same job sequence.",
	Run:  RunSRPT1,
}, {
	Name: "gittins-1",
	Doc:  "Gittins-1 (S §5.1): the size-blind Gittins policy on the resource-pooled single server (job size n·d/k at rate 1), ranked by each class's size distribution and attained service, on the same job sequence; the reference for ServerFilling-Gittins.",
	Run:  RunGittins1,
}}

// Values of the order parameter.
const (
	// OrderSize orders by remaining size n·(remaining duration)/k (S §3.1,
	// §6): the default.
	OrderSize = "size"
	// OrderDuration orders by remaining duration alone, a reading of B §2's
	// "least remaining processing time, regardless of their server needs".
	OrderDuration = "duration"
)

// base is what both heuristics share: the order, the sorted snapshot of the
// running jobs and the scratch lists of a re-scheduling pass.
type base struct {
	k          int
	byDuration bool
	rs         []*sdk.Job // running jobs in SRPT order (scratch)
	toStart    []*sdk.Job
	toPreempt  []*sdk.Job
}

// Params is the schema: order.
func (b *base) Params() []sdk.Param {
	return []sdk.Param{{
		Name: "order", Type: sdk.String, Default: OrderSize, Enum: []string{OrderSize, OrderDuration},
		Doc: "what \"remaining size\" means: size = need × remaining duration / k (S §3.1, §6), " +
			"or duration = remaining duration alone (B §2's wording for First-Fit SRPT)",
	}}
}

// Configure sets the order.
func (b *base) Configure(v sdk.Values) error {
	b.byDuration = v.String("order") == OrderDuration
	return nil
}

// key is j's remaining size now: need × remaining duration / k (S §3.1), or
// its remaining duration under order=duration.
func (b *base) key(s *sdk.System, j *sdk.Job) float64 {
	if b.byDuration {
		return s.Remaining(j)
	}
	return float64(j.Need()) * s.Remaining(j) / float64(s.Servers())
}

// SizeAware: the policies order jobs by remaining size.
func (b *base) SizeAware() bool { return true }

// Preemption: preempted jobs keep their progress.
func (b *base) Preemption() sdk.Preemption { return sdk.PreemptResume }

// running returns the running jobs in SRPT order, with their current
// remaining sizes in Key.
func (b *base) running(s *sdk.System) []*sdk.Job {
	b.rs = append(b.rs[:0], s.Running()...)
	for _, j := range b.rs {
		j.Key = b.key(s, j)
	}
	slices.SortFunc(b.rs, func(x, y *sdk.Job) int {
		if less(x, y) {
			return -1
		}
		return 1 // keys tie only with distinct IDs, never equal
	})
	return b.rs
}

// GreedySRPT (S §6): "Order jobs in increasing order of remaining size. As
// long as sufficient servers are available, place jobs into service. When a
// job has higher server need than the remaining number of servers available,
// stop." Preemptive-resume and size-aware.
//
// Choices: remaining size is n·(remaining duration)/k, S's definition
// (S §3.1), unless the order parameter is "duration" (remaining duration
// alone); ties go to the earlier arrival; the schedule is recomputed at
// every arrival and departure. Between events it cannot change: a running
// job's remaining size only shrinks while a waiting job's stays put, so the
// served jobs, which form a prefix of the order, remain one.
//
// Stability: S §6 reports GreedySRPT and FirstFitSRPT unstable for every
// ρ >= 0.85 on the powers-of-two system (k = 8, needs uniform on
// {1, 2, 4, 8}, exponential durations). Ordering by size systematically
// postpones wide jobs (a need-8 job is 8 times the size of a need-1 job of
// the same duration), and in 2·10^6-arrival runs GreedySRPT is already
// unstable at ρ = 0.65 (utilisation saturating near 0.62), FirstFitSRPT at
// ρ = 0.70 (near 0.68); ordering by duration moves these to 0.75 and 0.80.
//
// Cost. Because the served jobs are a prefix, a departure only starts jobs
// from the top of a heap of waiting jobs keyed by remaining size (O(log n)
// each), and an arrival that comes after the first waiting job, or that
// fits in the idle servers, is O(log n). Only an arrival that is smaller
// than every waiting job and does not fit re-sorts the running jobs
// (O(r log r), r <= k) to find which of them it displaces.
type GreedySRPT struct {
	base
	wait jobHeap
}

// Init resets the state.
func (p *GreedySRPT) Init(s *sdk.System) error {
	p.k = s.Servers()
	p.wait.reset()
	return nil
}

// Arrive places j in the order and re-schedules where it can matter.
func (p *GreedySRPT) Arrive(s *sdk.System, j *sdk.Job) {
	j.Key = p.key(s, j)
	if p.wait.len() > 0 && less(p.wait.top(), j) {
		// The first waiting job does not fit, so greedy stops before j.
		p.wait.push(j)
		return
	}
	if j.Need() <= s.Free() {
		// j joins the served prefix; the first waiting job still does not
		// fit, in fewer idle servers.
		s.Start(j)
		return
	}
	p.wait.push(j)
	p.reschedule(s)
}

// Complete starts waiting jobs, smallest first, while they fit.
func (p *GreedySRPT) Complete(s *sdk.System, _ *sdk.Job) {
	for p.wait.len() > 0 && p.wait.top().Need() <= s.Free() {
		s.Start(p.wait.pop())
	}
}

// reschedule walks the running and waiting jobs in SRPT order, serving them
// while they fit, and preempts the running jobs past the stopping point.
func (p *GreedySRPT) reschedule(s *sdk.System) {
	rs := p.running(s)
	p.toStart = p.toStart[:0]
	free, i := p.k, 0
	for {
		var next *sdk.Job
		fromRun := false
		switch {
		case i < len(rs) && (p.wait.len() == 0 || less(rs[i], p.wait.top())):
			next, fromRun = rs[i], true
		case p.wait.len() > 0:
			next = p.wait.top()
		}
		if next == nil || next.Need() > free {
			break
		}
		free -= next.Need()
		if fromRun {
			i++
		} else {
			p.toStart = append(p.toStart, p.wait.pop())
		}
	}
	for _, j := range rs[i:] {
		s.Preempt(j)
		j.Key = p.key(s, j)
		p.wait.push(j)
	}
	for _, j := range p.toStart {
		s.Start(j)
	}
	clear(p.toStart)
	clear(rs)
}

// FirstFitSRPT (S §6, B §2; "Smallest Area First"): "Order jobs in
// increasing order of remaining size. As long as sufficient servers are
// available, place jobs into service. If a job has higher server need than
// the remaining number of servers available, skip that job. Continue through
// the list of jobs, placing jobs into service if sufficient servers are
// available, until all servers are full, or all jobs are exhausted."
// Preemptive-resume and size-aware.
//
// Choices: as GreedySRPT (remaining size n·(remaining duration)/k, or
// remaining duration with order=duration, which is one reading of B §2's
// "least remaining processing time, regardless of their server needs"; ties
// to the earlier arrival; recomputed at every arrival and departure; between
// events the first-fit schedule cannot change, since served jobs only move
// ahead of waiting ones; TestNaiveEquivalence checks it).
//
// Cost. Waiting jobs sit in one heap per server need, keyed by remaining
// size: during the first-fit scan with c servers left, the next waiting
// candidate is the smallest head among needs <= c, and a need once too large
// stays too large, so the scan touches only the jobs it starts plus
// O(#needs) heads per start, after sorting the running jobs (O(r log r),
// r <= k). An arrival that fits in the idle servers just starts (the rest of
// the schedule is unchanged); one that does not is checked against the
// servers left at its place in the order (O(r)) and waits if it does not fit
// there, otherwise the scan re-runs. A departure re-runs the scan only when
// some waiting job may fit at its place (see Complete), which the servers
// freed since the last scan bound.
type FirstFitSRPT struct {
	base
	needs    []int     // distinct needs, ascending
	groupOf  []int     // class → index in needs
	wait     []jobHeap // waiting jobs of each need
	nWait    int
	dropFree []int // per need: servers left when the scan passed the need
	// Departure filter: freed counts the servers released by departures
	// since the last scan, and no waiting job can fit at its place before
	// freed reaches minSlack (see Complete).
	freed, minSlack int
}

// Init resets the state.
func (p *FirstFitSRPT) Init(s *sdk.System) error {
	p.k = s.Servers()
	p.needs = p.needs[:0]
	for _, c := range s.Classes() {
		p.needs = append(p.needs, c.Need)
	}
	slices.Sort(p.needs)
	p.needs = slices.Compact(p.needs)
	p.groupOf = p.groupOf[:0]
	for _, c := range s.Classes() {
		g, _ := slices.BinarySearch(p.needs, c.Need)
		p.groupOf = append(p.groupOf, g)
	}
	if len(p.wait) != len(p.needs) {
		p.wait = make([]jobHeap, len(p.needs))
	}
	for i := range p.wait {
		p.wait[i].reset()
	}
	p.nWait = 0
	p.dropFree = slices.Grow(p.dropFree[:0], len(p.needs))[:len(p.needs)]
	p.freed, p.minSlack = 0, math.MaxInt
	return nil
}

// Arrive starts j if it fits, or re-schedules if j fits at its place in the
// order (displacing larger running jobs).
func (p *FirstFitSRPT) Arrive(s *sdk.System, j *sdk.Job) {
	j.Key = p.key(s, j)
	if j.Need() <= s.Free() {
		s.Start(j)
		return
	}
	// Servers left for j in the scan: k minus the running jobs before it
	// (j arrived last, so ties in size put them first). Waiting jobs before
	// j were skipped and do not count.
	left := p.k
	for _, r := range s.Running() {
		if p.key(s, r) <= j.Key {
			left -= r.Need()
		}
	}
	p.push(j)
	if j.Need() <= left {
		p.reschedule(s)
		return
	}
	p.minSlack = min(p.minSlack, j.Need()-left+p.freed)
}

// Complete re-runs the scan if jobs are waiting and one of them may now fit
// at its place in the order.
//
// The filter: let cap(W) be the servers left for waiting job W at its place
// in the scan (k minus the needs of the running jobs ahead of it); W waits
// because need(W) > cap(W). Until the next scan, cap(W) can only fall —
// running jobs shrink past W, jobs started on arrival take servers — except
// at departures, which raise it by at most the departing job's need. So
// with cap(W) known (or bounded above) at some point, cap(W) is at most that
// value plus the servers freed by departures since, and the scan can be
// skipped while that stays below need(W) for every W. minSlack keeps
// min_W need(W) − cap(W) + freed-at-that-point.
func (p *FirstFitSRPT) Complete(s *sdk.System, j *sdk.Job) {
	if p.nWait == 0 {
		return
	}
	p.freed += j.Need()
	if p.freed < p.minSlack {
		return
	}
	p.reschedule(s)
}

func (p *FirstFitSRPT) push(j *sdk.Job) {
	p.wait[p.groupOf[j.Class()]].push(j)
	p.nWait++
}

// head returns the need group whose first waiting job comes first in the
// order among needs <= free, or -1.
func (p *FirstFitSRPT) head(free int) int {
	best := -1
	for g, n := range p.needs {
		if n > free {
			break
		}
		if p.wait[g].len() > 0 && (best < 0 || less(p.wait[g].top(), p.wait[best].top())) {
			best = g
		}
	}
	return best
}

// reschedule is the first-fit scan over running and waiting jobs in SRPT
// order.
func (p *FirstFitSRPT) reschedule(s *sdk.System) {
	rs := p.running(s)
	p.toStart, p.toPreempt = p.toStart[:0], p.toPreempt[:0]
	free, i := p.k, 0
	eligible := len(p.needs) - 1 // needs[0..eligible] <= free
	drop := func() {             // record the needs the scan has just passed
		for eligible >= 0 && p.needs[eligible] > free {
			p.dropFree[eligible] = free
			eligible--
		}
	}
	best := p.head(free)
	for free > 0 {
		if i < len(rs) && (best < 0 || less(rs[i], p.wait[best].top())) {
			r := rs[i]
			i++
			if r.Need() > free {
				p.toPreempt = append(p.toPreempt, r)
				continue
			}
			free -= r.Need()
			drop()
			if best >= 0 && p.needs[best] > free {
				best = p.head(free)
			}
			continue
		}
		if best < 0 {
			break
		}
		j := p.wait[best].pop()
		p.nWait--
		p.toStart = append(p.toStart, j)
		free -= j.Need()
		drop()
		best = p.head(free)
	}
	p.toPreempt = append(p.toPreempt, rs[i:]...)
	for _, j := range p.toPreempt {
		s.Preempt(j)
		j.Key = p.key(s, j)
		p.push(j)
	}
	// Every job still waiting is past the point where the scan passed its
	// need (needs it did not pass have no waiting job left), so it has at
	// most dropFree servers left at its place.
	p.freed, p.minSlack = 0, math.MaxInt
	for g := eligible + 1; g < len(p.needs); g++ {
		if p.wait[g].len() > 0 {
			p.minSlack = min(p.minSlack, p.needs[g]-p.dropFree[g])
		}
	}
	for _, j := range p.toStart {
		s.Start(j)
	}
	clear(p.toStart)
	clear(p.toPreempt)
	clear(rs)
}
