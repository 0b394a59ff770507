package msf_test

import (
	"math"
	"reflect"
	"sort"
	"testing"

	"github.com/msjfarm/msjfarm/plugins/fcfs"
	"github.com/msjfarm/msjfarm/plugins/msf"
	"github.com/msjfarm/msjfarm/sdk"
	"github.com/msjfarm/msjfarm/sim"
	"github.com/msjfarm/msjfarm/sim/simtest"
	"github.com/msjfarm/msjfarm/sim/stats"
)

// TestPreemptiveMSFTrace, derived by hand on k = 4, classes needing 1, 4, 2:
//
//	t=0    job 0 (need 1, size 3) starts.
//	t=1    job 1 (need 4, size 1) arrives: the packing in decreasing need
//	       serves job 1 alone, so job 0 is preempted (2 left); job 1 runs 1–2.
//	t=1.5  job 2 (need 2, size 1): job 1 holds all 4 servers, job 2 waits.
//	t=2    job 1 ends. Packing: job 2 (2 servers), then job 0 (1): both
//	       start at 2; job 2 runs 2–3.
//	t=2.5  job 3 (need 2, size 1) arrives, 1 server idle. Packing: jobs 2
//	       and 3 take all 4 servers, so job 0 is preempted again (2 − 0.5 =
//	       1.5 left); job 3 runs 2.5–3.5.
//	t=3    job 2 ends: job 3 (2) then job 0 (1): job 0 resumes at 3, ends
//	       at 4.5.
//
// Response times: job 0 4.5, job 1 1, job 2 1.5, job 3 1.
func TestPreemptiveMSFTrace(t *testing.T) {
	w := simtest.TraceWorkload(4, []int{1, 4, 2}, []simtest.J{
		{At: 0, Size: 3, Class: 0}, {At: 1, Size: 1, Class: 1}, {At: 1.5, Size: 1, Class: 2}, {At: 2.5, Size: 1, Class: 2},
	})
	p := &msf.PreemptiveMSF{}
	r, evs := simtest.Record(t, w, p, sim.Config{Arrivals: 4})
	simtest.CheckInvariants(t, w, p, evs, true)
	want := map[int64][]float64{0: {0, 2, 3}, 1: {1}, 2: {2}, 3: {2.5}}
	if got := simtest.Starts(evs); !reflect.DeepEqual(got, want) {
		t.Errorf("starts = %v, want %v", got, want)
	}
	if r.Preemptions != 2 || r.PreemptedJobs != 1 || r.Preemption != "resume" {
		t.Errorf("preemptions %d, preempted jobs %d, preemption %q; want 2, 1, resume", r.Preemptions, r.PreemptedJobs, r.Preemption)
	}
	if m := (4.5 + 1 + 1.5 + 1) / 4; math.Abs(r.Overall.MeanResponse-m) > 1e-12 {
		t.Errorf("mean response %v, want %v", r.Overall.MeanResponse, m)
	}
}

// naivePMSF recomputes B §2's preemptive MSF from scratch at every event:
// all jobs in the system sorted by (need desc, arrival), packed greedily
// skipping what does not fit; running jobs outside the packing are
// preempted, waiting jobs inside it started.
type naivePMSF struct{ jobs []*sdk.Job }

func (p *naivePMSF) Preemption() sdk.Preemption       { return sdk.PreemptResume }
func (p *naivePMSF) Init(*sdk.System) error           { p.jobs = p.jobs[:0]; return nil }
func (p *naivePMSF) Arrive(s *sdk.System, j *sdk.Job) { p.jobs = append(p.jobs, j); p.pack(s) }
func (p *naivePMSF) Complete(s *sdk.System, j *sdk.Job) {
	for i, x := range p.jobs {
		if x == j {
			p.jobs = append(p.jobs[:i], p.jobs[i+1:]...)
			break
		}
	}
	p.pack(s)
}
func (p *naivePMSF) pack(s *sdk.System) {
	sort.SliceStable(p.jobs, func(a, b int) bool {
		if p.jobs[a].Need() != p.jobs[b].Need() {
			return p.jobs[a].Need() > p.jobs[b].Need()
		}
		return p.jobs[a].ID() < p.jobs[b].ID()
	})
	free := s.Servers()
	in := make([]bool, len(p.jobs))
	for i, j := range p.jobs {
		if j.Need() <= free {
			in[i] = true
			free -= j.Need()
		}
	}
	for i, j := range p.jobs {
		if !in[i] && j.Running() {
			s.Preempt(j)
		}
	}
	for i, j := range p.jobs {
		if in[i] && j.Waiting() {
			s.Start(j)
		}
	}
}

