package backfill_test

import (
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/msjfarm/msjfarm/model/swf"
	"github.com/msjfarm/msjfarm/model/workload"
	"github.com/msjfarm/msjfarm/plugins/backfill"
	"github.com/msjfarm/msjfarm/plugins/fcfs"
	"github.com/msjfarm/msjfarm/sim"
	"github.com/msjfarm/msjfarm/sim/rng"
	"github.com/msjfarm/msjfarm/sim/simtest"
	"github.com/msjfarm/msjfarm/sim/stats"
)

func easy(t testing.TB, params map[string]any) sim.Policy {
	t.Helper()
	return configured(t, backfill.Policies[0].New(), params)
}

func conservative(t testing.TB, params map[string]any) sim.Policy {
	t.Helper()
	return configured(t, backfill.Policies[1].New(), params)
}

func configured(t testing.TB, p sim.Policy, params map[string]any) sim.Policy {
	t.Helper()
	if err := sim.Configure(p, params); err != nil {
		t.Fatal(err)
	}
	return p
}

// starts replays w under p, checks the invariants and returns each job's
// (single) start instant.
func starts(t *testing.T, w *sim.Workload, p sim.Policy) map[int64][]float64 {
	t.Helper()
	evs := simtest.RunTrace(t, w, p)
	simtest.CheckInvariants(t, w, p, evs, true)
	return simtest.Starts(evs)
}

func wantStarts(t *testing.T, name string, got map[int64][]float64, want map[int64]float64) {
	t.Helper()
	for id, at := range want {
		if len(got[id]) != 1 || math.Abs(got[id][0]-at) > 1e-9 {
			t.Errorf("%s: job %d started at %v, want [%v]", name, id, got[id], at)
		}
	}
}

// shadowTrace is k = 4, classes needing 1, 2, 4:
//
//	job: 0    1    2    3    4
//	at:  0    1    2    3    8
//	need:2    4    2    1    1
//	size:10   2    5    20   1
func shadowTrace() *sim.Workload {
	return simtest.TraceWorkload(4, []int{1, 2, 4}, []simtest.J{
		{At: 0, Size: 10, Class: 1}, {At: 1, Size: 2, Class: 2}, {At: 2, Size: 5, Class: 1},
		{At: 3, Size: 20, Class: 0}, {At: 8, Size: 1, Class: 0},
	})
}

// TestEASYShadow, by hand (exact estimates):
//
//	t=0   job 0 (2 servers) starts, ends 10.
//	t=1   job 1 (4) is the blocked head: shadow time 10 (job 0's end frees
//	      4 servers), extra servers 4 − 4 = 0.
//	t=2   job 2 (2, size 5) fits in the 2 idle servers and ends at 7 ≤ 10:
//	      backfilled, starts 2.
//	t=3   job 3 (1, size 20): no idle server, waits.
//	t=7   job 2 ends, 2 idle: job 3 would end at 27 > 10 and needs 1 > 0
//	      extra servers: not backfilled.
//	t=8   job 4 (1, size 1) ends at 9 ≤ 10: backfilled, starts 8.
//	t=10  job 0 ends: job 1 starts (all 4 servers), ends 12.
//	t=12  job 3 starts.
func TestEASYShadow(t *testing.T) {
	wantStarts(t, "easy", starts(t, shadowTrace(), easy(t, nil)), map[int64]float64{0: 0, 1: 10, 2: 2, 3: 12, 4: 8})
}

// TestEASYRequested: the same trace scheduled on requested times. Job 4
// requests 5 (it really runs 1): its estimated end 13 is past the shadow
// time 10 and it needs more than the 0 extra servers, so it is not
// backfilled at 8; it starts with job 3 when job 1 ends at 12. The others
// request their real sizes, so they start as in TestEASYShadow.
func TestEASYRequested(t *testing.T) {
	w := shadowTrace()
	for i, r := range []float64{10, 2, 5, 20, 5} {
		w.Trace[i].Requested = r
	}
	got := starts(t, w, easy(t, map[string]any{"estimate": "requested"}))
	wantStarts(t, "easy requested", got, map[int64]float64{0: 0, 1: 10, 2: 2, 3: 12, 4: 12})
}

