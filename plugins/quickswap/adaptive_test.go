package quickswap_test

import (
	"reflect"
	"sort"
	"testing"

	"github.com/msjfarm/msjfarm/model/dist"
	"github.com/msjfarm/msjfarm/plugins/quickswap"
	"github.com/msjfarm/msjfarm/sdk"
	"github.com/msjfarm/msjfarm/sim"
	"github.com/msjfarm/msjfarm/sim/simtest"
)

// TestAdaptiveTrace: k = 4, needs 1, 2, 4; derived by hand.
//
//	job 0: t=0,   need 1, size 3 → starts 0 (working phase, MSF order).
//	job 1: t=0.1, need 1, size 3 → starts 0.1 (2 idle).
//	job 2: t=0.2, need 4, size 1 → cannot fit. Need 4 waits and is out of
//	       service; need 1, in service, has nothing waiting: the trigger
//	       fires, draining phase (only the largest waiting job may start).
//	job 3: t=0.3, need 1, size 1 → would fit (2 idle) but waits: draining.
//	job 4: t=0.4, need 2, size 1.5 → waits.
//	t=3:   job 0 ends (3 idle): job 2 still does not fit.
//	t=3.1: job 1 ends (4 idle): job 2 starts; working phase; the MSF pass
//	       finds 0 idle. Needs 1 and 2 wait out of service, need 4 has
//	       nothing waiting: the trigger fires again; the largest waiting
//	       job is job 4 (need 2).
//	t=4.1: job 2 ends: job 4 starts (draining ends), then the working
//	       phase's MSF pass starts job 3 in the same instant.
//
// Counters (window 0 to 5.6, when job 4 ends): 2 draining phases,
// [0.2, 3.1) and [3.1, 4.1): 3.9 time units.
func TestAdaptiveTrace(t *testing.T) {
	w := simtest.TraceWorkload(4, []int{1, 2, 4}, []simtest.J{
		{At: 0, Size: 3, Class: 0}, {At: 0.1, Size: 3, Class: 0}, {At: 0.2, Size: 1, Class: 2},
		{At: 0.3, Size: 1, Class: 0}, {At: 0.4, Size: 1.5, Class: 1},
	})
	checkStarts(t, w, &quickswap.Adaptive{}, map[int64]float64{0: 0, 1: 0.1, 2: 3.1, 3: 4.1, 4: 4.1})
	checkCounters(t, w, &quickswap.Adaptive{}, map[string]float64{
		"drain_fraction": 3.9 / 5.6, "drain_rate": 2 / 5.6, "mean_drain": 3.9 / 2,
	})
}

// TestAdaptiveLargestIsReread: the job waited for while draining is the
// largest waiting at each moment, not the one the drain began with. k = 4,
// needs 1, 2, 4; derived by hand:
//
//	jobs 0, 1, 2: t=0, 0.1, 0.2, need 1, size 2 → start (1 idle left).
//	job 3: t=0.3, need 2, size 1 → waits; trigger (need 2 out of service,
//	       need 1 has nothing waiting): draining for job 3.
//	job 4: t=0.4, need 4, size 1 → now the largest waiting job.
//	t=2:   job 0 ends, 2 idle: job 3 would fit but is not the largest.
//	t=2.2: jobs 1, 2 have ended: job 4 starts; working; need 2 waits out of
//	       service, need 4 has nothing waiting: draining for job 3.
//	t=3.2: job 4 ends: job 3 starts.
func TestAdaptiveLargestIsReread(t *testing.T) {
	w := simtest.TraceWorkload(4, []int{1, 2, 4}, []simtest.J{
		{At: 0, Size: 2, Class: 0}, {At: 0.1, Size: 2, Class: 0}, {At: 0.2, Size: 2, Class: 0},
		{At: 0.3, Size: 1, Class: 1}, {At: 0.4, Size: 1, Class: 2},
	})
	checkStarts(t, w, &quickswap.Adaptive{}, map[int64]float64{0: 0, 1: 0.1, 2: 0.2, 3: 3.2, 4: 2.2})
}

