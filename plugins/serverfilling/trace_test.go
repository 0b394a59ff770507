package serverfilling

import (
	"math"
	"slices"
	"testing"

	"github.com/msjfarm/msjfarm/model/dist"
	"github.com/msjfarm/msjfarm/sim"
	"github.com/msjfarm/msjfarm/sim/simtest"
)

// expect compares a trace's start (or preemption) instants with the expected
// ones, job by job (times within 1e-9: crossing instants are computed).
func expect(t *testing.T, what string, got map[int64][]float64, want map[int64][]float64) {
	t.Helper()
	for id, w := range want {
		g := got[id]
		ok := len(g) == len(w)
		for i := 0; ok && i < len(w); i++ {
			ok = math.Abs(g[i]-w[i]) <= 1e-9
		}
		if !ok {
			t.Errorf("%s: job %d at %v, want %v", what, id, g, w)
		}
	}
	for id, g := range got {
		if _, ok := want[id]; !ok {
			t.Errorf("%s: job %d at %v, want none", what, id, g)
		}
	}
}

func preempts(evs []sim.TraceRecord) map[int64][]float64 {
	m := map[int64][]float64{}
	for _, e := range evs {
		if e.Kind == sim.TracePreempt {
			m[e.Job] = append(m[e.Job], e.Time)
		}
	}
	return m
}