// TestEASYOverrun: requested times under-estimate jobs 0 (5 for 10) and 2
// (3 for 5). By hand:
//
//	t=1   head job 1 (4): shadow = job 0's estimated end 5, extra 0.
//	t=2   job 2 (2, requested 3) would end at 5 ≤ 5: backfilled at 2 (it
//	      really runs to 7).
//	t=7   job 2 ends. Job 0 has overrun its estimate (5 < 7), so it is
//	      expected to end just after 7: shadow 7⁺, extra 0; job 3
//	      (requested 20) cannot backfill.
//	t=8   job 4 (requested 1) would end at 9 > 8⁺ (job 0 still overrunning):
//	      waits.
//	t=10  job 0 ends: job 1 starts; t=12: jobs 3 and 4 start.
//
// Two measured jobs ran past their estimates (0 and 2).
func TestEASYOverrun(t *testing.T) {
	w := shadowTrace()
	for i, r := range []float64{5, 2, 3, 20, 1} {
		w.Trace[i].Requested = r
	}
	p := easy(t, map[string]any{"estimate": "requested"})
	r, evs := simtest.Record(t, w, p, sim.Config{Arrivals: 5})
	simtest.CheckInvariants(t, w, p, evs, true)
	wantStarts(t, "easy overrun", simtest.Starts(evs), map[int64]float64{0: 0, 1: 10, 2: 2, 3: 12, 4: 12})
	if got := simtest.Counter(t, r, "estimate_exceeded"); got != 2 {
		t.Errorf("estimate_exceeded = %v, want 2", got)
	}
	if got := simtest.Counter(t, r, "backfilled"); got != 0.2 {
		t.Errorf("backfilled = %v, want 1/5 (job 2)", got)
	}
}

// TestEASYExtraShared: two jobs backfilled past the shadow time in one
// decision share the head's extra servers, so the second must not take a
// server the first already used. k = 4, classes needing 1, 2, 3. By hand:
//
//	t=0    job 0 (2, size 10) starts, ends 10.
//	t=0.5  job 1 (2, size 2.5) starts, ends 3. No idle server.
//	t=1    job 2 (3, size 5) waits: the head. t=1.5, t=2: jobs 3 and 4 (1,
//	       size 20 each) wait: nothing is idle.
//	t=3    job 1 ends, 2 idle. Head job 2 (3): shadow 10 (job 0's end
//	       gives 2 + 2 = 4 ≥ 3), extra 4 − 3 = 1. Job 3 would end at 23 >
//	       10 but fits in the 1 extra server: backfilled, extra 0. Job 4
//	       (also to 23) finds no extra server left: waits.
//	t=10   job 0 ends, 3 idle: job 2 starts, ends 15.
//	t=15   job 4 starts.
//
// Were the extra servers not used up by job 3, job 4 would start at 3 too
// and hold the head, job 2, until 23.
func TestEASYExtraShared(t *testing.T) {
	w := simtest.TraceWorkload(4, []int{1, 2, 3}, []simtest.J{
		{At: 0, Size: 10, Class: 1}, {At: 0.5, Size: 2.5, Class: 1}, {At: 1, Size: 5, Class: 2},
		{At: 1.5, Size: 20, Class: 0}, {At: 2, Size: 20, Class: 0},
	})
	wantStarts(t, "easy", starts(t, w, easy(t, nil)), map[int64]float64{0: 0, 1: 0.5, 2: 10, 3: 3, 4: 15})
}

// TestEASYShadowOrder: the shadow time comes from the running jobs in order
// of estimated completion, the earliest first. k = 4, classes needing 1
// and 4. By hand:
//
//	t=0    job 0 (1, size 10) starts, ends 10.
//	t=0.5  job 1 (1, size 4) starts, ends 4.5.
//	t=1    job 2 (4) is the blocked head, 2 idle: job 1's end gives 3 < 4
//	       servers, job 0's then 4: shadow 10, extra 0.
//	t=2    job 3 (1, size 6) ends at 8 ≤ 10: backfilled, starts 2.
//	t=10   job 0 ends (job 1 at 4.5, job 3 at 8): job 2 starts.
//
// Taking the running jobs latest first would put the shadow at job 1's end,
// 4.5, and keep job 3 waiting.
func TestEASYShadowOrder(t *testing.T) {
	w := simtest.TraceWorkload(4, []int{1, 4}, []simtest.J{
		{At: 0, Size: 10, Class: 0}, {At: 0.5, Size: 4, Class: 0}, {At: 1, Size: 1, Class: 1}, {At: 2, Size: 6, Class: 0},
	})
	wantStarts(t, "easy", starts(t, w, easy(t, nil)), map[int64]float64{0: 0, 1: 0.5, 2: 10, 3: 2})
}

// delayTrace is the classic case where EASY delays a job that is not the
// head and conservative backfilling does not. k = 4, classes needing 1, 2,
// 3, 4:
//
//	job: 0    1    2    3
//	at:  0    1    2    3
//	need:2    3    4    1
//	size:10   10   5    30
func delayTrace() *sim.Workload {
	return simtest.TraceWorkload(4, []int{1, 2, 3, 4}, []simtest.J{
		{At: 0, Size: 10, Class: 1}, {At: 1, Size: 10, Class: 2}, {At: 2, Size: 5, Class: 3}, {At: 3, Size: 30, Class: 0},
	})
}