// naiveAdaptive is Adaptive Quickswap written the obvious way: one
// arrival-order list, the largest waiting job found by a scan, the MSF pass
// by a stable sort, the trigger recomputed from scratch. The optimised
// policy (bitset, incremental trigger counts) must take its decisions.
type naiveAdaptive struct {
	q     []*sdk.Job
	run   map[int]int // jobs in service by need
	drain bool
}

func (p *naiveAdaptive) Init(*sdk.System) error {
	p.q, p.run, p.drain = p.q[:0], map[int]int{}, false
	return nil
}
func (p *naiveAdaptive) Arrive(s *sdk.System, j *sdk.Job) { p.q = append(p.q, j); p.step(s) }
func (p *naiveAdaptive) Complete(s *sdk.System, j *sdk.Job) {
	p.run[j.Need()]--
	p.step(s)
}
func (p *naiveAdaptive) start(s *sdk.System, i int) {
	j := p.q[i]
	s.Start(j)
	p.run[j.Need()]++
	p.q = append(p.q[:i], p.q[i+1:]...)
}
func (p *naiveAdaptive) step(s *sdk.System) {
	if p.drain {
		best := -1
		for i, j := range p.q {
			if best < 0 || j.Need() > p.q[best].Need() {
				best = i
			}
		}
		if best < 0 || p.q[best].Need() > s.Free() {
			return
		}
		p.start(s, best)
		p.drain = false
	}
	sort.SliceStable(p.q, func(a, b int) bool { return p.q[a].Need() > p.q[b].Need() })
	for i := 0; i < len(p.q); {
		if p.q[i].Need() <= s.Free() {
			p.start(s, i)
		} else {
			i++
		}
	}
	waiting := map[int]int{}
	for _, j := range p.q {
		waiting[j.Need()]++
	}
	starved, blocked := false, false
	for n, w := range waiting {
		if w > 0 && p.run[n] == 0 {
			starved = true
		}
		if w > 0 && p.run[n] > 0 {
			blocked = true
		}
	}
	if starved && !blocked {
		p.drain = true
	}
}

// many has 70 classes needing 1..70 of k = 100 servers, equally likely,
// exponential mean 1 (ρ = λ·35.5/100): the bitset of waiting groups spans
// two words.
func many(rate float64) *sim.Workload {
	w := &sim.Workload{Name: "many", Servers: 100, ArrivalRate: rate}
	for n := 1; n <= 70; n++ {
		w.Classes = append(w.Classes, sim.Class{Need: n, Share: 1, Service: dist.Must(dist.NewExponential(1))})
	}
	return w
}

// TestAdaptiveMatchesNaive: event-for-event equality with the naive version
// on four-class (λ = 4.5), one-or-all (λ = 7.5), 70 classes (ρ = 0.89) and
// Borg cell B (λ = 2, and λ = 4.5, ρ = 0.92, where queues of thousands of
// jobs build up: the regime of the arrival fast path and of batched starts).
func TestAdaptiveMatchesNaive(t *testing.T) {
	for _, tc := range []struct {
		w   *sim.Workload
		arr int64
	}{
		{simtest.Named(t, "four-class", 4.5), 30000}, {simtest.Named(t, "one-or-all", 7.5), 30000},
		{many(2.5), 20000}, {simtest.Named(t, "borg-b", 2), 10000},
		{simtest.Named(t, "borg-b", 4.5), 4000},
	} {
		cfg := sim.Config{Seed: 5, Warmup: 1000, Arrivals: tc.arr}
		_, got := simtest.Record(t, tc.w, &quickswap.Adaptive{}, cfg)
		_, want := simtest.Record(t, tc.w, &naiveAdaptive{}, cfg)
		if !reflect.DeepEqual(got, want) {
			for i := range min(len(got), len(want)) {
				if got[i] != want[i] {
					t.Fatalf("%s: traces differ at event %d: got %+v, naive %+v", tc.w.Name, i, got[i], want[i])
				}
			}
			t.Fatalf("%s: traces differ in length: %d vs %d", tc.w.Name, len(got), len(want))
		}
	}
}
