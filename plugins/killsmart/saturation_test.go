package killsmart

import (
	"math"
	"testing"

	"github.com/msjfarm/msjfarm/plugins/fcfs"
	"github.com/msjfarm/msjfarm/sim"
	"github.com/msjfarm/msjfarm/sim/simtest"
	"github.com/msjfarm/msjfarm/sim/stats"
)

// The killsmart-one-or-all workload as K §4.5 gives it: p_s = 0.95,
// μ_s = 1/1.25, μ_b = 1/10.
const (
	ps  = 0.95
	muS = 0.8
	muB = 0.1
)

// saturationCase is one overloaded check against K's closed forms.
type saturationCase struct {
	name   string
	mk     func() sim.Policy
	model  *Saturation // nil for FCFS
	lambda float64     // the formula's saturation throughput
}

// checkSaturation runs policies on killsmart-one-or-all far above their
// stability limits and compares the measured throughput (and, for
// Kill-Smart, the wasted power and the extra delays) with K's formulas.
//
// Why overload measures saturation: at λ = 2.4 > λ_ideal ≈ 1.998 the queue
// grows linearly (by thousands of jobs during the warm-up already), so every
// sequence of small jobs between two big jobs is in the buffer when its batch
// starts: the system runs exactly §4.3's saturated cycle, and departures per
// unit time (Result.Throughput) are the saturation throughput λ_max, which
// by the saturation method is the stability limit.
//
// Why N = 2048 is "∞" here: the formulas assume every batch fits. A batch
// has S ~ Geometric (P{S ≥ n} = p_s^n) jobs, P{S > 2048} = 0.95^2049 < 1e−45,
// and a restart phase holds at most (K−1)ν + S_K jobs; with (K−1)ν ≤ 2000
// it overflows N with probability below 0.95^48 ≈ 0.085 per cycle only if
// the box is full, and the box holds Σ min(S_i, ν) — for (21, 100) of mean
// 20·19 ≈ 380, so overflow needs S_K > 1600: P < 1e−35. No finite-N bias.
//
// Tolerance: the 99% Student-t half-width over n independent replications
// (seeds 1..n, each with its own warm-up), plus the window-boundary bias of a
// renewal-reward estimate: the window opens and closes at arrival instants
// inside a cycle, so each end can misattribute at most about one cycle's
// worth of departures (or kills, or delays) out of window/E[T_C] cycles — a
// relative allowance of 2·E[T_C]/window (≈ 0.03% for FCFS, ≈ 0.1–0.2% for
// Kill-Smart here).
func checkSaturation(t *testing.T, cases []saturationCase, n int, arrivals int64) {
	const rate = 2.4
	w := simtest.Named(t, "killsmart-one-or-all", rate)
	cfg := sim.Config{Warmup: 20000, Arrivals: arrivals, DrainLimit: 1}
	window := float64(arrivals) / rate
	for _, c := range cases {
		rs := simtest.Replicate(t, w, c.mk, n, cfg)
		for _, r := range rs {
			if !r.Unstable {
				t.Fatalf("%s: not flagged unstable at λ = %v, above the saturation throughput %v", c.name, rate, c.lambda)
			}
		}
		etc := 1 / ((1 - ps) * c.lambda) // FCFS: one big job per cycle
		if c.model != nil {
			etc = c.model.ETC()
		}
		bias := 2 * etc / window
		check := func(what string, s stats.Summary, want float64) {
			tol := s.HalfWidth + bias*math.Abs(want)
			t.Logf("%s: %s = %.5g ± %.2g (99%% CI, n=%d), formula %.5g (Δ = %+.3g, tolerance %.2g)",
				c.name, what, s.Mean, s.HalfWidth, s.N, want, s.Mean-want, tol)
			if math.Abs(s.Mean-want) > tol {
				t.Errorf("%s: %s = %.5g, formula %.5g: |Δ| > %.2g", c.name, what, s.Mean, want, tol)
			}
		}
		check("throughput", simtest.CI(rs, func(r *sim.Result) float64 { return r.Throughput }, 0.99), c.lambda)
		if c.model == nil {
			continue
		}
		m := *c.model
		check("wasted power (Lemma 4.5)", simtest.CI(rs, func(r *sim.Result) float64 { return simtest.Counter(t, r, "wasted_power") }, 0.99), m.WastedPower())
		check("extra delay per preempted job (Lemma 4.7)", simtest.CI(rs, func(r *sim.Result) float64 { return simtest.Counter(t, r, "extra_delay_preempted") }, 0.99), m.ExtraDelayPreempted())
		check("extra delay per small job (Lemma 4.6)", simtest.CI(rs, func(r *sim.Result) float64 { return simtest.Counter(t, r, "extra_delay_per_small_job") }, 0.99), m.ExtraDelaySmall())
	}
}