// TestEASYDelaysSecond, by hand: job 1 (3) is the blocked head, shadow 10,
// extra 4 − 3 = 1. Job 2 (4) waits. Job 3 (1, ends 33 > 10) fits in the 2
// idle servers and in the 1 extra server: backfilled at 3. At 10 job 1
// starts (3 idle: 4 − job 3); at 20 job 1 ends but job 3 holds a server
// until 33, so job 2 (4) starts only at 33.
func TestEASYDelaysSecond(t *testing.T) {
	wantStarts(t, "easy", starts(t, delayTrace(), easy(t, nil)), map[int64]float64{0: 0, 1: 10, 2: 33, 3: 3})
}

// TestConservativeTrace, same trace, by hand: job 1 is reserved at 10 (3
// servers on [10, 20)); job 2 at 20 (4 servers on [20, 25)); job 3 (1
// server for 30) fits on [3, 10) (2 idle) and [10, 20) (1 idle) but not on
// [20, 25) (0 idle): reserved at 25, not started at 3. So job 1 starts at
// 10, job 2 at 20, job 3 at 25.
func TestConservativeTrace(t *testing.T) {
	wantStarts(t, "conservative", starts(t, delayTrace(), conservative(t, nil)), map[int64]float64{0: 0, 1: 10, 2: 20, 3: 25})
	// On shadowTrace conservative takes EASY's decisions: the only waiting
	// job behind the backfilled ones is job 3, reserved at 12 behind job 1.
	wantStarts(t, "conservative", starts(t, shadowTrace(), conservative(t, nil)), map[int64]float64{0: 0, 1: 10, 2: 2, 3: 12, 4: 8})
}

// TestConservativeCompression: over-estimates (×2) make reservations
// pessimistic and early completions pull them in. shadowTrace with
// overestimate 2, by hand:
//
//	t=1   job 1 (4, est 4) reserved at job 0's estimated end 20.
//	t=2   job 2 (2, est 10): [2, 12) has 2 idle servers and ends before
//	      20: starts 2 (really ends 7).
//	t=3   job 3 (1, est 40): no idle server now; reserved after job 1, at
//	      24.
//	t=7   job 2 ends: 2 idle on [7, 20), but job 3 (est 40) would overlap
//	      job 1's reservation: stays at 24.
//	t=8   job 4 (1, est 2): [8, 10) fits in the 2 idle servers: starts 8.
//	t=10  job 0 ends (estimate 20): compression moves job 1 to 10 (starts)
//	      and job 3 to 14 (job 1's estimated end).
//	t=12  job 1 really ends: compression moves job 3 to 12: starts.
func TestConservativeCompression(t *testing.T) {
	got := starts(t, shadowTrace(), conservative(t, map[string]any{"overestimate": 2.0}))
	wantStarts(t, "conservative ×2", got, map[int64]float64{0: 0, 1: 10, 2: 2, 3: 12, 4: 8})
}

func TestBadInput(t *testing.T) {
	for _, spec := range backfill.Policies {
		err := sim.Configure(spec.New(), map[string]any{"overestimate": 0.5})
		if err == nil || !strings.Contains(err.Error(), `"overestimate"`) {
			t.Errorf("%s: overestimate 0.5: err = %v, want it to name overestimate", spec.Name, err)
		}
		err = sim.Configure(spec.New(), map[string]any{"estimate": "guess"})
		if err == nil || !strings.Contains(err.Error(), `"estimate"`) {
			t.Errorf("%s: estimate guess: err = %v, want it to name estimate", spec.Name, err)
		}
		// Requested times on a synthetic workload, or on a trace without
		// any: an Init error naming the parameter.
		p := configured(t, spec.New(), map[string]any{"estimate": "requested"})
		_, err = sim.Run(simtest.Mixed(1), p, sim.Config{Arrivals: 10})
		if err == nil || !strings.Contains(err.Error(), "estimate: \"requested\" needs a replayed trace") {
			t.Errorf("%s: requested on a synthetic workload: err = %v", spec.Name, err)
		}
		_, err = sim.Run(shadowTrace(), p, sim.Config{Arrivals: 5})
		if err == nil || !strings.Contains(err.Error(), "estimate: \"requested\", but no job") {
			t.Errorf("%s: requested on a trace without requested times: err = %v", spec.Name, err)
		}
	}
}

