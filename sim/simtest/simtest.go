// Package simtest holds helpers for testing policies: hand-built trace
// workloads, decision-trace recording, and the model's invariants checked on
// a recorded trace.
package simtest

import (
	"fmt"
	"math"
	"runtime"
	"testing"

	"github.com/msjfarm/msjfarm/model/dist"
	"github.com/msjfarm/msjfarm/model/workload"
	"github.com/msjfarm/msjfarm/sim"
	"github.com/msjfarm/msjfarm/sim/stats"
)

// J is a hand-built job: arrival instant, size (duration) and class.
type J struct {
	At, Size float64
	Class    int
}

// TraceWorkload replays jobs on k servers; class i needs needs[i] servers.
// Each class's service distribution (what a policy may know of the class) is
// deterministic at the mean of that class's sizes in the trace.
func TraceWorkload(k int, needs []int, jobs []J) *sim.Workload {
	w := &sim.Workload{Name: "trace", Servers: k}
	sum := make([]float64, len(needs))
	cnt := make([]float64, len(needs))
	for _, j := range jobs {
		w.Trace = append(w.Trace, sim.TraceJob{Arrival: j.At, Size: j.Size, Class: j.Class})
		if j.Class >= 0 && j.Class < len(needs) {
			sum[j.Class] += j.Size
			cnt[j.Class]++
		}
	}
	for i, n := range needs {
		mean := 1.0
		if cnt[i] > 0 {
			mean = sum[i] / cnt[i]
		}
		w.Classes = append(w.Classes, sim.Class{Name: fmt.Sprintf("need-%d", n), Need: n, Share: cnt[i] + 1e-9,
			Service: dist.Must(dist.NewDeterministic(mean))})
	}
	return w
}

// Record runs one replication and returns its result and decision trace.
func Record(t testing.TB, w *sim.Workload, p sim.Policy, cfg sim.Config) (*sim.Result, []sim.TraceRecord) {
	t.Helper()
	var evs []sim.TraceRecord
	cfg.Observer = func(e sim.TraceRecord) { evs = append(evs, e) }
	r, err := sim.Run(w, p, cfg)
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	return r, evs
}

// RunTrace replays all jobs of a TraceWorkload (no warm-up) and returns the
// decision trace.
func RunTrace(t testing.TB, w *sim.Workload, p sim.Policy) []sim.TraceRecord {
	t.Helper()
	_, evs := Record(t, w, p, sim.Config{Arrivals: int64(len(w.Trace))})
	return evs
}

// Starts returns, for each job, the instants it was started (more than one
// only under preemption).
func Starts(evs []sim.TraceRecord) map[int64][]float64 {
	m := map[int64][]float64{}
	for _, e := range evs {
		if e.Kind == sim.TraceStart {
			m[e.Job] = append(m[e.Job], e.Time)
		}
	}
	return m
}

// CheckInvariants verifies a decision trace against the model: busy servers
// never exceed k and always equal the needs of the jobs in service; no
// preemption unless the policy declares it; a job starts only while waiting;
// a job completes only while running; with complete=true, every arrival
// completed.
func CheckInvariants(t testing.TB, w *sim.Workload, p sim.Policy, evs []sim.TraceRecord, complete bool) {
	t.Helper()
	info := sim.Describe(p)
	const (
		waiting = 1
		running = 2
		done    = 3
	)
	state := map[int64]int{}
	busy := 0
	for i, e := range evs {
		switch e.Kind {
		case sim.TraceArrive:
			state[e.Job] = waiting
		case sim.TraceStart:
			if state[e.Job] != waiting {
				t.Fatalf("event %d (t=%g): job %d started while in state %d", i, e.Time, e.Job, state[e.Job])
			}
			state[e.Job] = running
			busy += e.Need
		case sim.TracePreempt:
			if info.Preemption == sim.NoPreemption {
				t.Fatalf("event %d (t=%g): job %d preempted by a non-preemptive policy", i, e.Time, e.Job)
			}
			if state[e.Job] != running {
				t.Fatalf("event %d (t=%g): job %d preempted while not running", i, e.Time, e.Job)
			}
			state[e.Job] = waiting
			busy -= e.Need
		case sim.TraceComplete:
			if state[e.Job] != running {
				t.Fatalf("event %d (t=%g): job %d completed while not running", i, e.Time, e.Job)
			}
			state[e.Job] = done
			busy -= e.Need
		}
		if busy > w.Servers || busy < 0 {
			t.Fatalf("event %d (t=%g): %d servers busy of %d", i, e.Time, busy, w.Servers)
		}
		if busy != e.Busy {
			t.Fatalf("event %d (t=%g): engine reports %d busy, trace says %d", i, e.Time, e.Busy, busy)
		}
	}
	if complete {
		for id, s := range state {
			if s != done {
				t.Fatalf("job %d never completed (state %d)", id, s)
			}
		}
	}
}

// Bench runs b.N replications of arrivals measured arrivals each (plus a
// tenth as warm-up) and reports events per second, nanoseconds per event and
// heap allocations per event (the steady state allocates nothing: what
// remains is per-replication set-up, amortised over the run). Every policy
// package's benchmarks use it so their figures compare.
func Bench(b *testing.B, w *sim.Workload, p sim.Policy, arrivals int64) {
	b.Helper()
	BenchRun(b, func(cfg sim.Config) (*sim.Result, error) { return sim.Run(w, p, cfg) }, arrivals)
}