// runningAfter is the sorted set of jobs in service once every event at or
// before time at has been applied.
func runningAfter(evs []sim.TraceRecord, at float64) []int64 {
	run := map[int64]bool{}
	for _, e := range evs {
		if e.Time > at {
			break
		}
		switch e.Kind {
		case sim.TraceStart:
			run[e.Job] = true
		case sim.TracePreempt, sim.TraceComplete:
			delete(run, e.Job)
		}
	}
	var ids []int64
	for id := range run {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

func configured(t *testing.T, o Order, p Procedure, params map[string]any) *Policy {
	t.Helper()
	pol := New(o, p)
	if err := sim.Configure(pol, params); err != nil {
		t.Fatal(err)
	}
	return pol
}

// TestServerFillingTrace: k = 4, needs 1, 4, 2 (classes 0, 1, 2).
//
//	job 0: t=0,   need 1, d=3 → M = {0} (total 1 < 4): all served, starts 0
//	job 1: t=0.5, need 4, d=1 → M = {0, 1} (total 5 ≥ 4); largest need first:
//	        1 fits, then 0 does not → 0 preempted at 0.5, 1 starts 0.5
//	job 2: t=1,   need 2, d=1 → M is full ({0, 1}): waits
//	job 3: t=1,   need 1, d=2 → waits
//	t=1.5: job 1 done; M = {0, 2, 3} (total 4): 2 (need 2), 0, 3 all fit →
//	        0 resumes at 1.5 (remaining 2.5), 2 and 3 start at 1.5.
func TestServerFillingTrace(t *testing.T) {
	w := simtest.TraceWorkload(4, []int{1, 4, 2}, []simtest.J{
		{At: 0, Size: 3, Class: 0}, {At: 0.5, Size: 1, Class: 1}, {At: 1, Size: 1, Class: 2}, {At: 1, Size: 2, Class: 0},
	})
	p := configured(t, ArrivalOrder, ServerFilling, nil)
	evs := simtest.RunTrace(t, w, p)
	simtest.CheckInvariants(t, w, p, evs, true)
	expect(t, "starts", simtest.Starts(evs), map[int64][]float64{0: {0, 1.5}, 1: {0.5}, 2: {1.5}, 3: {1.5}})
	expect(t, "preemptions", preempts(evs), map[int64][]float64{0: {0.5}})
}

// TestServerFillingStopsAtFirstMisfit: k = 6 (not a power of two), needs 4,
// 3, 1. S §3.2 and B §2: placement stops at the first job of M that does not
// fit, and jobs outside M wait even if they would fit.
//
//	job 0: t=0,   need 4, d=2 → starts 0
//	job 1: t=0.5, need 3, d=1 → M = {0, 1} (total 7 ≥ 6): 0 fits, 1 does not:
//	        stop; 2 servers idle
//	job 2: t=1,   need 1, d=1 → outside M (M is full): waits with 2 idle
//	t=2: job 0 done; M = {1, 2} (total 4): both start at 2.
func TestServerFillingStopsAtFirstMisfit(t *testing.T) {
	w := simtest.TraceWorkload(6, []int{4, 3, 1}, []simtest.J{
		{At: 0, Size: 2, Class: 0}, {At: 0.5, Size: 1, Class: 1}, {At: 1, Size: 1, Class: 2},
	})
	for _, o := range []Order{ArrivalOrder, SRPTOrder} {
		p := configured(t, o, ServerFilling, nil)
		evs := simtest.RunTrace(t, w, p)
		simtest.CheckInvariants(t, w, p, evs, true)
		// SRPT order: sizes 4·2/6 = 1.33 (0.83 left at 0.5, 0.67 at 1), 0.5,
		// 0.17: at 1 the order is 2, 1, 0 and M = {2, 1, 0} (total 8): need
		// first: 0 (4) fits, 1 (3) does not → stop. Same schedule.
		expect(t, "starts", simtest.Starts(evs), map[int64][]float64{0: {0}, 1: {2}, 2: {2}})
	}
}

// srptCrossingTrace: k = 8, classes need 1, 2, 4; all five jobs arrive at
// t = 0 (ids in arrival order), remaining size r = need·d/8:
//
//	job 0 (b):  need 4, d=1.2, r=0.6   rate 0.5
//	job 1 (x):  need 2, d=1,   r=0.25  rate 0.25
//	job 2 (c):  need 2, d=2,   r=0.5   rate 0.25
//	job 3 (w):  need 1, d=1,   r=0.125
//	job 4 (w'): need 1, d=1.6, r=0.2
//
// After the last arrival the order is w, w', x, c, b with prefix needs 1, 2,
// 4, 6, 10: M is all five, served largest need first: b, x, c (8 servers);
// w and w' wait. No arrival preempts anything (b, x, c arrive first and fit).
func srptCrossingTrace() *sim.Workload {
	return simtest.TraceWorkload(8, []int{1, 2, 4}, []simtest.J{
		{At: 0, Size: 1.2, Class: 2}, {At: 0, Size: 1, Class: 1}, {At: 0, Size: 2, Class: 1},
		{At: 0, Size: 1, Class: 0}, {At: 0, Size: 1.6, Class: 0},
	})
}

// TestSRPTCrossing: with crossings (S's continuous-time policy), b overtakes
// c when 0.6 − 0.5t = 0.5 − 0.25t, t = 0.4 (both at 0.4; w 0.125, x 0.15,
// w' 0.2). The order is then w, x, w', b, c with prefix needs 1, 3, 4, 8: M
// drops c, which is preempted at 0.4; M = {w, x, w', b} fills 8 servers:
// w and w' start at 0.4 (M's total is now exactly 8: no further crossing
// can change it).
//
//	t=1.0: x done. Keys: w 0.125 − 0.6/8 = 0.05, b 0.6 − 0.5 = 0.1,
//	       w' 0.2 − 0.6/8 = 0.125, c 0.4 (frozen). M = {w, b, w', c}, total
//	       8: c resumes at 1.0 (1.6 of duration left).
//	Completions: b 1.2, w 1.4, w' 2.0, c 2.6.
func TestSRPTCrossing(t *testing.T) {
	w := srptCrossingTrace()
	p := configured(t, SRPTOrder, ServerFilling, nil)
	evs := simtest.RunTrace(t, w, p)
	simtest.CheckInvariants(t, w, p, evs, true)
	expect(t, "starts", simtest.Starts(evs), map[int64][]float64{0: {0}, 1: {0}, 2: {0, 1}, 3: {0.4}, 4: {0.4}})
	expect(t, "preemptions", preempts(evs), map[int64][]float64{2: {0.4}})
	if p.timers != 1 {
		t.Errorf("%d crossing timers fired, want 1 (only at 0.4)", p.timers)
	}
}

// TestSRPTNoCrossing: the same trace deciding at arrivals and completions
// only: nothing happens at 0.4.
//
//	t=1.0: x done. Keys: b 0.1, w 0.125, w' 0.2, c 0.5 − 0.25 = 0.25:
//	       M = {b, w, w', c} (total 8): w and w' start at 1.0.
//	Completions: b 1.2, c 2.0, w 2.0, w' 2.6.
func TestSRPTNoCrossing(t *testing.T) {
	w := srptCrossingTrace()
	p := configured(t, SRPTOrder, ServerFilling, map[string]any{"crossings": false})
	evs := simtest.RunTrace(t, w, p)
	simtest.CheckInvariants(t, w, p, evs, true)
	expect(t, "starts", simtest.Starts(evs), map[int64][]float64{0: {0}, 1: {0}, 2: {0}, 3: {1}, 4: {1}})
	expect(t, "preemptions", preempts(evs), map[int64][]float64{})
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// TestGittinsExponentialTrace: k = 4; class A need 1, exponential mean 2
// (rank 2, key 1/4·2 = 0.5), class B need 2, exponential mean 0.5 (rank
// 0.5, key 2/4·0.5 = 0.25). Constant ranks: by class, then arrival.
//
//	jobs 0, 1: t=0, A, d=3 → M = {0, 1} (total 2): both start at 0
//	job 2: t=1, B, d=1 → order 2, 0, 1 (total 4): all fit, 2 starts at 1
//	job 3: t=1, B, d=1 → order 2, 3, 0, 1: prefix 2, 4 → M = {2, 3};
//	        0 and 1 preempted at 1, 3 starts at 1
//	t=2: job 2 done (its departure was scheduled first); M = {3, 0, 1}
//	     (total 4): 0 and 1 resume at 2; then job 3 done at 2.
func TestGittinsExponentialTrace(t *testing.T) {
	w := &sim.Workload{Name: "gittins-exp", Servers: 4, Classes: []sim.Class{
		{Name: "A", Need: 1, Share: 1, Service: must(dist.NewExponential(2))},
		{Name: "B", Need: 2, Share: 1, Service: must(dist.NewExponential(0.5))},
	}, Trace: []sim.TraceJob{{Arrival: 0, Size: 3, Class: 0}, {Arrival: 0, Size: 3, Class: 0},
		{Arrival: 1, Size: 1, Class: 1}, {Arrival: 1, Size: 1, Class: 1}}}
	for _, proc := range []Procedure{ServerFilling, DivisorFilling} {
		// DivisorFilling (k = 4 = 2², needs 1, 2 divide it): after job 3,
		// M = {2, 3, 0, 1} has 2 ≥ 4/6 need-1 jobs: Case 1, largest need
		// first: 2, 3 fill 4 servers; at 2 (job 2 done) M = {3, 0, 1}: 3, 0,
		// 1 fill 4. Same schedule.
		p := configured(t, GittinsOrder, proc, nil)
		evs := simtest.RunTrace(t, w, p)
		simtest.CheckInvariants(t, w, p, evs, true)
		expect(t, "starts", simtest.Starts(evs), map[int64][]float64{0: {0, 2}, 1: {0, 2}, 2: {1}, 3: {1}})
		expect(t, "preemptions", preempts(evs), map[int64][]float64{0: {1}, 1: {1}})
	}
}

// TestGittinsHyperexponentialTrace: k = 1, one class need 1, H2 with mean 1
// and C² = 10: the rank 1/h(t) rises with attained service t (0.55 at 0), so
// a new job outranks an old one. Decisions at arrivals and completions only
// (see Policy):
//
//	job 0: t=0, d=5 → starts 0
//	job 1: t=1, d=1 → rank 0.55 < G(1): job 0 preempted at 1, 1 starts 1
//	t=2: job 1 done → job 0 resumes at 2 (attained 1)
//	job 2: t=3, d=1 → G(0) < G(2): job 0 preempted at 3, 2 starts at 3
//	t=4: job 2 done → job 0 resumes at 4; done at 7.
func TestGittinsHyperexponentialTrace(t *testing.T) {
	w := &sim.Workload{Name: "gittins-h2", Servers: 1, Classes: []sim.Class{
		{Name: "h2", Need: 1, Share: 1, Service: must(dist.NewHyperExp(1, 10))},
	}, Trace: []sim.TraceJob{{Arrival: 0, Size: 5}, {Arrival: 1, Size: 1}, {Arrival: 3, Size: 1}}}
	p := configured(t, GittinsOrder, ServerFilling, nil)
	evs := simtest.RunTrace(t, w, p)
	simtest.CheckInvariants(t, w, p, evs, true)
	expect(t, "starts", simtest.Starts(evs), map[int64][]float64{0: {0, 2, 4}, 1: {1}, 2: {3}})
	expect(t, "preemptions", preempts(evs), map[int64][]float64{0: {1, 3}})
}

// TestDivisorFillingCase2: k = 12 = 2²·3, classes need 3, 4, 6, 1; all jobs
// at t = 0, remaining sizes need·d/12:
//
//	job 0 (a): need 3, d=2,   r=0.5
//	job 1 (b): need 3, d=3,   r=0.75
//	job 2 (c): need 4, d=1,   r=0.333
//	job 3 (d): need 6, d=1.2, r=0.6
//	job 4 (e): need 1, d=1,   r=0.083
//
// Final decision at t=0: M = all five (order e, c, a, d, b). One need-1 job <
// 12/6: not Case 1. Case 2: M2 = {c, d} (2|M2| = 4), M3 = {a, b}
// (3|M3| = 6): recurse on M3 with k = 4, needs 1, 1 → Case 1: both served.
// Literal (backfill off): {a, b} on 6 servers, 6 idle. With backfill: 6 idle
// servers filled first-fit in order: e (1), c (4) fit, d (6) does not:
// {a, b, c, e}.
func TestDivisorFillingCase2(t *testing.T) {
	w := simtest.TraceWorkload(12, []int{3, 4, 6, 1}, []simtest.J{
		{At: 0, Size: 2, Class: 0}, {At: 0, Size: 3, Class: 0}, {At: 0, Size: 1, Class: 1},
		{At: 0, Size: 1.2, Class: 2}, {At: 0, Size: 1, Class: 3},
	})
	for _, tc := range []struct {
		backfill bool
		want     []int64
	}{{false, []int64{0, 1}}, {true, []int64{0, 1, 2, 4}}} {
		p := configured(t, SRPTOrder, DivisorFilling, map[string]any{"backfill": tc.backfill})
		evs := simtest.RunTrace(t, w, p)
		simtest.CheckInvariants(t, w, p, evs, tc.backfill)
		if got := runningAfter(evs, 0); !slices.Equal(got, tc.want) {
			t.Errorf("backfill=%v: running after t=0: %v, want %v", tc.backfill, got, tc.want)
		}
	}
}

// TestDivisorFillingCase3: k = 10 (largest prime factor 5), classes need 5,
// 2, 1; all at t = 0, r = need·d/10.
//
//	jobs 0–4: need 2, d = 1, 1.1, 1.2, 1.3, 1.4 (r 0.2 … 0.28)
//	job 5:    need 5, d=1   (r 0.5)
//	job 6:    need 1, d=0.5 (r 0.05)
//
// M = all seven (order 6, 0, 1, 2, 3, 4, 5); one need-1 job < 10/6: not Case
// 1; Case 3 with p = 5: Mp = {5}, 5·1 < 10, so extract from Mr = {0, …, 4}
// (needs 2) five times on k' = 2: each subproblem's M is Mr's first 2 jobs;
// Case 2 on k' = 2 recurses on both (even) with k” = 1, whose M is the
// first: served. So 0, 1, 2, 3, 4 are served (10 servers); 5 and 6 wait.
//
// Adding job 7 (need 5, d=1.5, r 0.75): Mp = {5, 7}, 5·2 ≥ 10: recurse on
// Mp with k = 2, needs 1, 1: Case 1 serves both: {5, 7} on 10 servers.
func TestDivisorFillingCase3(t *testing.T) {
	jobs := []simtest.J{
		{At: 0, Size: 1, Class: 1}, {At: 0, Size: 1.1, Class: 1}, {At: 0, Size: 1.2, Class: 1},
		{At: 0, Size: 1.3, Class: 1}, {At: 0, Size: 1.4, Class: 1}, {At: 0, Size: 1, Class: 0},
		{At: 0, Size: 0.5, Class: 2},
	}
	for _, tc := range []struct {
		jobs []simtest.J
		want []int64
	}{
		{jobs, []int64{0, 1, 2, 3, 4}},
		{append(slices.Clone(jobs), simtest.J{At: 0, Size: 1.5, Class: 0}), []int64{5, 7}},
	} {
		w := simtest.TraceWorkload(10, []int{5, 2, 1}, tc.jobs)
		// At t = 0 no server is idle, so backfill does not act. Later the
		// literal recursion strands jobs: with only 5 and 6 left, Case 3
		// finds Mp = {5} too small and Mr empty, and serves nothing.
		for _, backfill := range []bool{false, true} {
			p := configured(t, SRPTOrder, DivisorFilling, map[string]any{"backfill": backfill})
			evs := simtest.RunTrace(t, w, p)
			simtest.CheckInvariants(t, w, p, evs, backfill)
			if got := runningAfter(evs, 0); !slices.Equal(got, tc.want) {
				t.Errorf("%d jobs, backfill=%v: running after t=0: %v, want %v", len(tc.jobs), backfill, got, tc.want)
			}
		}
	}
}

// TestDivisorFillingLoneJob: k = 12 and a single job of need 1. Not Case 1
// (1 < 12/6); Case 2 recurses on M2 = ∅ (2·0 ≥ 3·0, tie to M2): the literal
// recursion serves nothing, and the job never starts (the trace ends with it
// waiting). With backfill it starts at once.
func TestDivisorFillingLoneJob(t *testing.T) {
	w := simtest.TraceWorkload(12, []int{1, 12}, []simtest.J{{At: 0, Size: 1, Class: 0}})
	for _, backfill := range []bool{false, true} {
		p := configured(t, SRPTOrder, DivisorFilling, map[string]any{"backfill": backfill})
		evs := simtest.RunTrace(t, w, p)
		simtest.CheckInvariants(t, w, p, evs, backfill)
		want := map[int64][]float64{}
		if backfill {
			want[0] = []float64{0}
		}
		expect(t, "starts", simtest.Starts(evs), want)
	}
}

// TestGittinsDeterministicIsSRPT: B §2 notes that with deterministic
// durations the Gittins rank is the remaining size, so ServerFilling-Gittins
// is ServerFilling-SRPT — exactly so here when SRPT also decides at arrivals
// and completions only (crossings off; Gittins takes no crossing timers).
// Random trace, k = 8, needs 1, 2, 4, 8 with one duration per class (the
// TraceWorkload class distribution is deterministic at that duration).
func TestGittinsDeterministicIsSRPT(t *testing.T) {
	durs := []float64{1.3, 0.7, 2.9, 0.45}
	var jobs []simtest.J
	at := 0.0
	for i := 0; i < 3000; i++ {
		c := int(uint64(i) * 2654435761 % 4)
		at += 0.05 + float64(uint64(i)*40503%97)/97*0.4
		jobs = append(jobs, simtest.J{At: at, Size: durs[c], Class: c})
	}
	w := simtest.TraceWorkload(8, []int{1, 2, 4, 8}, jobs)
	for _, proc := range []Procedure{ServerFilling, DivisorFilling} {
		a := simtest.RunTrace(t, w, configured(t, GittinsOrder, proc, nil))
		params := map[string]any{"crossings": false}
		b := simtest.RunTrace(t, w, configured(t, SRPTOrder, proc, params))
		if len(a) != len(b) {
			t.Fatalf("procedure %d: %d events under Gittins, %d under SRPT", proc, len(a), len(b))
		}
		for i := range a {
			ea, eb := a[i], b[i]
			if ea.Kind != eb.Kind || ea.Job != eb.Job || math.Abs(ea.Time-eb.Time) > 1e-9*math.Max(1, ea.Time) {
				t.Fatalf("procedure %d: event %d: Gittins %+v, SRPT %+v", proc, i, ea, eb)
			}
		}
	}
}
