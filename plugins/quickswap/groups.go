package quickswap

import (
	"unsafe"

	"github.com/msjfarm/msjfarm/internal/prefetch"
	"github.com/msjfarm/msjfarm/sdk"

	// For inlining sdk.System's methods: see "Inlining" in package sdk's doc.
	_ "github.com/msjfarm/msjfarm/sim"
)

// needGroups is sdk.NeedQueues in decreasing need order (Q §3.1 identifies
// a job class with its need, so workload classes that share a need form one
// Quickswap class, served in arrival order between themselves), plus the
// number of each group's jobs in service.
type needGroups struct {
	sdk.NeedQueues
	run []int // jobs of group g in service
}

func (g *needGroups) reset(s *sdk.System) {
	g.Reset(s, true)
	g.run = make([]int, len(g.Need))
}

// clock accumulates time over the measurement window only. The engine
// closes the window at an arrival, before calling Arrive with Measuring()
// false; advance, called first thing in every Arrive and Complete, credits
// the time up to that instant and then stops. Counters are thus exact
// time integrals over the window that the engine's own statistics use.
type clock struct {
	on   bool
	last float64
}

func (c *clock) start(now float64) { c.on, c.last = true, now }

// advance returns the measured time elapsed since the previous call.
func (c *clock) advance(s *sdk.System) float64 {
	if !c.on {
		return 0
	}
	now := s.Now()
	dt := now - c.last
	c.last = now
	if !s.Measuring() {
		c.on = false
	}
	return dt
}

// ratio is a/b, or 0 when b is 0 (counters are JSON: no NaN).
func ratio(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}

// thresholdParam is the shared schema entry of ℓ.
func thresholdParam(doc string) sdk.Param {
	return sdk.Param{Name: "threshold", Type: sdk.Int, Default: -1, Min: sdk.Bound(-1), Doc: doc}
}

// jobRing is a first-in first-out queue of jobs on a ring buffer whose
// length is a power of two: sdk.FIFO cut down to what MSFQ uses, so that
// push inlines and MSFQ.Complete can pop inline by hand.
type jobRing struct {
	buf  []*sdk.Job
	head int
	n    int
}

func (r *jobRing) reset() {
	clear(r.buf)
	r.head, r.n = 0, 0
}

func (r *jobRing) push(j *sdk.Job) {
	if r.n == len(r.buf) {
		// Grown here, as sdk.FIFO.Push does, rather than in a call,
		// which would make push too big to inline: appending the
		// buffer to itself keeps every job at its ring position under
		// the doubled mask (those that had wrapped round reappear right
		// after the old end).
		r.buf = append(r.buf, r.buf...)
		if r.n == 0 {
			r.buf = make([]*sdk.Job, 16)
		}
	}
	r.buf[(r.head+r.n)&(len(r.buf)-1)] = j
	r.n++
}

// pop removes and returns the oldest job; the ring must not be empty. The
// vacated slot keeps its stale pointer: it is never read before a push
// overwrites it, and the engine owns (and pools) the jobs, so it holds no
// memory alive, while clearing it would cost a store with a write barrier
// per job. As sdk.FIFO.Pop does, in a long queue it prefetches the job
// three pops ahead: the jobs at the front have waited behind the thousands
// of others and are likely cold.
func (r *jobRing) pop() *sdk.Job {
	mask := len(r.buf) - 1
	j := r.buf[r.head&mask]
	r.head = (r.head + 1) & mask
	r.n--
	if r.n >= prefetchAbove {
		prefetch.Line(unsafe.Pointer(r.buf[(r.head+prefetchAhead)&mask]))
	}
	return j
}

// prefetchAbove is the queue length from which pop prefetches, and
// prefetchAhead how many pops ahead (prefetchAbove > prefetchAhead, so the
// job fetched is in the queue). sdk.FIFO prefetches from 16 jobs on; MSFQ
// waits for 1024: its queues are short (about 180 jobs in the system on
// one-or-all at λ = 7), their jobs (~100 bytes each) stay in the cache, and
// the call is then pure cost: from 16 on, the time per event there was
// 1.4% higher than from 1024 on (four interleaved pairs of runs, each the
// minimum of 5).
const (
	prefetchAbove = 1024
	prefetchAhead = 3
)
