package srpt_test

import (
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/msjfarm/msjfarm/model/dist"
	"github.com/msjfarm/msjfarm/model/workload"
	"github.com/msjfarm/msjfarm/plugins/builtin"
	"github.com/msjfarm/msjfarm/plugins/srpt"
	"github.com/msjfarm/msjfarm/sim"
	"github.com/msjfarm/msjfarm/sim/simtest"
)

// TestGittins1Trace, by hand. k = 2; class 0 needs 2 (sizes 3: pooled size
// 2·3/2 = 3), class 1 needs 1 (sizes 2: pooled 1). simtest.TraceWorkload
// makes each class deterministic at its mean, so ranks are remaining
// pooled sizes (Gittins on deterministic sizes is SRPT):
//
//	t=0    job 0 (class 0, rank 3) starts.
//	t=1    job 1 (class 1, rank 1) < job 0's 3 − 1 = 2: preempts; runs 1–2.
//	t=2    job 0 resumes (rank 2).
//	t=2.5  job 2 (class 1, rank 1) < job 0's 1.5: preempts; runs 2.5–3.5.
//	t=3.5  job 0 resumes with 3 − 1 − 0.5 = 1.5 left, ends 5.
//
// Response times: 5, 1, 1.
func TestGittins1Trace(t *testing.T) {
	w := simtest.TraceWorkload(2, []int{2, 1}, []simtest.J{{At: 0, Size: 3, Class: 0}, {At: 1, Size: 2, Class: 1}, {At: 2.5, Size: 2, Class: 1}})
	var evs []sim.TraceRecord
	r, err := srpt.RunGittins1(w, sim.Config{Arrivals: 3, Observer: func(e sim.TraceRecord) { evs = append(evs, e) }})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := simtest.Starts(evs), map[int64][]float64{0: {0, 2, 3.5}, 1: {1}, 2: {2.5}}; !reflect.DeepEqual(got, want) {
		t.Errorf("starts = %v, want %v", got, want)
	}
	if m := 7.0 / 3; math.Abs(r.Overall.MeanResponse-m) > 1e-12 || r.Preemptions != 2 || r.SizeAware || r.Servers != 2 {
		t.Errorf("mean response %v (want %v), preemptions %d (want 2), size-aware %v, servers %d", r.Overall.MeanResponse, m, r.Preemptions, r.SizeAware, r.Servers)
	}
}

// TestGittins1TieKeepsEarlier: a job whose rank ties the running job's, on
// arrival or when the running job's rank rises to it at an atom, does not
// preempt it (ties go to the earlier arrival). k = 1, one class of need 1 with sizes 1 or 3, equally likely.
// Ranks by hand, G(a) = inf over Δ of E[min(X−a, Δ) | X > a] / P(X−a ≤ Δ |
// X > a):
//
//	age 0:        Δ = 1: 1/½ = 2;  Δ = 3: 2/1 = 2     → G = 2
//	age a in (0, 1): Δ = 1−a: (1−a)/½ = 2 − 2a       → G = 2 − 2a
//	age 1 (outlived the atom 1): 2 left for sure     → G = 2
//
//	t=0    job 0 (size 3) starts.
//	t=0.5  job 1 (size 1) arrives with rank 2 > job 0's 1: waits. Job 0's
//	       rank reaches 2 at age 1, a tie with job 1: job 0 keeps running.
//	t=3    job 0 ends; job 1 runs 3–4.
func TestGittins1TieKeepsEarlier(t *testing.T) {
	w := simtest.TraceWorkload(1, []int{1}, []simtest.J{{At: 0, Size: 3, Class: 0}, {At: 0.5, Size: 1, Class: 0}})
	w.Classes[0].Service = dist.Must(dist.NewEmpirical([]float64{1, 3}))
	var evs []sim.TraceRecord
	r, err := srpt.RunGittins1(w, sim.Config{Arrivals: 2, Observer: func(e sim.TraceRecord) { evs = append(evs, e) }})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := simtest.Starts(evs), map[int64][]float64{0: {0}, 1: {3}}; !reflect.DeepEqual(got, want) {
		t.Errorf("starts = %v, want %v", got, want)
	}
	if r.Preemptions != 0 {
		t.Errorf("%d preemptions, want 0", r.Preemptions)
	}
	// Exponential sizes: the rank is the mean at every age, so an arrival
	// ties the running job and waits (M/M/1's mean response time would
	// not tell: preemptive LCFS has the same).
	//
	//	t=0  job 0 (size 2) starts; t=1 job 1 (size 1) ties: waits; runs 2–3.
	w = simtest.TraceWorkload(1, []int{1}, []simtest.J{{At: 0, Size: 2, Class: 0}, {At: 1, Size: 1, Class: 0}})
	w.Classes[0].Service = dist.Must(dist.NewExponential(1.5))
	evs = nil
	if r, err = srpt.RunGittins1(w, sim.Config{Arrivals: 2, Observer: func(e sim.TraceRecord) { evs = append(evs, e) }}); err != nil {
		t.Fatal(err)
	}
	if got, want := simtest.Starts(evs), map[int64][]float64{0: {0}, 1: {2}}; !reflect.DeepEqual(got, want) || r.Preemptions != 0 {
		t.Errorf("exponential: starts = %v, want %v; %d preemptions, want 0", got, want, r.Preemptions)
	}
}

