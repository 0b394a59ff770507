package sim_test

import (
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/msjfarm/msjfarm/model/dist"
	"github.com/msjfarm/msjfarm/model/workload"
	"github.com/msjfarm/msjfarm/plugins/fcfs"
	"github.com/msjfarm/msjfarm/sim"
	"github.com/msjfarm/msjfarm/sim/simtest"
	"github.com/msjfarm/msjfarm/sim/stats"
)

func expD(mean float64) dist.Dist { return dist.Must(dist.NewExponential(mean)) }

func single(k int, rate float64, svc dist.Dist) *sim.Workload {
	return &sim.Workload{Name: "single", Servers: k, ArrivalRate: rate,
		Classes: []sim.Class{{Name: "c", Need: 1, Share: 1, Service: svc}}}
}

// replicate runs n independent FCFS replications (seeds 1..n) and returns
// their results.
func replicate(t *testing.T, w *sim.Workload, n int, cfg sim.Config) []*sim.Result {
	return simtest.Replicate(t, w, func() sim.Policy { return &fcfs.FCFS{} }, n, cfg)
}

func ci(rs []*sim.Result, f func(*sim.Result) float64) stats.Summary { return simtest.CI(rs, f, 0.95) }

func meanT(r *sim.Result) float64 { return r.Overall.MeanResponse }

// Each test below compares the Student-t 95% CI over independent
// replications (fixed seeds 1..n, so deterministic) with an exact value.
func TestClosedForms(t *testing.T) {
	det := dist.Must(dist.NewDeterministic(1))
	cases := []struct {
		name  string
		w     *sim.Workload
		exact float64
	}{
		// M/M/1, λ = 0.9, μ = 1: E[T] = 1/(μ−λ) = 10.
		{"M/M/1 rho=0.9", single(1, 0.9, expD(1)), stats.MMkMeanResponse(1, 0.9, 1)},
		// M/M/8, λ = 7.2, μ = 1 (ρ = 0.9): E[T] = C(8, 7.2)/(8−7.2) + 1 (Erlang C).
		{"M/M/8 rho=0.9", single(8, 7.2, expD(1)), stats.MMkMeanResponse(8, 7.2, 1)},
		// M/D/1, λ = 0.8, S = 1: P–K gives E[T] = 1 + 0.8/(2·0.2) = 3.
		{"M/D/1 rho=0.8", single(1, 0.8, det), stats.MG1MeanResponse(0.8, 1, 0)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rs := replicate(t, tc.w, 10, sim.Config{Warmup: 20000, Arrivals: 200000})
			s := ci(rs, meanT)
			t.Logf("E[T] = %.4f ± %.4f (exact %.4f)", s.Mean, s.HalfWidth, tc.exact)
			if math.Abs(s.Mean-tc.exact) > s.HalfWidth {
				t.Errorf("exact %.4f outside the 95%% CI %.4f ± %.4f", tc.exact, s.Mean, s.HalfWidth)
			}
			u := ci(rs, func(r *sim.Result) float64 { return r.Utilization })
			if rho := tc.w.Load(); math.Abs(u.Mean-rho) > u.HalfWidth {
				t.Errorf("utilisation %.4f ± %.4f, load %.4f", u.Mean, u.HalfWidth, rho)
			}
		})
	}
}

// TestLittleAndUtilisation: on a multi-class workload (needs 1, 2, 4 on k = 8
// with exponential, deterministic and hyperexponential sizes), the time
// average in system equals throughput × mean response time (Little's law),
// and utilisation equals the offered load, each within the CI.
func TestLittleAndUtilisation(t *testing.T) {
	w := &sim.Workload{Name: "mixed", Servers: 8, ArrivalRate: 2, Classes: []sim.Class{
		{Name: "a", Need: 1, Share: 0.5, Service: expD(1)},
		{Name: "b", Need: 2, Share: 0.3, Service: dist.Must(dist.NewDeterministic(1.5))},
		{Name: "c", Need: 4, Share: 0.2, Service: dist.Must(dist.NewHyperExp(1, 5))},
	}}
	// ρ = 2·(0.5·1·1 + 0.3·2·1.5 + 0.2·4·1)/8 = 2·2.2/8 = 0.55.
	if rho := w.Load(); math.Abs(rho-0.55) > 1e-12 {
		t.Fatalf("load %v, want 0.55", rho)
	}
	rs := replicate(t, w, 10, sim.Config{Warmup: 10000, Arrivals: 100000})
	little := ci(rs, func(r *sim.Result) float64 {
		return r.MeanInSystem - r.Throughput*r.Overall.MeanResponse
	})
	t.Logf("L − λT = %.5f ± %.5f", little.Mean, little.HalfWidth)
	if math.Abs(little.Mean) > little.HalfWidth {
		t.Errorf("Little's law: L − λT = %.5f ± %.5f excludes 0", little.Mean, little.HalfWidth)
	}
	u := ci(rs, func(r *sim.Result) float64 { return r.Utilization })
	if math.Abs(u.Mean-0.55) > u.HalfWidth {
		t.Errorf("utilisation %.4f ± %.4f, want 0.55", u.Mean, u.HalfWidth)
	}
	for _, r := range rs {
		var n int64
		for _, c := range r.Classes {
			n += c.Count
		}
		if n != r.Overall.Count || n != r.Arrivals {
			t.Fatalf("counts: classes %d, overall %d, arrivals %d", n, r.Overall.Count, r.Arrivals)
		}
		if r.Unstable {
			t.Fatalf("stable system flagged unstable: %+v", r.Instability)
		}
	}
}

