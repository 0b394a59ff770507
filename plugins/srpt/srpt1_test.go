package srpt_test

import (
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/msjfarm/msjfarm/internal/wire"
	"github.com/msjfarm/msjfarm/model/dist"
	"github.com/msjfarm/msjfarm/plugins/builtin"
	"github.com/msjfarm/msjfarm/plugins/fcfs"
	"github.com/msjfarm/msjfarm/plugins/maxweight"
	"github.com/msjfarm/msjfarm/plugins/srpt"
	"github.com/msjfarm/msjfarm/sim"
	"github.com/msjfarm/msjfarm/sim/rng"
	"github.com/msjfarm/msjfarm/sim/simtest"
	"github.com/msjfarm/msjfarm/sim/stats"
)

func oneClass(k, need int, rate float64) *sim.Workload {
	return &sim.Workload{Name: "one-class", Servers: k, ArrivalRate: rate, Classes: []sim.Class{
		{Name: "c", Need: need, Share: 1, Service: dist.Must(dist.NewExponential(1))},
	}}
}

func close(a, b, tol float64) bool { return math.Abs(a-b) <= tol*math.Max(1, math.Abs(b)) }

// TestSRPT1Trace: k = 4, classes need 1 (0), 4 (1), 2 (2); a job of need n
// and duration d has pooled size n·d/4.
//
//	t=0   job0 need 4, d 2 → size 2: starts 0
//	t=1   job1 need 1, d 2 → size 0.5 < job0's 1 left: job0 preempted,
//	      job1 runs 1–1.5                                  T1 = 0.5
//	t=1.2 job2 need 2, d 2 → size 1 > job1's 0.3 left: waits
//	t=1.5 job1 leaves; job0 (1 left) and job2 (1) tie, job0 is older: runs
//	      1.5–2.5                                          T0 = 2.5
//	t=2.5 job2 runs 2.5–3.5                                T2 = 2.3
//	t=3   job3 need 1, d 4 → size 1 > job2's 0.5 left: waits
//	t=3.5 job3 runs 3.5–4.5                                T3 = 1.5
//
// Waits T − size: job0 0.5, job1 0 (never waited), job2 1.3, job3 0.5. The
// server is busy throughout the window [0, 4.5]; ∫N dt = ΣT = 6.8.
func TestSRPT1Trace(t *testing.T) {
	w := simtest.TraceWorkload(4, []int{1, 4, 2}, []simtest.J{
		{At: 0, Size: 2, Class: 1}, {At: 1, Size: 2, Class: 0}, {At: 1.2, Size: 2, Class: 2}, {At: 3, Size: 4, Class: 0},
	})
	r, err := srpt.RunSRPT1(w, sim.Config{Arrivals: 4})
	if err != nil {
		t.Fatal(err)
	}
	const tol = 1e-12
	o := r.Overall
	checks := []struct {
		name      string
		got, want float64
	}{
		{"count", float64(o.Count), 4},
		{"mean response", o.MeanResponse, 6.8 / 4},
		{"mean wait", o.MeanWait, 2.3 / 4},
		{"P(wait)", o.PWait, 0.75},
		{"mean size (durations)", o.MeanSize, 10.0 / 4},
		{"class 0 response", r.Classes[0].MeanResponse, (0.5 + 1.5) / 2},
		{"class 1 response", r.Classes[1].MeanResponse, 2.5},
		{"class 2 response", r.Classes[2].MeanResponse, 2.3},
		{"window", r.Window, 4.5},
		{"utilisation", r.Utilization, 1},
		{"mean in system", r.MeanInSystem, 6.8 / 4.5},
		{"mean in queue", r.MeanInQueue, (6.8 - 4.5) / 4.5},
		{"throughput", r.Throughput, 4 / 4.5},
		{"preemptions", float64(r.Preemptions), 1},
		{"preempted jobs", float64(r.PreemptedJobs), 1},
		{"events", float64(r.Events), 8},
	}
	for _, c := range checks {
		if !close(c.got, c.want, tol) {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
	if r.Unstable || !r.SizeAware || r.Preemption != "resume" || r.Servers != 4 || r.Workload != "trace" || r.Engine != sim.Version {
		t.Errorf("result header: %+v", r)
	}
}

// TestNeedKIsSRPT1: when every job needs all k servers, the multiserver-job
// system is a single server and a job's pooled size n·d/k is its duration d:
// GreedySRPT and FirstFit-SRPT are then preemptive SRPT on one server, i.e.
// SRPT-1, sample path for sample path. With k = 4 the scaling by n/k = 1 is
// exact in floating point, so the results must agree to the last bit.
func TestNeedKIsSRPT1(t *testing.T) {
	w := oneClass(4, 4, 0.85)
	cfg := sim.Config{Seed: 5, Warmup: 1000, Arrivals: 50000}
	ref, err := srpt.RunSRPT1(w, cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []sim.Policy{&srpt.GreedySRPT{}, &srpt.FirstFitSRPT{}} {
		r, err := sim.Run(w, p, cfg)
		if err != nil {
			t.Fatal(err)
		}
		if r.Overall != ref.Overall || r.MeanInSystem != ref.MeanInSystem || r.Utilization != ref.Utilization ||
			r.Preemptions != ref.Preemptions || r.PreemptedJobs != ref.PreemptedJobs || r.Window != ref.Window {
			t.Errorf("%T: %+v %v, SRPT-1 %+v %v", p, r.Overall, r, ref.Overall, ref)
		}
	}
	t.Logf("SRPT-1 = GreedySRPT = FirstFitSRPT: %v", ref)
}

// mm1SRPT is the mean response time of M/M/1-SRPT with rate λ and mean size
// 1, by the Schrage–Miller formula (Harchol-Balter, Performance Modeling and
// Design of Computer Systems, §33):
//
//	E[T(x)] = λ(m₂(x) + x²(1−F(x))) / (2(1−ρ(x))²) + ∫₀ˣ dt/(1−ρ(t)),
//	ρ(x) = λ∫₀ˣ t dF = λ(1 − e^{−x}(1+x)),  m₂(x) = ∫₀ˣ t² dF = 2 − e^{−x}(x²+2x+2),
//
// integrated against e^{−x} dx numerically (Simpson, h = 10^-4 on [0, 60];
// the inner integral by the trapezoid rule on the same grid; errors far
// below 10^-5).
func mm1SRPT(lambda float64) float64 {
	const h, end = 1e-4, 60.0
	n := int(end / h)
	inner := 0.0
	g := func(x, inner float64) float64 {
		e := math.Exp(-x)
		rho := lambda * (1 - e*(1+x))
		m2 := 2 - e*(x*x+2*x+2)
		return (lambda*(m2+x*x*e)/(2*(1-rho)*(1-rho)) + inner) * e
	}
	inv := func(x float64) float64 { return 1 / (1 - lambda*(1-math.Exp(-x)*(1+x))) }
	sum := g(0, 0)
	for i := 1; i <= n; i++ {
		x := float64(i) * h
		inner += h / 2 * (inv(x-h) + inv(x))
		wgt := 4.0
		if i%2 == 0 {
			wgt = 2
		}
		if i == n {
			wgt = 1
		}
		sum += wgt * g(x, inner)
	}
	return sum * h / 3
}

// TestSRPT1MM1: SRPT-1 of one class of need 1 on k = 1 is M/M/1-SRPT; at
// ρ = 0.8 its mean response time must lie in the 95% CI over 10
// independent replications (seeds 1..10) around the Schrage–Miller value,
// and below FCFS's 1/(1−ρ) = 5. Pooling k = 4 servers for need-1 jobs with
// λ = 3.2 is the same queue 4 times faster: E[T] is a quarter of it.
// Utilisation must be ρ and Little's law must hold, within their CIs.
func TestSRPT1MM1(t *testing.T) {
	exact := mm1SRPT(0.8)
	t.Logf("M/M/1-SRPT, ρ = 0.8: E[T] = %.5f (FCFS: 5)", exact)
	if !(exact < 5) {
		t.Fatalf("Schrage–Miller %v not below FCFS's 5", exact)
	}
	for _, tc := range []struct {
		w     *sim.Workload
		exact float64
	}{{oneClass(1, 1, 0.8), exact}, {oneClass(4, 1, 3.2), exact / 4}} {
		var ts, us, little []float64
		for seed := uint64(1); seed <= 10; seed++ {
			r, err := srpt.RunSRPT1(tc.w, sim.Config{Seed: seed, Warmup: 20000, Arrivals: 200000})
			if err != nil {
				t.Fatal(err)
			}
			ts = append(ts, r.Overall.MeanResponse)
			us = append(us, r.Utilization)
			little = append(little, r.MeanInSystem-r.Throughput*r.Overall.MeanResponse)
		}
		s := stats.MeanCI(ts, 0.95)
		t.Logf("k=%d: E[T] = %.5f ± %.5f, exact %.5f", tc.w.Servers, s.Mean, s.HalfWidth, tc.exact)
		if math.Abs(s.Mean-tc.exact) > s.HalfWidth {
			t.Errorf("k=%d: exact %.5f outside the CI %.5f ± %.5f", tc.w.Servers, tc.exact, s.Mean, s.HalfWidth)
		}
		if u := stats.MeanCI(us, 0.95); math.Abs(u.Mean-0.8) > u.HalfWidth {
			t.Errorf("k=%d: utilisation %.5f ± %.5f, load 0.8", tc.w.Servers, u.Mean, u.HalfWidth)
		}
		if l := stats.MeanCI(little, 0.95); math.Abs(l.Mean) > l.HalfWidth {
			t.Errorf("k=%d: N − λT = %.5f ± %.5f", tc.w.Servers, l.Mean, l.HalfWidth)
		}
	}
}

// TestSRPT1LowerBound: SRPT on the pooled server minimises the number in
// system at every instant over every policy of a rate-1 server that may
// split its capacity (Schrage; S §4.1), and any multiserver-job schedule is
// such a policy. On a finite trace that every policy drains, ΣT = ∫N dt, so
// SRPT-1's total response time is at most every policy's.
func TestSRPT1LowerBound(t *testing.T) {
	for _, rho := range []float64{0.5, 0.95} {
		lowerBound(t, rho)
	}
}

func lowerBound(t *testing.T, rho float64) {
	r := rng.New(3, 4)
	needs := []int{1, 2, 4, 8}
	var jobs []simtest.J
	at := 0.0
	for i := 0; i < 4000; i++ {
		at += r.Exp() / (rho / 0.46875) // powers-of-two jobs at load rho
		jobs = append(jobs, simtest.J{At: at, Size: r.Exp(), Class: r.IntN(4)})
	}
	w := simtest.TraceWorkload(8, needs, jobs)
	cfg := sim.Config{Arrivals: int64(len(jobs))}
	ref, err := srpt.RunSRPT1(w, cfg)
	if err != nil {
		t.Fatal(err)
	}
	total := func(r *sim.Result) float64 { return r.Overall.MeanResponse * float64(r.Overall.Count) }
	for _, p := range []sim.Policy{&srpt.GreedySRPT{}, &srpt.FirstFitSRPT{}, &maxweight.MaxWeight{}, &maxweight.Myopic{}, &fcfs.FCFS{}} {
		res, err := sim.Run(w, p, cfg)
		if err != nil {
			t.Fatal(err)
		}
		if res.Overall.Count != int64(len(jobs)) || ref.Overall.Count != int64(len(jobs)) {
			t.Fatalf("%T: %d jobs left, SRPT-1 %d, want %d", p, res.Overall.Count, ref.Overall.Count, len(jobs))
		}
		t.Logf("ρ=%.2f %T: ΣT = %.1f, SRPT-1 %.1f", rho, p, total(res), total(ref))
		if total(res) < total(ref)*(1-1e-12) {
			t.Errorf("%T: ΣT = %v below SRPT-1's %v", p, total(res), total(ref))
		}
	}
}

// TestSRPT1CommonRandomNumbers: SRPT-1 measures the very jobs sim.Run
// measures for the same workload and seed: with warm-up, per-class counts
// and mean durations equal FCFS's (at a load where FCFS is stable).
func TestSRPT1CommonRandomNumbers(t *testing.T) {
	w := powersOfTwo(t, "powers-of-two", 0.5)
	cfg := sim.Config{Seed: 7, Warmup: 3000, Arrivals: 30000}
	ref, err := srpt.RunSRPT1(w, cfg)
	if err != nil {
		t.Fatal(err)
	}
	f, err := sim.Run(w, &fcfs.FCFS{}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	for i := range f.Classes {
		a, b := ref.Classes[i], f.Classes[i]
		if a.Count != b.Count || !close(a.MeanSize, b.MeanSize, 1e-12) || a.Need != b.Need || a.Name != b.Name {
			t.Errorf("class %d: SRPT-1 %+v, FCFS %+v", i, a, b)
		}
	}
	if ref.Overall.Count != cfg.Arrivals || ref.Warmup != cfg.Warmup || ref.Arrivals != cfg.Arrivals || ref.Seed != 7 {
		t.Errorf("SRPT-1 header/count: %+v", ref)
	}
	if !close(ref.OfferedLoad, 0.5, 1e-12) {
		t.Errorf("offered load %v", ref.OfferedLoad)
	}
	// The job sequence's window: the same arrivals, so the same window.
	if ref.Window != f.Window {
		t.Errorf("window %v, FCFS %v", ref.Window, f.Window)
	}
}

// TestSRPT1Config: MSER, series, progress, instability and config errors
// behave as in sim.Run.
func TestSRPT1Config(t *testing.T) {
	w := powersOfTwo(t, "powers-of-two", 0.8)
	r, err := srpt.RunSRPT1(w, sim.Config{Seed: 1, Warmup: 2000, Arrivals: 20000, MSER: true})
	if err != nil {
		t.Fatal(err)
	}
	if r.Warmup != 5*r.MSERBatches || r.Warmup+r.Arrivals != 22000 || r.Overall.Count != r.Arrivals {
		t.Errorf("MSER: warmup %d (batches %d), arrivals %d, count %d", r.Warmup, r.MSERBatches, r.Arrivals, r.Overall.Count)
	}
	var calls int
	var last int64
	r, err = srpt.RunSRPT1(w, sim.Config{Seed: 1, Arrivals: 5000, SeriesInterval: 10, SeriesMax: 50,
		Progress: func(done, total int64) { calls++; last = done }})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Series) != 50 || r.Series[1].T != 10 || calls < 100 || last != 5000 {
		t.Errorf("series %d samples (second at %v), progress %d calls ending at %d", len(r.Series), r.Series[1].T, calls, last)
	}
	// ρ = 1.2: overloaded even when pooled.
	r, err = srpt.RunSRPT1(powersOfTwo(t, "powers-of-two", 1.2), sim.Config{Seed: 1, Warmup: 1000, Arrivals: 50000})
	if err != nil {
		t.Fatal(err)
	}
	if !r.Unstable {
		t.Errorf("ρ = 1.2 not flagged: %v", r)
	}
	r, err = srpt.RunSRPT1(powersOfTwo(t, "powers-of-two", 1.2), sim.Config{Seed: 1, Arrivals: 50000, MaxInSystem: 100})
	if err != nil || !r.Truncated || r.Instability.Reasons[0] != "truncated" || !r.LowerBound {
		t.Errorf("max_in_system: %v %v", r, err)
	}
	for _, tc := range []struct {
		cfg  sim.Config
		want string
	}{
		{sim.Config{}, "arrivals: must be >= 1"},
		{sim.Config{Arrivals: 10, Warmup: -1}, "warmup: must be >= 0"},
		{sim.Config{Arrivals: 10, MSER: true}, "MSER-5 needs at least 20"},
		{sim.Config{Arrivals: 10, SeriesInterval: math.NaN()}, "series_interval"},
	} {
		if _, err := srpt.RunSRPT1(w, tc.cfg); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: error %v, want %q", tc.cfg, err, tc.want)
		}
	}
	tw := simtest.TraceWorkload(2, []int{1}, []simtest.J{{At: 0, Size: 1}})
	if _, err := srpt.RunSRPT1(tw, sim.Config{Arrivals: 2}); err == nil || !strings.Contains(err.Error(), "exceeds the trace") {
		t.Errorf("short trace: %v", err)
	}
	// As served: a reference model beside the policies, taking no parameters.
	if len(srpt.References) != 2 || srpt.References[0].Name != "srpt-1" || srpt.References[1].Name != "gittins-1" {
		t.Fatalf("references %+v", srpt.References)
	}
	for _, s := range srpt.Policies {
		if s.Name == "srpt-1" {
			t.Error("srpt-1 is listed as an engine policy")
		}
	}
	ref, err := builtin.Lookup("SRPT-1")
	if err != nil || ref.New != nil || ref.Reference == nil {
		t.Fatalf("catalogue entry %+v, %v", ref, err)
	}
	if _, err := ref.Run(w, map[string]any{"order": "size"}, sim.Config{Arrivals: 10}); err == nil || !strings.Contains(err.Error(), "no parameters") {
		t.Errorf("srpt-1 with a parameter: %v", err)
	}
	if p, err := (builtin.Catalog{}).Schema("srpt-1"); err != nil || len(p) != 0 {
		t.Errorf("srpt-1 schema %v, %v", p, err)
	}
	if a, b := mustRun(t, ref, w), mustRun(t, ref, w); !reflect.DeepEqual(a, b) {
		t.Error("srpt-1 is not deterministic")
	}
}

func mustRun(t *testing.T, e wire.Entry, w *sim.Workload) *sim.Result {
	t.Helper()
	r, err := e.Run(w, nil, sim.Config{Seed: 3, Warmup: 100, Arrivals: 10000})
	if err != nil {
		t.Fatal(err)
	}
	return r
}