// randomTrace is n jobs on k = 16 (needs 1, 2, 3, 5, 8, 16) with Poisson
// arrivals at rate rate, exponential sizes of mean 1 and requested times
// that are the size times a factor uniform on [0.5, 3) (a third of the jobs
// under-estimate), 10% unknown.
func randomTrace(n int, rate float64, seed uint64) *sim.Workload {
	r := rng.New(seed, 1)
	needs := []int{1, 2, 3, 5, 8, 16}
	var jobs []simtest.J
	t := 0.0
	for range n {
		t += r.Exp() / rate
		jobs = append(jobs, simtest.J{At: t, Size: r.Exp(), Class: r.IntN(len(needs))})
	}
	w := simtest.TraceWorkload(16, needs, jobs)
	for i := range w.Trace {
		if r.Float64() >= 0.1 {
			w.Trace[i].Requested = w.Trace[i].Size * (0.5 + 2.5*r.Float64())
		}
	}
	return w
}

// TestInvariantsLong: the engine's invariants on long random runs, exact,
// over-estimated and requested (with overruns) estimates.
func TestInvariantsLong(t *testing.T) {
	cfg := sim.Config{Seed: 3, Warmup: 1000, Arrivals: 50000}
	tr := randomTrace(60000, 16/5.83*0.8, 9)
	for _, spec := range backfill.Policies {
		for _, c := range []struct {
			w      *sim.Workload
			params map[string]any
		}{
			{simtest.Mixed(2.2), nil},
			{simtest.Named(t, "one-or-all", 6), map[string]any{"overestimate": 3.0}},
			{simtest.Named(t, "borg-b", 1.5), nil},
			{tr, map[string]any{"estimate": "requested"}},
		} {
			p := configured(t, spec.New(), c.params)
			r, evs := simtest.Record(t, c.w, p, cfg)
			simtest.CheckInvariants(t, c.w, p, evs, false)
			if c.w == tr && (simtest.Counter(t, r, "estimate_exceeded") == 0 || simtest.Counter(t, r, "estimate_unknown") == 0) {
				t.Errorf("%s: the requested-time trace should exercise overruns and unknown estimates: %+v", spec.Name, r.Counters)
			}
			if simtest.Counter(t, r, "backfilled") == 0 {
				t.Errorf("%s on %s: nothing was backfilled", spec.Name, c.w.Name)
			}
		}
	}
}

// TestFactorOneIsExact: overestimate 1 is the default, exactly.
func TestFactorOneIsExact(t *testing.T) {
	w := simtest.Mixed(2.5)
	cfg := sim.Config{Seed: 2, Warmup: 1000, Arrivals: 20000}
	for _, spec := range backfill.Policies {
		r1, e1 := simtest.Record(t, w, spec.New(), cfg)
		r2, e2 := simtest.Record(t, w, configured(t, spec.New(), map[string]any{"overestimate": 1}), cfg)
		if !reflect.DeepEqual(e1, e2) || !reflect.DeepEqual(r1.Overall, r2.Overall) {
			t.Errorf("%s: overestimate 1 differs from the default", spec.Name)
		}
	}
}

// TestUtilisation: at stable loads the utilisation equals the offered load
// ρ (95% CI over 10 replications): one-or-all at λ = 5 (ρ = 0.64) and the
// six-class mixed workload at ρ = 0.77 (exponential and H2 sizes). Borg
// cell B's heavy-tailed sizes need far longer runs for a tight utilisation
// estimate, so it is only in the comparison with FCFS below.
func TestUtilisation(t *testing.T) {
	cfg := sim.Config{Warmup: 5000, Arrivals: 50000}
	for _, w := range []*sim.Workload{simtest.Named(t, "one-or-all", 5), simtest.Mixed(2.2)} {
		for _, spec := range backfill.Policies {
			rs := simtest.Replicate(t, w, func() sim.Policy { return spec.New() }, 10, cfg)
			u := simtest.CI(rs, func(r *sim.Result) float64 { return r.Utilization }, 0.95)
			t.Logf("%s %s: utilisation %.4f ± %.4f, load %.4f", spec.Name, w.Name, u.Mean, u.HalfWidth, w.Load())
			if rho := w.Load(); math.Abs(u.Mean-rho) > u.HalfWidth {
				t.Errorf("%s %s: utilisation %.4f ± %.4f, load %.4f", spec.Name, w.Name, u.Mean, u.HalfWidth, rho)
			}
		}
	}
}

