package srpt_test

import (
	"fmt"
	"reflect"
	"slices"
	"testing"

	"github.com/msjfarm/msjfarm/model/dist"
	"github.com/msjfarm/msjfarm/plugins/srpt"
	"github.com/msjfarm/msjfarm/sim"
	"github.com/msjfarm/msjfarm/sim/simtest"
)

// powersOfTwo is the S §6 system at load rho: ρ = λ·E[n]·E[D]/k =
// λ·3.75/8 = 0.46875·λ.
func powersOfTwo(t testing.TB, name string, rho float64) *sim.Workload {
	return simtest.Named(t, name, rho/0.46875)
}

func preemptions(evs []sim.TraceRecord) map[int64][]float64 {
	m := map[int64][]float64{}
	for _, e := range evs {
		if e.Kind == sim.TracePreempt {
			m[e.Job] = append(m[e.Job], e.Time)
		}
	}
	return m
}

func check(t *testing.T, name string, evs []sim.TraceRecord, starts, preempts map[int64][]float64) {
	t.Helper()
	if got := simtest.Starts(evs); !reflect.DeepEqual(got, starts) {
		t.Errorf("%s: starts %v, want %v", name, got, starts)
	}
	if got := preemptions(evs); !reflect.DeepEqual(got, preempts) {
		t.Errorf("%s: preemptions %v, want %v", name, got, preempts)
	}
}

// TestTraceGreedyVsFirstFit: k = 4, classes need 1 (0), 2 (1), 4 (2).
// Remaining size = need × remaining duration / 4.
//
//	t=0   job0 need 2, dur 4 (size 2): fits              → starts 0
//	t=0.5 job1 need 4, dur 1 (size 1): job0 has 1.75 left, so job1 comes
//	      first and takes all 4 servers; job0 no longer fits → job0
//	      preempted (3.5 left), job1 starts 0.5 (ends 1.5)
//	t=1   job2 need 2, dur 1 (size 0.5): ties job1 (0.5 left), the older
//	      job1 first, job2 does not fit                → waits
//	t=1.2 job3 need 1, dur 2 (size 0.5): behind job2 (tie, older) → waits
//	t=1.5 job1 done: job2 (0.5) starts, job3 (0.5) starts, 1 idle; job0
//	      (1.75, need 2) does not fit                   → both start 1.5
//	t=2   job4 need 1, dur 8 (size 2): after job0 (1.75), which does not
//	      fit in the 1 idle server. GreedySRPT stops at job0: job4 waits.
//	      FirstFit-SRPT skips job0: job4 starts 2 (ends 10).
//	t=2.5 job2 done. Greedy: job0 fits (3 idle) → starts 2.5; job4 fits in
//	      the last idle server → starts 2.5. FirstFit: order job3 (0.25),
//	      job0 (1.75), job4 (1.875): job0 fits in 3 servers → starts 2.5.
func TestTraceGreedyVsFirstFit(t *testing.T) {
	w := simtest.TraceWorkload(4, []int{1, 2, 4}, []simtest.J{
		{At: 0, Size: 4, Class: 1}, {At: 0.5, Size: 1, Class: 2}, {At: 1, Size: 1, Class: 1},
		{At: 1.2, Size: 2, Class: 0}, {At: 2, Size: 8, Class: 0},
	})
	common := map[int64][]float64{0: {0, 2.5}, 1: {0.5}, 2: {1.5}, 3: {1.5}}
	pre := map[int64][]float64{0: {0.5}}

	g := &srpt.GreedySRPT{}
	evs := simtest.RunTrace(t, w, g)
	simtest.CheckInvariants(t, w, g, evs, true)
	want := maps(common, 4, 2.5)
	check(t, "greedy", evs, want, pre)

	f := &srpt.FirstFitSRPT{}
	evs = simtest.RunTrace(t, w, f)
	simtest.CheckInvariants(t, w, f, evs, true)
	check(t, "firstfit", evs, maps(common, 4, 2), pre)
}

func maps(m map[int64][]float64, id int64, at float64) map[int64][]float64 {
	out := map[int64][]float64{id: {at}}
	for k, v := range m {
		out[k] = v
	}
	return out
}

