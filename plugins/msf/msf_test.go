package msf_test

import (
	"fmt"
	"math"
	"sort"
	"testing"

	"github.com/msjfarm/msjfarm/model/dist"
	"github.com/msjfarm/msjfarm/plugins/msf"
	"github.com/msjfarm/msjfarm/sdk"
	"github.com/msjfarm/msjfarm/sim"
	"github.com/msjfarm/msjfarm/sim/simtest"
	"github.com/msjfarm/msjfarm/sim/stats"
)

// trace is k = 4 with classes 0, 1, 2 needing 1, 2, 4 servers:
//
//	job: 0    1    2    3    4    5    6    7    8    9
//	at:  0    0.1  0.2  0.3  0.4  0.5  4.5  4.7  4.8  4.9
//	need:4    1    2    4    1    2    1    2    4    1
//	size:1    1.1  1.2  1    1.4  2    1    1    1    1
func trace() *sim.Workload {
	return simtest.TraceWorkload(4, []int{1, 2, 4}, []simtest.J{
		{At: 0, Size: 1, Class: 2}, {At: 0.1, Size: 1.1, Class: 0}, {At: 0.2, Size: 1.2, Class: 1},
		{At: 0.3, Size: 1, Class: 2}, {At: 0.4, Size: 1.4, Class: 0}, {At: 0.5, Size: 2, Class: 1},
		{At: 4.5, Size: 1, Class: 0}, {At: 4.7, Size: 1, Class: 1}, {At: 4.8, Size: 1, Class: 2},
		{At: 4.9, Size: 1, Class: 0},
	})
}

func checkStarts(t *testing.T, p sim.Policy, want map[int64]float64) {
	t.Helper()
	w := trace()
	evs := simtest.RunTrace(t, w, p)
	simtest.CheckInvariants(t, w, p, evs, true)
	got := simtest.Starts(evs)
	for id, at := range want {
		if len(got[id]) != 1 || math.Abs(got[id][0]-at) > 1e-12 {
			t.Errorf("job %d started at %v, want [%v]", id, got[id], at)
		}
	}
}

// TestMSFTrace, derived by hand:
//
//	t=0:   job 0 (4) starts; jobs 1–5 wait (0 idle).
//	t=1:   job 0 ends, 4 idle. Largest need first: job 3 (4) starts.
//	t=2:   job 3 ends, 4 idle: need 2 in FIFO order, job 2 (2 left), job 5
//	       (0 left) start at 2.
//	t=3.2: job 2 ends, 2 idle: need 2 empty; need 1: jobs 1, 4 start 3.2.
//	t=4, 4.3: jobs 5, 1 end; nothing waits.
//	t=4.5: job 6 (1) arrives, 3 idle (job 4 runs to 4.6): starts 4.5.
//	t=4.6: job 4 ends (3 idle). t=4.7: job 7 (2) starts (1 idle left).
//	t=4.8: job 8 (4) arrives: does not fit, waits.
//	t=4.9: job 9 (1) arrives: fits in the 1 idle server; MSF considers all
//	       waiting jobs and skips job 8 rather than blocking: starts 4.9.
//	t=5.5, 5.7: jobs 6, 7 end (3 idle). t=5.9: job 9 ends: job 8 starts.
func TestMSFTrace(t *testing.T) {
	checkStarts(t, &msf.MSF{}, map[int64]float64{
		0: 0, 1: 3.2, 2: 2, 3: 1, 4: 3.2, 5: 2, 6: 4.5, 7: 4.7, 8: 5.9, 9: 4.9,
	})
}

// TestLSFTrace, derived by hand:
//
//	t=0:   job 0 starts; jobs 1–5 wait.
//	t=1:   4 idle. Smallest need first: jobs 1, 4 (1 each), then job 2 (2):
//	       0 idle; job 5 waits.
//	t=2.1: job 1 ends (1 idle): job 5 (2) does not fit.
//	t=2.2: job 2 ends (3 idle): job 5 starts (1 idle); job 3 (4) waits.
//	t=2.4: job 4 ends (2 idle). t=4.2: job 5 ends (4 idle): job 3 starts.
//	t=4.5–4.9: jobs 6–9 arrive to 0 idle servers and wait.
//	t=5.2: job 3 ends (4 idle): jobs 6, 9 (need 1, FIFO), then job 7 (2)
//	       start; job 8 (4) waits.
//	t=6.2: jobs 6, 9, 7 end: job 8 starts.
func TestLSFTrace(t *testing.T) {
	checkStarts(t, &msf.LSF{}, map[int64]float64{
		0: 0, 1: 1, 2: 1, 3: 4.2, 4: 1, 5: 2.2, 6: 5.2, 7: 5.2, 8: 6.2, 9: 5.2,
	})
}

// naive is the need-priority policy written the obvious way: one
// arrival-order list, stably sorted by need (decreasing for MSF, increasing
// for LSF) and scanned in full at every event, starting every job that fits.
// The optimised policies must take exactly its decisions.
type naive struct {
	desc bool
	q    []*sdk.Job
}