// TestOneOrAllLowLoad: one-or-all FCFS (k = 32, p1 = 0.9, exp mean 1) at
// λ = 0.2. To first order in λ, a light job waits only behind a heavy job in
// service (probability 0.1λ, mean residual 1) and a heavy job waits for any
// job in service (probability ≈ λ, mean residual 1), so
// E[W] ≈ 0.9·0.1λ + 0.1·λ = 0.19λ = 0.038 and E[T] ≈ 1.038: response time
// close to the service time. Higher-order terms are O(λ²)/O(λ) ≈ 20% of the
// first-order value, the tolerance used here on top of the CI.
func TestOneOrAllLowLoad(t *testing.T) {
	spec, err := workload.Named("one-or-all")
	if err != nil {
		t.Fatal(err)
	}
	w, err := spec.Build(0.2)
	if err != nil {
		t.Fatal(err)
	}
	rs := replicate(t, w, 10, sim.Config{Warmup: 1000, Arrivals: 50000})
	wait := ci(rs, func(r *sim.Result) float64 { return r.Overall.MeanWait })
	resp := ci(rs, meanT)
	first := 0.19 * 0.2
	t.Logf("E[W] = %.4f ± %.4f (first order %.4f), E[T] = %.4f", wait.Mean, wait.HalfWidth, first, resp.Mean)
	if math.Abs(wait.Mean-first) > 0.2*first+wait.HalfWidth {
		t.Errorf("E[W] = %.4f ± %.4f, first-order %.4f", wait.Mean, wait.HalfWidth, first)
	}
	if math.Abs(resp.Mean-(1+first)) > 0.2*first+resp.HalfWidth {
		t.Errorf("E[T] = %.4f, want about %.4f", resp.Mean, 1+first)
	}
}

// TestConfigBounds: the counts are at most 2^53 (MaxArrivals), the
// series at most MaxSeriesMax samples and the cap on jobs in system at
// most MaxMaxInSystem, each refused naming its field. Unbounded,
// warmup+arrivals of 2^63-1 wrapped negative, series_max 2^63-1 at an
// interval of 1e-12 took a sample per event until 24 GB, and
// max_in_system 1e18 switched off the memory guard the cap is.
func TestConfigBounds(t *testing.T) {
	const most = int64(sim.MaxArrivals)
	for _, c := range []struct {
		name string
		cfg  sim.Config
		want string // "" valid
	}{
		{"arrivals at the most", sim.Config{Arrivals: most}, ""},
		{"arrivals past", sim.Config{Arrivals: math.MaxInt64}, "run.arrivals: must be at most 2^53 = 9007199254740992 (counts stay exact as float64), got 9223372036854775807"},
		{"warmup past", sim.Config{Arrivals: 1, Warmup: math.MaxInt64}, "run.warmup: must be at most 2^53 = 9007199254740992 (counts stay exact as float64), got 9223372036854775807"},
		{"sum past", sim.Config{Arrivals: most, Warmup: 1}, "run.arrivals: warmup+arrivals = 9007199254740993, more than 2^53 = 9007199254740992 (counts stay exact as float64)"},
		{"sum of two past, with mser", sim.Config{Arrivals: math.MaxInt64, Warmup: math.MaxInt64, MSER: true}, "run.arrivals: must be at most 2^53"},
		{"drain_limit past", sim.Config{Arrivals: 1, DrainLimit: most + 1}, "run.drain_limit: must be at most 2^53 = 9007199254740992, got 9007199254740993"},
		{"series_max at the most", sim.Config{Arrivals: 1, SeriesInterval: 1e-12, SeriesMax: sim.MaxSeriesMax}, ""},
		{"series_max past", sim.Config{Arrivals: 1, SeriesInterval: 1e-12, SeriesMax: math.MaxInt}, "run.series_max: must be at most 1000000 (10^6 samples: a 65 MB result per replication), got " + strconv.Itoa(math.MaxInt)},
		{"max_in_system at the most", sim.Config{Arrivals: 1, MaxInSystem: sim.MaxMaxInSystem}, ""},
		// What the long runs of docs/design.md set (TestBorgBLongRunsStable).
		{"max_in_system of the long runs", sim.Config{Arrivals: 1, MaxInSystem: 20_000_000}, ""},
		{"max_in_system past", sim.Config{Arrivals: 1, MaxInSystem: sim.MaxMaxInSystem + 1}, "run.max_in_system: must be at most 33554432 (2^25 jobs: 16 GiB at 512 bytes a job, 32 times the default's 512 MiB budget; 0 is the default, 1048576), got 33554433"},
		{"max_in_system far past", sim.Config{Arrivals: 1, MaxInSystem: math.MaxInt}, "run.max_in_system: must be at most 33554432"},
	} {
		err := c.cfg.Validate()
		got := ""
		if err != nil {
			got = err.Error()
		}
		if (c.want == "") != (got == "") || !strings.HasPrefix(got, c.want) {
			t.Errorf("%s: got %q, want %q", c.name, got, c.want)
		}
	}
}