// gittinsCI runs 10 replications of Gittins-1 and returns the 95% CI of
// f.
func gittinsCI(t *testing.T, w *sim.Workload, cfg sim.Config, f func(*sim.Result) float64) (mean, half float64) {
	t.Helper()
	rs := make([]*sim.Result, 10)
	for i := range rs {
		c := cfg
		c.Seed = uint64(i + 1)
		r, err := srpt.RunGittins1(w, c)
		if err != nil {
			t.Fatal(err)
		}
		rs[i] = r
	}
	s := simtest.CI(rs, f, 0.95)
	return s.Mean, s.HalfWidth
}

// TestGittins1ClosedForms: Gittins-1 against closed forms, 95% CI over 10
// replications of 200,000 arrivals.
//
//   - One class, exponential sizes: the rank is constant, so Gittins never
//     preempts and serves in arrival order: M/M/1. k = 4, need 2, mean
//     duration 1: pooled sizes exponential of mean 2·1/4 = 0.5 (μ = 2); at
//     λ = 1.5, E[T] = 1/(μ − λ) = 2.
//   - One class, deterministic duration 2, need 1 of k = 2 (pooled size d =
//     1): the rank d − t falls while served, so Gittins is FCFS: M/D/1,
//     E[T] = d + λd²/(2(1 − λd)) = 1 + 0.7/0.6 = 2.1667 at λ = 0.7.
//   - Two classes, exponential, equal shares, k = 4: class A need 1 mean 1
//     (pooled mean 0.25), class B need 4 mean 1 (pooled mean 1). Ranks are
//     the pooled means, so A has preemptive priority over B: M/M/1 with
//     preemptive-resume priority. At λ = 1 (λ_A = λ_B = 0.5): ρ_A = 0.125,
//     ρ_B = 0.5; E[T_A] = m_A/(1 − ρ_A) = 0.25/0.875 = 0.285714; E[T_B] =
//     m_B/(1 − ρ_A) + (λ_A m_A² + λ_B m_B²)/((1 − ρ_A)(1 − ρ_A − ρ_B)) —
//     the residual work Σλ_i E[S_i²]/2 with E[S²] = 2m² — = 1/0.875 +
//     0.53125/(0.875·0.375) = 2.761905.
func TestGittins1ClosedForms(t *testing.T) {
	cfg := sim.Config{Warmup: 20000, Arrivals: 200000}
	exp := func(m float64) dist.Dist { return dist.Must(dist.NewExponential(m)) }
	cases := []struct {
		name string
		w    *sim.Workload
		f    func(*sim.Result) float64
		want float64
	}{
		{"M/M/1", &sim.Workload{Name: "exp", Servers: 4, ArrivalRate: 1.5, Classes: []sim.Class{{Need: 2, Share: 1, Service: exp(1)}}},
			func(r *sim.Result) float64 { return r.Overall.MeanResponse }, 2},
		{"M/D/1", &sim.Workload{Name: "det", Servers: 2, ArrivalRate: 0.7, Classes: []sim.Class{{Need: 1, Share: 1, Service: dist.Must(dist.NewDeterministic(2))}}},
			func(r *sim.Result) float64 { return r.Overall.MeanResponse }, 1 + 0.7/(2*0.3)},
	}
	prio := &sim.Workload{Name: "prio", Servers: 4, ArrivalRate: 1, Classes: []sim.Class{{Name: "A", Need: 1, Share: 1, Service: exp(1)}, {Name: "B", Need: 4, Share: 1, Service: exp(1)}}}
	cases = append(cases,
		struct {
			name string
			w    *sim.Workload
			f    func(*sim.Result) float64
			want float64
		}{"priority A", prio, func(r *sim.Result) float64 { return r.Classes[0].MeanResponse }, 0.25 / 0.875},
		struct {
			name string
			w    *sim.Workload
			f    func(*sim.Result) float64
			want float64
		}{"priority B", prio, func(r *sim.Result) float64 { return r.Classes[1].MeanResponse }, 1/0.875 + 0.53125/(0.875*0.375)})
	for _, c := range cases {
		m, h := gittinsCI(t, c.w, cfg, c.f)
		t.Logf("%s: %.4f ± %.4f, closed form %.4f", c.name, m, h, c.want)
		if math.Abs(m-c.want) > h {
			t.Errorf("%s: %.4f ± %.4f, closed form %.4f", c.name, m, h, c.want)
		}
	}
}