// BenchRun is Bench for any replication runner (a reference model such as
// SRPT-1, a plugin): run is called with seeds 1..b.N.
func BenchRun(b *testing.B, run func(sim.Config) (*sim.Result, error), arrivals int64) {
	b.Helper()
	var events uint64
	var ms0, ms1 runtime.MemStats
	runtime.ReadMemStats(&ms0)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		r, err := run(sim.Config{Seed: uint64(i + 1), Warmup: arrivals / 10, Arrivals: arrivals})
		if err != nil {
			b.Fatal(err)
		}
		events += r.Events
	}
	b.StopTimer()
	runtime.ReadMemStats(&ms1)
	b.ReportMetric(float64(events)/b.Elapsed().Seconds(), "events/s")
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(events), "ns/event")
	b.ReportMetric(float64(ms1.Mallocs-ms0.Mallocs)/float64(events), "allocs/event")
}

// Named builds the named workload at the given arrival rate, failing the
// test on error.
func Named(t testing.TB, name string, rate float64) *sim.Workload {
	t.Helper()
	spec, err := workload.Named(name)
	if err != nil {
		t.Fatal(err)
	}
	w, err := spec.Build(rate)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// BenchCase is one workload of a cross-policy benchmark.
type BenchCase struct {
	Name, Workload string
	Rate           float64
	Arrivals       int64
}

// SmallCases are the benchmark workloads shared by the preemptive and
// size-aware policy packages, so their figures compare: powers-of-two at
// ρ = 0.5, one-or-all at λ = 1 (ρ = 0.128), both stable for every policy
// benchmarked and for FCFS, and Borg cell B at λ = 2 (k = 2048, 26 classes,
// ρ = 0.41), where some policies (FCFS among them) are flagged unstable but
// still show the cost per event.
var SmallCases = []BenchCase{
	{"powers-of-two", "powers-of-two", 0.5 / 0.46875, 200000},
	{"one-or-all", "one-or-all", 1, 200000},
	{"borg-b", "borg-b", 2, 200000},
}

// BenchCases runs Bench for a fresh policy from mk on each case, as
// sub-benchmarks named after the cases.
func BenchCases(b *testing.B, cases []BenchCase, mk func() sim.Policy) {
	for _, bc := range cases {
		b.Run(bc.Name, func(b *testing.B) {
			Bench(b, Named(b, bc.Workload, bc.Rate), mk(), bc.Arrivals)
		})
	}
}

// Counter returns a policy counter of r, failing the test if it is missing.
func Counter(t testing.TB, r *sim.Result, name string) float64 {
	t.Helper()
	v, ok := r.Counter(name)
	if !ok {
		t.Fatalf("counter %q missing (have %v)", name, r.Counters)
	}
	return v
}

// CheckStarts checks that each job in want started exactly once, at the
// given instant (to 1e-9).
func CheckStarts(t testing.TB, evs []sim.TraceRecord, want map[int64]float64) {
	t.Helper()
	got := Starts(evs)
	for id, at := range want {
		if len(got[id]) != 1 || math.Abs(got[id][0]-at) > 1e-9 {
			t.Errorf("job %d started at %v, want [%v]", id, got[id], at)
		}
	}
}

// Mixed has six classes on k = 10, two of them sharing need 3 (so a
// need-grouped queue must interleave them in arrival order), exponential
// service of mean 1 or H2 of mean 2 and C² = 10; ρ = Σ share·need·E[S] / k
// = 3.5 / 10 λ = 0.35 λ. Policy tests compare an optimised policy's
// decisions with a naive scan's on it.
func Mixed(rate float64) *sim.Workload {
	e := dist.Must(dist.NewExponential(1))
	h := dist.Must(dist.NewHyperExp(2, 10))
	return &sim.Workload{Name: "mixed", Servers: 10, ArrivalRate: rate, Classes: []sim.Class{
		{Name: "a", Need: 1, Share: 0.4, Service: e}, {Name: "b", Need: 3, Share: 0.2, Service: h},
		{Name: "c", Need: 2, Share: 0.2, Service: e}, {Name: "d", Need: 10, Share: 0.05, Service: e},
		{Name: "e", Need: 3, Share: 0.1, Service: e}, {Name: "f", Need: 7, Share: 0.05, Service: h},
	}}
}

// Replicate runs n independent replications of w, each pass under a fresh
// policy from mk (MSER included), with seeds 1..n and cfg otherwise.
func Replicate(t testing.TB, w *sim.Workload, mk func() sim.Policy, n int, cfg sim.Config) []*sim.Result {
	t.Helper()
	out := make([]*sim.Result, n)
	for i := range out {
		c := cfg
		c.Seed = uint64(i + 1)
		r, err := sim.RunFresh(w, func() (sim.Policy, error) { return mk(), nil }, c)
		if err != nil {
			t.Fatal(err)
		}
		out[i] = r
	}
	return out
}

// CI is the Student-t confidence interval at level over f of independent
// replications.
func CI(rs []*sim.Result, f func(*sim.Result) float64, level float64) stats.Summary {
	xs := make([]float64, len(rs))
	for i, r := range rs {
		xs[i] = f(r)
	}
	return stats.MeanCI(xs, level)
}
