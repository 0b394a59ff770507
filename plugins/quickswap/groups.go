package quickswap

import (
	"github.com/msjfarm/msjfarm/internal/jobring"
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

// pop removes and returns q's oldest job (q must not be empty), and in a
// long queue prefetches the job three pops ahead, as sdk.FIFO.Pop does.
func pop(q *jobring.Ring) *sdk.Job {
	j := q.Pop()
	if q.Len() >= prefetchAbove {
		q.Prefetch(prefetchAhead)
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