// TestGittins1Between: with hyperexponential (C² = 10) and two-point
// durations, where Gittins preempts at rank crossings, its mean response
// time lies between SRPT-1's (optimal with sizes known) and the M/G/1 FCFS
// Pollaczek–Khinchine value E[S] + λE[S²]/(2(1 − ρ)) (Gittins is optimal
// among size-blind policies, FCFS is one), paired over 10 replications.
// Two-point: durations 1 w.p. 0.9 and 20 w.p. 0.1 (empirical), k = 1.
func TestGittins1Between(t *testing.T) {
	cfg := sim.Config{Warmup: 5000, Arrivals: 50000}
	two := dist.Must(dist.NewEmpirical([]float64{1, 1, 1, 1, 1, 1, 1, 1, 1, 20}))
	h2 := dist.Must(dist.NewHyperExp(1, 10))
	for _, c := range []struct {
		name     string
		w        *sim.Workload
		mean, m2 float64 // pooled E[S], E[S²]
	}{
		{"two-point", &sim.Workload{Name: "two", Servers: 1, ArrivalRate: 0.25, Classes: []sim.Class{{Need: 1, Share: 1, Service: two}}}, 2.9, 0.9 + 0.1*400},
		{"H2", &sim.Workload{Name: "h2", Servers: 2, ArrivalRate: 1.2, Classes: []sim.Class{{Need: 1, Share: 1, Service: h2}}}, 0.5, 0.25 * 11},
	} {
		lam := c.w.ArrivalRate
		pk := c.mean + lam*c.m2/(2*(1-lam*c.mean))
		g, gh := gittinsCI(t, c.w, cfg, func(r *sim.Result) float64 { return r.Overall.MeanResponse })
		var srpt1 []float64
		for i := range 10 {
			cc := cfg
			cc.Seed = uint64(i + 1)
			r, err := srpt.RunSRPT1(c.w, cc)
			if err != nil {
				t.Fatal(err)
			}
			srpt1 = append(srpt1, r.Overall.MeanResponse)
		}
		var s float64
		for _, x := range srpt1 {
			s += x
		}
		s /= 10
		t.Logf("%s: SRPT-1 %.4f ≤ Gittins-1 %.4f ± %.4f ≤ FCFS (P-K) %.4f", c.name, s, g, gh, pk)
		if !(g+gh > s && g-gh < pk) || !(g < pk) {
			t.Errorf("%s: Gittins-1 %.4f ± %.4f not between SRPT-1 %.4f and P-K %.4f", c.name, g, gh, s, pk)
		}
	}
}