func ksCase(K, nu int) saturationCase {
	m := &Saturation{Ps: ps, MuS: muS, MuB: muB, K: K, Nu: nu}
	return saturationCase{
		name:   "killsmart K=" + itoa(K) + " ν=" + itoa(nu),
		mk:     func() sim.Policy { return New(OneOrAll, K, nu) },
		model:  m,
		lambda: m.LambdaMax(),
	}
}

func itoa(i int) string {
	if i < 10 {
		return string(rune('0' + i))
	}
	return itoa(i/10) + string(rune('0'+i%10))
}

// TestSaturationThroughput: FCFS's throughput in overload is its saturation
// throughput of K §4.4, 1.4551; Kill-Smart's is Theorem 4.4's (1.7860 for
// K = 7, ν = 19; 1.5818 for K = 3, ν = 5; 1.9248 for K = 21, ν = 100, the
// Fig. 4 configurations), with Lemmas 4.5–4.7 for wasted power and extra
// delays. See checkSaturation for the method and the tolerance.
func TestSaturationThroughput(t *testing.T) {
	cases := []saturationCase{
		{name: "fcfs", mk: func() sim.Policy { return &fcfs.FCFS{} }, lambda: FCFSLambdaMax(ps, muS, muB)},
		ksCase(7, 19),
		ksCase(3, 5),
		ksCase(21, 100),
	}
	checkSaturation(t, cases, 20, 300000)
}