// TestTraceStopVsSkip: k = 4, classes need 1 (0), need 4 (1).
//
//	t=0   job0 need 1, dur 1 (size 0.25), job1 need 1, dur 40 (size 10):
//	      both start 0
//	t=0.1 job2 need 4, dur 2 (size 2). Order: job0 (0.225), job2 (2),
//	      job1 (9.975).
//	      Greedy: job0 fits, job2 does not (3 left): stop, so job1, after
//	      the stop, is preempted (39.9 left); 3 servers idle until job0
//	      ends at 1, then job2 starts 1 (ends 3), job1 waits (0 idle);
//	      at 3 job1 starts.
//	      FirstFit: job2 has 3 servers left at its place: it waits, job1
//	      keeps running. At 1 job0 is done; order job2 (2), job1 (9.75):
//	      job2 takes all 4 servers, job1 is preempted (39 left); job2
//	      starts 1, job1 again at 3.
func TestTraceStopVsSkip(t *testing.T) {
	w := simtest.TraceWorkload(4, []int{1, 4}, []simtest.J{
		{At: 0, Size: 1, Class: 0}, {At: 0, Size: 40, Class: 0}, {At: 0.1, Size: 2, Class: 1},
	})
	starts := map[int64][]float64{0: {0}, 1: {0, 3}, 2: {1}}
	g := &srpt.GreedySRPT{}
	evs := simtest.RunTrace(t, w, g)
	simtest.CheckInvariants(t, w, g, evs, true)
	check(t, "greedy", evs, starts, map[int64][]float64{1: {0.1}})
	f := &srpt.FirstFitSRPT{}
	evs = simtest.RunTrace(t, w, f)
	simtest.CheckInvariants(t, w, f, evs, true)
	check(t, "firstfit", evs, starts, map[int64][]float64{1: {1}})
}

// TestOrderDuration: with order=duration the need no longer counts. k = 4,
// classes need 1 (0), need 4 (1):
//
//	t=0 job0 need 1, dur 3: starts 0
//	t=1 job1 need 4, dur 1.5: by size 1.5 > job0's 0.5, it waits (both
//	    policies) and starts when job0 ends at 3; by duration 1.5 < job0's
//	    2 left, it preempts job0 and starts 1 (ends 2.5), job0 resumes 2.5
func TestOrderDuration(t *testing.T) {
	w := simtest.TraceWorkload(4, []int{1, 4}, []simtest.J{{At: 0, Size: 3, Class: 0}, {At: 1, Size: 1.5, Class: 1}})
	for _, spec := range srpt.Policies[:2] {
		for _, order := range []string{srpt.OrderSize, srpt.OrderDuration} {
			p := spec.New()
			if err := sim.Configure(p, map[string]any{"order": order}); err != nil {
				t.Fatal(err)
			}
			evs := simtest.RunTrace(t, w, p)
			simtest.CheckInvariants(t, w, p, evs, true)
			if order == srpt.OrderSize {
				check(t, spec.Name+" size", evs, map[int64][]float64{0: {0}, 1: {3}}, map[int64][]float64{})
			} else {
				check(t, spec.Name+" duration", evs, map[int64][]float64{0: {0, 2.5}, 1: {1}}, map[int64][]float64{0: {1}})
			}
		}
	}
	if err := sim.Configure(&srpt.GreedySRPT{}, map[string]any{"order": "area"}); err == nil {
		t.Error("order=area accepted")
	}
}

// naive recomputes the GreedySRPT or FirstFit-SRPT schedule from scratch at
// every arrival and departure by sorting every job in the system: the
// definitions of S §6 written as plainly as possible. It also re-checks, at
// random instants between events (timers), that the schedule it would
// compute then is the one in service, which is what allows the real
// policies to decide only at events.
type naive struct {
	firstFit, byDuration bool
	jobs                 []*sim.Job
	sel                  []*sim.Job
	mismatch             string
}

func (p *naive) SizeAware() bool            { return true }
func (p *naive) Preemption() sim.Preemption { return sim.PreemptResume }
func (p *naive) Init(*sim.System) error     { p.jobs, p.mismatch = nil, ""; return nil }
func (p *naive) Arrive(s *sim.System, j *sim.Job) {
	p.jobs = append(p.jobs, j)
	p.apply(s)
	s.SetTimer(s.Now()+0.3*s.Rand().Exp(), 0)
}
func (p *naive) Complete(s *sim.System, j *sim.Job) {
	p.jobs = slices.DeleteFunc(p.jobs, func(x *sim.Job) bool { return x == j })
	p.apply(s)
}
func (p *naive) Timer(s *sim.System, _ int) {
	p.schedule(s)
	for _, j := range p.jobs {
		if slices.Contains(p.sel, j) != j.Running() && p.mismatch == "" {
			p.mismatch = fmt.Sprintf("t=%g: job %d running=%v but the schedule now says %v", s.Now(), j.ID(), j.Running(), !j.Running())
		}
	}
}

func (p *naive) schedule(s *sim.System) {
	for _, j := range p.jobs {
		j.Key = float64(j.Need()) * s.Remaining(j) / float64(s.Servers())
		if p.byDuration {
			j.Key = s.Remaining(j)
		}
	}
	order := slices.Clone(p.jobs)
	slices.SortFunc(order, func(a, b *sim.Job) int {
		if a.Key < b.Key || (a.Key == b.Key && a.ID() < b.ID()) {
			return -1
		}
		return 1
	})
	p.sel = p.sel[:0]
	free := s.Servers()
	for _, j := range order {
		if j.Need() <= free {
			p.sel = append(p.sel, j)
			free -= j.Need()
		} else if !p.firstFit {
			break
		}
	}
}