func TestGittins1Unsupported(t *testing.T) {
	w := &sim.Workload{Name: "ln", Servers: 2, ArrivalRate: 1, Classes: []sim.Class{{Name: "ln", Need: 1, Share: 1, Service: dist.Must(dist.NewLognormal(1, 2))}}}
	_, err := srpt.RunGittins1(w, sim.Config{Arrivals: 10})
	if err == nil || !strings.Contains(err.Error(), `class 0 ("ln")`) {
		t.Errorf("err = %v, want it to name the class", err)
	}
}

// TestGittins1Invariants: the engine's invariants on a long run with
// crossings (H2 and two-point classes on k = 8; ρ = 1.2·15.5/28 = 0.66).
func TestGittins1Invariants(t *testing.T) {
	w := &sim.Workload{Name: "mix", Servers: 8, ArrivalRate: 1.2, Classes: []sim.Class{
		{Need: 1, Share: 2, Service: dist.Must(dist.NewHyperExp(1, 10))},
		{Need: 4, Share: 1, Service: dist.Must(dist.NewEmpirical([]float64{0.5, 0.5, 0.5, 8}))},
		{Need: 8, Share: 0.5, Service: dist.Must(dist.NewExponential(1))},
	}}
	var evs []sim.TraceRecord
	r, err := srpt.RunGittins1(w, sim.Config{Seed: 2, Warmup: 1000, Arrivals: 100000, Observer: func(e sim.TraceRecord) { evs = append(evs, e) }})
	if err != nil {
		t.Fatal(err)
	}
	pooled := &sim.Workload{Name: "pooled", Servers: 1, Classes: []sim.Class{{Need: 1}}}
	simtest.CheckInvariants(t, pooled, &srpt.Gittins1{}, evs, false)
	if r.Preemptions == 0 || r.Unstable {
		t.Errorf("preemptions %d, unstable %v", r.Preemptions, r.Unstable)
	}
}

// BenchmarkGittins1 reports the reference model with simtest.Bench's
// metrics on the shared cases.
func BenchmarkGittins1(b *testing.B) {
	for _, bc := range simtest.SmallCases {
		b.Run(bc.Name, func(b *testing.B) {
			w := simtest.Named(b, bc.Workload, bc.Rate)
			simtest.BenchRun(b, func(cfg sim.Config) (*sim.Result, error) { return srpt.RunGittins1(w, cfg) }, bc.Arrivals)
		})
	}
}

// TestGittins1Served: Gittins-1 is in the catalogue as a reference model
// (like SRPT-1), runs through the catalogue entry as RunGittins1 does, and
// takes no parameters.
func TestGittins1Served(t *testing.T) {
	ref, err := builtin.Lookup("gittins-1")
	if err != nil || ref.New != nil || ref.Reference == nil {
		t.Fatalf("catalogue entry %+v, %v", ref, err)
	}
	spec, err := workload.Named("one-or-all")
	if err != nil {
		t.Fatal(err)
	}
	w, err := spec.Build(5)
	if err != nil {
		t.Fatal(err)
	}
	cfg := sim.Config{Seed: 3, Arrivals: 2000}
	got, err := ref.Run(w, nil, cfg)
	if err != nil {
		t.Fatal(err)
	}
	want, err := srpt.RunGittins1(w, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("catalogue run differs from RunGittins1")
	}
	if _, err := ref.Run(w, map[string]any{"x": 1}, cfg); err == nil {
		t.Error("gittins-1 accepted a parameter")
	}
}

// TestGittins1MSER: Gittins-1 runs under MSER-5 warm-up like every
// reference model (a fresh instance per pass), and reports the truncation.
func TestGittins1MSER(t *testing.T) {
	spec, err := workload.Named("one-or-all")
	if err != nil {
		t.Fatal(err)
	}
	w, err := spec.Build(5)
	if err != nil {
		t.Fatal(err)
	}
	r, err := srpt.RunGittins1(w, sim.Config{Seed: 1, Arrivals: 5000, MSER: true})
	if err != nil {
		t.Fatal(err)
	}
	if r.Warmup < 0 || r.Warmup%5 != 0 || r.Overall.Count == 0 {
		t.Fatalf("MSER run: warmup %d, %d measured jobs", r.Warmup, r.Overall.Count)
	}
}