// TestStableBetweenLimits: at λ = 1.6, between FCFS's stability limit
// (1.4551) and Kill-Smart's (1.7860 for K = 7, ν = 19; 1.92 for the default
// K = 21, ν = 102), FCFS is flagged unstable on every replication and serves
// only about its saturation throughput, while Kill-Smart is stable on every
// replication (engine flags off: no growth of the number in system, every
// measured job departs) and serves what arrives. So Kill-Smart's largest
// stable arrival rate is above FCFS's, as K Fig. 2a and Fig. 4a show.
//
// Tolerances: FCFS's throughput must be below λ by more than the 99% CI
// half-width (it is ≈ 1.455 by TestSaturationThroughput, 9% below λ);
// Kill-Smart's throughput must contain λ within its 99% CI half-width plus
// the window-boundary term 2·E[T_C]/window (see checkSaturation), since a
// stable system's departures equal its arrivals in the long run.
func TestStableBetweenLimits(t *testing.T) {
	const rate = 1.6
	w := simtest.Named(t, "killsmart-one-or-all", rate)
	cfg := sim.Config{Warmup: 20000, Arrivals: 200000}
	n := 8
	// FCFS runs twice as long: 10% over its limit the queue drifts up by
	// ≈ 0.15 jobs per unit of time under swings of thousands, and at 2·10⁵
	// arrivals the growth test's statistic fell below its critical value
	// (17.6) on 2 of 24 seeds (least 11.4); at 4·10⁵ the least of 24 seeds
	// was 31.7.
	long := cfg
	long.Arrivals = 400000
	rf := simtest.Replicate(t, w, func() sim.Policy { return &fcfs.FCFS{} }, n, long)
	for _, r := range rf {
		if !r.Unstable {
			t.Errorf("fcfs: seed %d not flagged unstable at λ = %v > 1.4551", r.Seed, rate)
		}
	}
	sf := simtest.CI(rf, func(r *sim.Result) float64 { return r.Throughput }, 0.99)
	t.Logf("fcfs at λ = %v: throughput %.4f ± %.2g", rate, sf.Mean, sf.HalfWidth)
	if sf.Mean+sf.HalfWidth >= rate {
		t.Errorf("fcfs throughput %.4f ± %.2g: not below λ = %v", sf.Mean, sf.HalfWidth, rate)
	}
	for _, c := range []struct {
		name string
		K    int
		nu   int
	}{{"killsmart K=7 ν=19", 7, 19}, {"killsmart defaults", DefaultKOneOrAll, -1}} {
		rk := simtest.Replicate(t, w, func() sim.Policy { return New(OneOrAll, c.K, c.nu) }, n, cfg)
		for _, r := range rk {
			if r.Unstable {
				t.Errorf("%s: seed %d flagged unstable at λ = %v: %+v", c.name, r.Seed, rate, r.Instability)
			}
		}
		nu := c.nu
		if nu < 0 {
			nu = 2048 / (c.K - 1)
		}
		m := Saturation{Ps: ps, MuS: muS, MuB: muB, K: c.K, Nu: nu}
		sk := simtest.CI(rk, func(r *sim.Result) float64 { return r.Throughput }, 0.99)
		tol := sk.HalfWidth + 2*m.ETC()/(float64(cfg.Arrivals)/rate)*rate
		t.Logf("%s at λ = %v (limit %.4f): throughput %.4f ± %.2g, E[T] = %.4g, wasted power %.4g",
			c.name, rate, m.LambdaMax(), sk.Mean, sk.HalfWidth,
			simtest.CI(rk, func(r *sim.Result) float64 { return r.Overall.MeanResponse }, 0.99).Mean,
			simtest.CI(rk, func(r *sim.Result) float64 { return simtest.Counter(t, r, "wasted_power") }, 0.99).Mean)
		if math.Abs(sk.Mean-rate) > tol {
			t.Errorf("%s: throughput %.4f, want λ = %v within %.2g", c.name, sk.Mean, rate, tol)
		}
	}
}

// TestBorgBSaturation: on Borg cell B, overloaded (λ = 2.5, FCFS's stability
// limit there is below 1.5), Kill-Smart (Algorithm 1, the paper's K = 5,
// ν = 512) serves more jobs per unit time than FCFS: K §5.1's claim that the
// killing policy allows higher throughput on the Borg workloads. The
// replications use common random numbers (seed i for both policies), so the
// comparison is on the paired differences: their 99% CI must lie above 0.
func TestBorgBSaturation(t *testing.T) {
	w := simtest.Named(t, "borg-b", 2.5)
	cfg := sim.Config{Warmup: 20000, Arrivals: 1000000, DrainLimit: 1}
	n := 10
	rf := simtest.Replicate(t, w, func() sim.Policy { return &fcfs.FCFS{} }, n, cfg)
	rk := simtest.Replicate(t, w, func() sim.Policy { return New(MultiClass, 5, 512) }, n, cfg)
	d := make([]float64, n)
	for i := range d {
		d[i] = rk[i].Throughput - rf[i].Throughput
	}
	s := stats.MeanCI(d, 0.99)
	t.Logf("borg-b λ = 2.5: fcfs throughput %.4f, killsmart-multiclass (5, 512) %.4f; difference %.4f ± %.2g (99%% CI)",
		simtest.CI(rf, func(r *sim.Result) float64 { return r.Throughput }, 0.99).Mean,
		simtest.CI(rk, func(r *sim.Result) float64 { return r.Throughput }, 0.99).Mean, s.Mean, s.HalfWidth)
	if s.Mean-s.HalfWidth <= 0 {
		t.Errorf("Kill-Smart's throughput gain over FCFS %.4f ± %.2g is not significantly positive", s.Mean, s.HalfWidth)
	}
	if wp := simtest.CI(rk, func(r *sim.Result) float64 { return simtest.Counter(t, r, "wasted_power") }, 0.99); !(wp.Mean > 0) {
		t.Errorf("no wasted power on borg-b: %v", wp.Mean)
	}
}
