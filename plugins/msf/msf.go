// Package msf holds the need-priority policies: the non-preemptive Most
// Servers First (Quickswap paper, Q §4.1) and Least Servers First (Balanced
// Splitting, B §2), and the preemptive Most Servers First that B §2 defines
// (PreemptiveMSF, "msf-preemptive").
//
// Both order waiting jobs by server need only. Q §3.1 identifies a job class
// with its server need ("class-i jobs all need i servers"), so workload
// classes that share a need are one priority level here, served first come
// first served among themselves; within a class, service is FIFO.
package msf

import (
	"math/bits"

	"github.com/msjfarm/msjfarm/internal/jobring"
	"github.com/msjfarm/msjfarm/sdk"
)

// Policies lists the policies of this family.
var Policies = []sdk.Spec{{
	Name: "msf",
	Doc:  "Most Servers First (Q §4.1), non-preemptive: start waiting jobs in decreasing need order, skipping those that do not fit; FIFO within a need.",
	New:  func() sdk.Policy { return &MSF{} },
}, {
	Name: "lsf",
	Doc:  "Least Servers First (B §2), non-preemptive: start waiting jobs in increasing need order while they fit; FIFO within a need.",
	New:  func() sdk.Policy { return &LSF{} },
}, {
	Name: "msf-preemptive",
	Doc: "Most Servers First as B §2 defines it, preempt-resume: at every arrival and completion serve the greedy " +
		"packing of all jobs in decreasing need order (FIFO within a need, skipping what does not fit), preempting the rest.",
	New: func() sdk.Policy { return &PreemptiveMSF{} },
}}

// MSF is Most Servers First as Q §4.1 defines it: "Whenever a job arrives or
// completes, MSF tries to put as many additional jobs as possible into
// service, starting with the job that demands the most servers and moving in
// descending order of server demands. This process ends when either all
// servers are utilized or MSF has considered all jobs in the queue."
//
// So MSF does not block: when the highest-need waiting job does not fit, it
// moves on to smaller needs ("considered all jobs in the queue"). This is
// what gives MSF its two alternating phases in the one-or-all case (Q §4.1):
// while 1-server jobs run, a waiting k-server job cannot fit and 1-server
// jobs keep entering, so MSF only switches class when it runs out of jobs of
// the current class. (B §2 describes a preemptive MSF; this is Q's
// non-preemptive one.)
//
// Cost: after every decision no waiting job fits in the idle servers (each
// was considered), so an arrival only has to check whether the new job fits
// (O(1)); a completion walks the non-empty need groups that can fit,
// O(#needs/64 + jobs started).
//
// MSF is one of the speed benchmarks (one-or-all at λ = 7, Borg cell B at
// λ = 4.5), so the common case, at most 64 distinct
// needs, keeps its own queues (needRing) and one word of non-empty groups
// instead of sdk.NeedQueues: every queue operation inlines, and a
// completion finds the next group to serve with one AND and one
// trailing-zero count. Workloads with more needs use sdk.NeedQueues (wide);
// both take the same decisions (TestMatchesNaive runs each).
type MSF struct {
	// narrow (at most 64 needs): groups in decreasing need order.
	q     []needRing  // waiting jobs of group i
	of    []*needRing // class -> its group's queue
	fit   []uint64    // fit[f]: the groups whose need is at most f idle servers
	nz    uint64      // the non-empty groups
	least int         // the smallest need

	wide bool
	g    sdk.NeedQueues // groups and, when wide, the queues
}

// forceWide makes Init take the wide path whatever the number of needs
// (set by the tests, to check both paths against the same reference).
var forceWide = false

// Init builds the need groups (decreasing need).
func (p *MSF) Init(s *sdk.System) error {
	p.g.Reset(s, true)
	p.wide = len(p.g.Need) > 64 || forceWide
	p.nz = 0
	if p.wide {
		p.q, p.of, p.fit = nil, nil, nil
		return nil
	}
	if len(p.q) != len(p.g.Need) {
		p.q = make([]needRing, len(p.g.Need))
	}
	for i := range p.q {
		p.q[i].reset(p.g.Need[i], i)
	}
	p.of = p.of[:0]
	for _, i := range p.g.Of {
		p.of = append(p.of, &p.q[i])
	}
	// From[f] is the first group (in decreasing need) that fits in f idle
	// servers, and every later one fits too. (Shifts by 64 give 0 in Go.)
	if n := len(p.g.Need); n > 0 {
		p.least = p.g.Need[n-1]
	}
	all := uint64(1)<<uint(len(p.q)) - 1
	p.fit = p.fit[:0]
	for f := 0; f <= s.Servers(); f++ {
		p.fit = append(p.fit, all&^(uint64(1)<<uint(p.g.From[f])-1))
	}
	return nil
}