func (p *naive) Init(*sdk.System) error             { p.q = p.q[:0]; return nil }
func (p *naive) Arrive(s *sdk.System, j *sdk.Job)   { p.q = append(p.q, j); p.scan(s) }
func (p *naive) Complete(s *sdk.System, _ *sdk.Job) { p.scan(s) }
func (p *naive) scan(s *sdk.System) {
	sort.SliceStable(p.q, func(a, b int) bool {
		if p.desc {
			return p.q[a].Need() > p.q[b].Need()
		}
		return p.q[a].Need() < p.q[b].Need()
	})
	rest := p.q[:0]
	for _, j := range p.q {
		if j.Need() <= s.Free() {
			s.Start(j)
		} else {
			rest = append(rest, j)
		}
	}
	p.q = rest
}

// TestMatchesNaive: event-for-event equality with the naive scan, on the
// six-class workload at ρ = 0.875 and on one-or-all at λ = 7. MSF is
// checked on both of its paths: its own queues (at most 64 needs) and
// sdk.NeedQueues (forced here; taken on its own beyond 64 needs).
func TestMatchesNaive(t *testing.T) {
	cfg := sim.Config{Seed: 7, Warmup: 1000, Arrivals: 30000}
	for _, wide := range []bool{false, true} {
		msf.ForceWide(wide)
		for _, w := range []*sim.Workload{simtest.Mixed(2.5), simtest.Named(t, "one-or-all", 7)} {
			simtest.SameTrace(t, fmt.Sprintf("MSF wide=%v %s", wide, w.Name), w, &naive{desc: true}, &msf.MSF{}, cfg)
		}
		// Borg cell B: 26 classes, k = 2048.
		simtest.SameTrace(t, fmt.Sprintf("MSF wide=%v borg-b", wide), simtest.Named(t, "borg-b", 2), &naive{desc: true}, &msf.MSF{}, cfg)
		// 64 distinct needs (the most that MSF keeps in one word) at
		// ρ = 0.8.
		simtest.SameTrace(t, fmt.Sprintf("MSF wide=%v many-64", wide), many(64, 2.5), &naive{desc: true}, &msf.MSF{}, cfg)
	}
	msf.ForceWide(false)
	for _, w := range []*sim.Workload{simtest.Mixed(2.5), simtest.Named(t, "one-or-all", 7)} {
		simtest.SameTrace(t, "LSF "+w.Name, w, &naive{desc: false}, &msf.LSF{}, sim.Config{Seed: 7, Warmup: 1000, Arrivals: 5000})
	}
	// 70 distinct needs: the bitset of non-empty groups spans two words
	// (and MSF takes its wide path).
	simtest.SameTrace(t, "MSF many-70", many(70, 0.9), &naive{desc: true}, &msf.MSF{}, cfg)
	simtest.SameTrace(t, "LSF many-70", many(70, 0.9), &naive{desc: false}, &msf.LSF{}, cfg)
}

// TestReuse: an MSF value initialised again (for the next replication)
// starts from empty queues and takes the same decisions as a fresh one,
// also when the number of needs changes between runs.
func TestReuse(t *testing.T) {
	cfg := sim.Config{Seed: 11, Warmup: 100, Arrivals: 20000}
	p := &msf.MSF{}
	for _, w := range []*sim.Workload{
		simtest.Named(t, "one-or-all", 7.5), simtest.Named(t, "one-or-all", 7.5), simtest.Named(t, "borg-b", 4.5), many(70, 0.9), simtest.Mixed(2.5),
	} {
		simtest.SameTrace(t, "reused MSF "+w.Name, w, &msf.MSF{}, p, cfg)
	}
}

// many has n classes needing 1..n of k = 100 servers, equally likely,
// exponential mean 1: ρ = λ·(n+1)/200.
func many(n int, rate float64) *sim.Workload {
	w := &sim.Workload{Name: "many", Servers: 100, ArrivalRate: rate}
	for c := 1; c <= n; c++ {
		w.Classes = append(w.Classes, sim.Class{Need: c, Share: 1, Service: dist.Must(dist.NewExponential(1))})
	}
	return w
}

// TestInvariantsLong: the model's invariants on long random runs.
func TestInvariantsLong(t *testing.T) {
	for _, w := range []*sim.Workload{
		simtest.Named(t, "one-or-all", 7), simtest.Named(t, "four-class", 4.5), simtest.Named(t, "borg-b", 2), simtest.Mixed(2.5),
	} {
		for _, p := range []sim.Policy{&msf.MSF{}, &msf.LSF{}} {
			_, evs := simtest.Record(t, w, p, sim.Config{Seed: 3, Warmup: 1000, Arrivals: 100000})
			simtest.CheckInvariants(t, w, p, evs, false)
		}
	}
}