func (p *naive) apply(s *sim.System) {
	p.schedule(s)
	for _, j := range p.jobs {
		if j.Running() && !slices.Contains(p.sel, j) {
			s.Preempt(j)
		}
	}
	for _, j := range p.sel {
		if !j.Running() {
			s.Start(j)
		}
	}
}

// TestNaiveEquivalence: the fast GreedySRPT and FirstFit-SRPT make exactly
// the decisions of the naive from-scratch versions (same starts and
// preemptions of every job, at the same instants), in stable and unstable
// regimes, for both orders, and the naive schedule never changes between
// events.
func TestNaiveEquivalence(t *testing.T) {
	cases := []struct {
		w        *sim.Workload
		arrivals int64
	}{
		{powersOfTwo(t, "powers-of-two", 0.6), 10000},
		{powersOfTwo(t, "powers-of-two", 0.9), 3000}, // unstable: long queues
		{powersOfTwo(t, "powers-of-two-h2", 0.7), 10000},
		{simtest.Named(t, "four-class", 4.5), 3000},
	}
	for _, tc := range cases {
		for _, ff := range []bool{false, true} {
			for _, order := range []string{srpt.OrderSize, srpt.OrderDuration} {
				name := fmt.Sprintf("%s firstfit=%v order=%s", tc.w.Name, ff, order)
				var fast sim.Policy = &srpt.GreedySRPT{}
				if ff {
					fast = &srpt.FirstFitSRPT{}
				}
				if err := sim.Configure(fast, map[string]any{"order": order}); err != nil {
					t.Fatal(err)
				}
				ref := &naive{firstFit: ff, byDuration: order == srpt.OrderDuration}
				cfg := sim.Config{Seed: 2, Warmup: 500, Arrivals: tc.arrivals}
				rf, evf := simtest.Record(t, tc.w, fast, cfg)
				rn, evn := simtest.Record(t, tc.w, ref, cfg)
				simtest.CheckInvariants(t, tc.w, fast, evf, false)
				if ref.mismatch != "" {
					t.Errorf("%s: schedule changed between events: %s", name, ref.mismatch)
				}
				if !reflect.DeepEqual(simtest.Starts(evf), simtest.Starts(evn)) ||
					!reflect.DeepEqual(preemptions(evf), preemptions(evn)) {
					t.Errorf("%s: decisions differ from the naive policy", name)
				}
				if rf.Overall != rn.Overall {
					t.Errorf("%s: %+v, naive %+v", name, rf.Overall, rn.Overall)
				}
			}
		}
	}
}

// TestInvariantsLongRuns: the model's invariants on long random runs,
// including Borg cell B (k = 2048) and classes sharing a need.
func TestInvariantsLongRuns(t *testing.T) {
	shared := simtest.Named(t, "four-class", 4)
	shared.Classes = append(shared.Classes, sim.Class{Name: "class-5b", Need: 5, Share: 0.1,
		Service: dist.Must(dist.NewExponential(0.5))})
	cases := []struct {
		w        *sim.Workload
		arrivals int64
	}{
		{powersOfTwo(t, "powers-of-two", 0.6), 200000},
		{powersOfTwo(t, "powers-of-two-h2", 0.6), 200000},
		{shared, 100000},
		{simtest.Named(t, "borg-b", 2), 50000},
	}
	for _, tc := range cases {
		for _, p := range []sim.Policy{&srpt.GreedySRPT{}, &srpt.FirstFitSRPT{}} {
			r, evs := simtest.Record(t, tc.w, p, sim.Config{Seed: 1, Warmup: 1000, Arrivals: tc.arrivals})
			simtest.CheckInvariants(t, tc.w, p, evs, false)
			if !r.SizeAware || r.Preemption != "resume" {
				t.Errorf("%T: size_aware=%v preemption=%s", p, r.SizeAware, r.Preemption)
			}
			t.Logf("%s %T: %v preemptions=%d", tc.w.Name, p, r, r.Preemptions)
		}
	}
}

// TestDeterministic: same seed, same result, also for a reused instance.
func TestDeterministic(t *testing.T) {
	w := powersOfTwo(t, "powers-of-two", 0.6)
	cfg := sim.Config{Seed: 4, Warmup: 1000, Arrivals: 20000}
	for _, spec := range srpt.Policies {
		a, err := spec.Run(w, nil, cfg)
		if err != nil {
			t.Fatal(err)
		}
		b, err := spec.Run(w, nil, cfg)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(a, b) {
			t.Errorf("%s: results differ across runs of the same seed", spec.Name)
		}
	}
	p := &srpt.FirstFitSRPT{}
	a, _ := sim.Run(w, p, cfg)
	b, _ := sim.Run(w, p, cfg)
	if !reflect.DeepEqual(a, b) {
		t.Error("a reused FirstFitSRPT instance gives a different result")
	}
}