// TestBelowFCFS: backfilling only starts jobs earlier than FCFS's head-of-
// line blocking would, so at moderate load its mean response time is at
// most FCFS's: the paired difference (same sample paths) over 10
// replications must not have its 95% CI above 0. One-or-all at λ = 3 (ρ =
// 0.38; FCFS's head-of-line blocking already makes it unstable at λ = 5)
// and Borg cell B at λ = 1 (k = 2048, 26 classes, ρ = 0.20; FCFS is
// unstable there at λ = 1.5).
func TestBelowFCFS(t *testing.T) {
	cfg := sim.Config{Warmup: 5000, Arrivals: 50000}
	for _, c := range []struct {
		wl   string
		rate float64
	}{{"one-or-all", 3}, {"borg-b", 1}} {
		w := simtest.Named(t, c.wl, c.rate)
		f := simtest.Replicate(t, w, func() sim.Policy { return &fcfs.FCFS{} }, 10, cfg)
		for _, spec := range backfill.Policies {
			rs := simtest.Replicate(t, w, func() sim.Policy { return spec.New() }, 10, cfg)
			d := make([]float64, len(rs))
			for i := range rs {
				d[i] = rs[i].Overall.MeanResponse - f[i].Overall.MeanResponse
			}
			diff := stats.MeanCI(d, 0.95)
			t.Logf("%s %s λ=%v: E[T] − FCFS's = %.4f ± %.4f (seed 1: %.4f vs %.4f)",
				spec.Name, c.wl, c.rate, diff.Mean, diff.HalfWidth, rs[0].Overall.MeanResponse, f[0].Overall.MeanResponse)
			if diff.Mean-diff.HalfWidth > 0 {
				t.Errorf("%s %s: mean response above FCFS's by %.4f ± %.4f", spec.Name, c.wl, diff.Mean, diff.HalfWidth)
			}
		}
	}
}

// BenchmarkEASY, BenchmarkConservative, BenchmarkFCFS: the shared cases
// (simtest.SmallCases), so the figures compare with FCFS's.
func BenchmarkEASY(b *testing.B) {
	simtest.BenchCases(b, simtest.SmallCases, func() sim.Policy { return backfill.Policies[0].New() })
}

func BenchmarkConservative(b *testing.B) {
	simtest.BenchCases(b, simtest.SmallCases, func() sim.Policy { return backfill.Policies[1].New() })
}

func BenchmarkFCFS(b *testing.B) {
	simtest.BenchCases(b, simtest.SmallCases, func() sim.Policy { return &fcfs.FCFS{} })
}

// TestSWFReplay: a replayed SWF trace carries the requested time (field 9)
// through workload.FromTrace to the policies. The trace is shadowTrace's
// jobs in seconds on 4 processors, job 4 requesting 5 s for its 1 s run:
// under estimate = requested it is not backfilled (starts 12, as in
// TestEASYRequested); under exact sizes it is (starts 8).
func TestSWFReplay(t *testing.T) {
	in := "; MaxProcs: 4\n" +
		"1 0 0 10 2 -1 -1 2 10\n" +
		"2 1 0 2 4 -1 -1 4 2\n" +
		"3 2 0 5 2 -1 -1 2 5\n" +
		"4 3 0 20 1 -1 -1 1 20\n" +
		"5 8 0 1 1 -1 -1 1 5\n"
	tr, err := swf.Read(strings.NewReader(in), 0)
	if err != nil {
		t.Fatal(err)
	}
	w, err := workload.FromTrace("swf", tr, 1)
	if err != nil {
		t.Fatal(err)
	}
	for _, spec := range backfill.Policies {
		wantStarts(t, spec.Name+" requested", starts(t, w, configured(t, spec.New(), map[string]any{"estimate": "requested"})),
			map[int64]float64{0: 0, 1: 10, 2: 2, 3: 12, 4: 12})
		wantStarts(t, spec.Name+" exact", starts(t, w, spec.New()), map[int64]float64{0: 0, 1: 10, 2: 2, 3: 12, 4: 8})
	}
}

// BenchmarkBorgBStable: Borg cell B at λ = 1 (ρ = 0.20), where FCFS and
// both backfilling policies are stable; at the shared case's λ = 2 the
// queue grows without bound under FCFS-ordered policies, and conservative
// backfilling's per-event cost, O(Q·(R + Q)) for Q waiting and R running
// jobs, grows with it.
func BenchmarkBorgBStable(b *testing.B) {
	w := simtest.Named(b, "borg-b", 1)
	for _, spec := range backfill.Policies {
		b.Run(spec.Name, func(b *testing.B) { simtest.Bench(b, w, spec.New(), 200000) })
	}
	b.Run("fcfs", func(b *testing.B) { simtest.Bench(b, w, &fcfs.FCFS{}, 200000) })
}