// TestUtilisation: for a stable non-preemptive policy the long-run
// utilisation equals the offered load ρ, checked within the 95% CI over 10
// replications. MSF is throughput-optimal on one-or-all (Q Thm 1 with ℓ = 0)
// and stable on four-class at λ = 4 (ρ = 0.8). LSF starves large jobs: it
// is checked at loads where it is stable (one-or-all λ = 2, ρ = 0.256;
// four-class λ = 2, ρ = 0.4); at one-or-all λ = 3 it is already unstable
// (see TestLSFUnstable).
func TestUtilisation(t *testing.T) {
	for _, tc := range []struct {
		name string
		p    func() sim.Policy
		wl   string
		rate float64
	}{
		{"msf", func() sim.Policy { return &msf.MSF{} }, "one-or-all", 6},
		{"msf", func() sim.Policy { return &msf.MSF{} }, "four-class", 4},
		{"lsf", func() sim.Policy { return &msf.LSF{} }, "one-or-all", 2},
		{"lsf", func() sim.Policy { return &msf.LSF{} }, "four-class", 2},
	} {
		w := simtest.Named(t, tc.wl, tc.rate)
		var us []float64
		for seed := uint64(1); seed <= 10; seed++ {
			r, err := sim.Run(w, tc.p(), sim.Config{Seed: seed, Warmup: 20000, Arrivals: 200000})
			if err != nil {
				t.Fatal(err)
			}
			if r.Instability != nil && r.Instability.Undeparted > 0 {
				t.Fatalf("%s %s λ=%v seed %d: measured jobs never left: %+v", tc.name, tc.wl, tc.rate, seed, r.Instability)
			}
			us = append(us, r.Utilization)
		}
		u, rho := stats.MeanCI(us, 0.95), w.Load()
		t.Logf("%s %s λ=%v: utilisation %.4f ± %.4f, load %.4f", tc.name, tc.wl, tc.rate, u.Mean, u.HalfWidth, rho)
		if math.Abs(u.Mean-rho) > u.HalfWidth {
			t.Errorf("%s %s: utilisation %.4f ± %.4f, load %.4f", tc.name, tc.wl, u.Mean, u.HalfWidth, rho)
		}
	}
}

// TestLSFUnstable: B §2 reports Least Servers First as apparently unstable.
// On one-or-all at λ = 3 (ρ = 0.384) a k-server job can start only when no
// 1-server job is in the system, which M/M/32 with offered load 2.7 leaves
// too rarely: every replication is flagged unstable and its utilisation
// falls short of the load by more than the CI.
func TestLSFUnstable(t *testing.T) {
	w := simtest.Named(t, "one-or-all", 3)
	var us []float64
	for seed := uint64(1); seed <= 5; seed++ {
		r, err := sim.Run(w, &msf.LSF{}, sim.Config{Seed: seed, Warmup: 10000, Arrivals: 100000})
		if err != nil {
			t.Fatal(err)
		}
		if !r.Unstable {
			t.Errorf("seed %d: LSF at λ = 3 not flagged unstable", seed)
		}
		us = append(us, r.Utilization)
	}
	u := stats.MeanCI(us, 0.95)
	t.Logf("LSF one-or-all λ=3: utilisation %.4f ± %.4f, load %.4f", u.Mean, u.HalfWidth, w.Load())
	if u.Mean+u.HalfWidth >= w.Load() {
		t.Errorf("utilisation %.4f ± %.4f not below the load %.4f", u.Mean, u.HalfWidth, w.Load())
	}
}

// BenchmarkMSFOneOrAll: MSF on one-or-all at λ = 7 (ρ = 0.897, stable: MSF
// is throughput-optimal there, Q Thm 1).
func BenchmarkMSFOneOrAll(b *testing.B) {
	simtest.Bench(b, simtest.Named(b, "one-or-all", 7), &msf.MSF{}, 1000000)
}

// BenchmarkMSFBorgB: MSF on Borg cell B (26 classes, k = 2048) at λ = 2.
func BenchmarkMSFBorgB(b *testing.B) {
	simtest.Bench(b, simtest.Named(b, "borg-b", 2), &msf.MSF{}, 1000000)
}

// BenchmarkMSFBorgBHeavy: MSF on Borg cell B at λ = 4.5 (ρ = 0.92).
func BenchmarkMSFBorgBHeavy(b *testing.B) {
	simtest.Bench(b, simtest.Named(b, "borg-b", 4.5), &msf.MSF{}, 1000000)
}

// BenchmarkLSFOneOrAll: LSF on one-or-all at λ = 2 (stable; at λ = 7 the
// k-server jobs would pile up without bound).
func BenchmarkLSFOneOrAll(b *testing.B) {
	simtest.Bench(b, simtest.Named(b, "one-or-all", 2), &msf.LSF{}, 1000000)
}

// BenchmarkLSFBorgB: LSF on Borg cell B at λ = 2.
func BenchmarkLSFBorgB(b *testing.B) {
	simtest.Bench(b, simtest.Named(b, "borg-b", 2), &msf.LSF{}, 1000000)
}