// TestPreemptiveMSFMatchesNaive: every job's start instants and the
// results agree exactly with the from-scratch packing (the order of the
// actions within one instant may differ, their effect may not).
func TestPreemptiveMSFMatchesNaive(t *testing.T) {
	cfg := sim.Config{Seed: 5, Warmup: 1000, Arrivals: 20000}
	for _, w := range []*sim.Workload{simtest.Mixed(2.5), simtest.Named(t, "one-or-all", 6), simtest.Named(t, "four-class", 4.5), many(70, 0.9)} {
		r1, e1 := simtest.Record(t, w, &msf.PreemptiveMSF{}, cfg)
		r2, e2 := simtest.Record(t, w, &naivePMSF{}, cfg)
		simtest.CheckInvariants(t, w, &msf.PreemptiveMSF{}, e1, false)
		if !reflect.DeepEqual(simtest.Starts(e1), simtest.Starts(e2)) {
			t.Errorf("%s: start instants differ from the naive packing", w.Name)
		}
		if !reflect.DeepEqual(r1.Overall, r2.Overall) || r1.Preemptions != r2.Preemptions || r1.Preemptions == 0 {
			t.Errorf("%s: results differ (or no preemption happened): %+v %d vs %+v %d", w.Name, r1.Overall, r1.Preemptions, r2.Overall, r2.Preemptions)
		}
	}
}

// TestPreemptiveMSFInvariantsLong: the engine's invariants on long runs,
// including Borg cell B (26 classes, k = 2048).
func TestPreemptiveMSFInvariantsLong(t *testing.T) {
	for _, w := range []*sim.Workload{simtest.Named(t, "one-or-all", 7), simtest.Named(t, "borg-b", 2), simtest.Mixed(2.5)} {
		p := &msf.PreemptiveMSF{}
		_, evs := simtest.Record(t, w, p, sim.Config{Seed: 3, Warmup: 1000, Arrivals: 100000})
		simtest.CheckInvariants(t, w, p, evs, false)
	}
}

// TestPreemptiveMSFOneOrAll: on one-or-all (k = 32; need 1 w.p. 0.9, need
// 32 w.p. 0.1; exponential mean 1) a waiting 32-server job always tops the
// packing, so it is served as soon as the previous 32-server job leaves:
// the heavy class is an M/M/1 queue of rate λ_h = 0.1λ, E[T_h] = 1/(1 −
// 0.1λ) = 2.5 at λ = 6. Also checked over 10 replications (95% CI): the
// utilisation equals the load ρ = λ(0.9/32 + 0.1) = 0.76875 (preempt-resume
// wastes no work), Little's law E[N] = X·E[T] for the window, and the
// relation to non-preemptive MSF on the same sample paths: preemption can
// only help the heavy class (its jobs never wait behind 1-server jobs
// started before them), so its mean response is lower than under Q's
// non-preemptive MSF, where a heavy job waits for the running light jobs to
// drain.
func TestPreemptiveMSFOneOrAll(t *testing.T) {
	w := simtest.Named(t, "one-or-all", 6)
	cfg := sim.Config{Warmup: 20000, Arrivals: 200000}
	rs := simtest.Replicate(t, w, func() sim.Policy { return &msf.PreemptiveMSF{} }, 10, cfg)
	np := simtest.Replicate(t, w, func() sim.Policy { return &msf.MSF{} }, 10, cfg)
	heavy := simtest.CI(rs, func(r *sim.Result) float64 { return r.Classes[1].MeanResponse }, 0.95)
	if want := 1 / (1 - 0.1*6); math.Abs(heavy.Mean-want) > heavy.HalfWidth {
		t.Errorf("heavy class E[T] = %.4f ± %.4f, M/M/1 gives %.4f", heavy.Mean, heavy.HalfWidth, want)
	}
	u := simtest.CI(rs, func(r *sim.Result) float64 { return r.Utilization }, 0.95)
	if rho := w.Load(); math.Abs(u.Mean-rho) > u.HalfWidth {
		t.Errorf("utilisation %.4f ± %.4f, load %.4f", u.Mean, u.HalfWidth, rho)
	}
	little := simtest.CI(rs, func(r *sim.Result) float64 {
		return r.MeanInSystem - r.Throughput*r.Overall.MeanResponse
	}, 0.95)
	if math.Abs(little.Mean) > little.HalfWidth {
		t.Errorf("E[N] − X·E[T] = %.4g ± %.4g, Little's law says 0", little.Mean, little.HalfWidth)
	}
	ds := make([]float64, len(rs))
	for i := range rs {
		ds[i] = np[i].Classes[1].MeanResponse - rs[i].Classes[1].MeanResponse
	}
	diff := stats.MeanCI(ds, 0.95)
	t.Logf("heavy E[T] %.4f ± %.4f (M/M/1 %.4f); non-preemptive − preemptive heavy E[T] = %.4f ± %.4f; utilisation %.4f ± %.4f",
		heavy.Mean, heavy.HalfWidth, 2.5, diff.Mean, diff.HalfWidth, u.Mean, u.HalfWidth)
	if diff.Mean-diff.HalfWidth <= 0 {
		t.Errorf("heavy class not faster under preemption: non-preemptive − preemptive = %.4f ± %.4f", diff.Mean, diff.HalfWidth)
	}
}

// BenchmarkPreemptiveMSF: the shared cases (simtest.SmallCases).
func BenchmarkPreemptiveMSF(b *testing.B) {
	simtest.BenchCases(b, simtest.SmallCases, func() sim.Policy { return &msf.PreemptiveMSF{} })
}

// BenchmarkFCFSSmallCases: FCFS on the same cases, for the comparison.
func BenchmarkFCFSSmallCases(b *testing.B) {
	simtest.BenchCases(b, simtest.SmallCases, func() sim.Policy { return &fcfs.FCFS{} })
}