// Arrive starts j at once if it fits, else queues it. No older waiting job
// fits (the invariant above), so this is the whole MSF pass.
func (p *MSF) Arrive(s *sdk.System, j *sdk.Job) {
	if j.Need() <= s.Free() {
		s.Start(j)
		return
	}
	if p.wide {
		p.g.Push(j)
		return
	}
	q := p.of[j.Class()]
	q.Push(j)
	p.nz |= q.bit
}

// Complete refills the freed servers in decreasing need order: the first
// non-empty group that fits gives jobs while they fit (the idle count only
// falls, so a group passed over never fits again in this pass), then the
// next.
func (p *MSF) Complete(s *sdk.System, _ *sdk.Job) {
	if p.wide {
		p.completeWide(s)
		return
	}
	nz := p.nz
	if nz == 0 {
		return
	}
	free := s.Free()
	for m := nz & p.fit[free]; m != 0; m = nz & p.fit[free] {
		i := bits.TrailingZeros64(m)
		q := &p.q[i]
		for {
			// In a long queue, prefetch the job three pops ahead, as
			// sdk.FIFO.Pop does: MSF on one-or-all at λ = 7 keeps
			// thousands waiting, and those at the front are cold.
			j := q.Pop()
			if q.Len() >= prefetchAbove {
				q.Prefetch(prefetchAhead)
			}
			s.Start(j)
			free -= q.need
			if q.Len() == 0 {
				nz &^= q.bit
				break
			}
			if q.need > free {
				break
			}
		}
		if free < p.least {
			break // the usual end: nothing fits any more
		}
	}
	p.nz = nz
}

// completeWide is Complete over sdk.NeedQueues (more than 64 needs).
func (p *MSF) completeWide(s *sdk.System) {
	g := &p.g
	if g.Total == 0 {
		return
	}
	free := s.Free()
	for i := g.Next(g.From[free]); i >= 0; i = g.Next(max(i+1, g.From[free])) {
		for g.Q[i].Len() > 0 && g.Need[i] <= free {
			s.Start(g.Pop(i))
			free = s.Free()
		}
	}
}

// needRing is one need group's waiting jobs in arrival order, with the
// group's need and its bit in MSF.nz.
type needRing struct {
	jobring.Ring
	need int
	bit  uint64
}

func (r *needRing) reset(need, group int) {
	r.Reset()
	r.need, r.bit = need, 1<<uint(group)
}

// prefetchAbove and prefetchAhead are sdk.FIFO's: from which queue length
// pop prefetches, and how many pops ahead (prefetchAbove > prefetchAhead,
// so the job fetched is in the queue).
const (
	prefetchAbove = 16
	prefetchAhead = 3
)

// LSF is Least Servers First (B §2: "at all times, priority is given to jobs
// with the smallest server needs"), non-preemptive as POLICIES.md lists it:
// whenever servers are idle, waiting jobs are started in increasing need
// order. Whether it blocks or skips when a job does not fit is moot: every
// job after it in that order needs at least as many servers, so none would
// fit either. B reports it as apparently unstable in its experiments; it is
// here as a reference point.
type LSF struct {
	g sdk.NeedQueues
}

// Init builds the need groups (increasing need).
func (p *LSF) Init(s *sdk.System) error { p.g.Reset(s, false); return nil }

// Arrive starts j at once if it fits (after every decision no waiting job
// fits), else queues it.
func (p *LSF) Arrive(s *sdk.System, j *sdk.Job) {
	if j.Need() <= s.Free() {
		s.Start(j)
		return
	}
	p.g.Push(j)
}

// Complete refills the freed servers in increasing need order, stopping at
// the first waiting job that does not fit.
func (p *LSF) Complete(s *sdk.System, _ *sdk.Job) {
	g := &p.g
	for i := g.Next(0); i >= 0; i = g.Next(i + 1) {
		for g.Q[i].Len() > 0 {
			if g.Need[i] > s.Free() {
				return
			}
			s.Start(g.Pop(i))
		}
	}
}
