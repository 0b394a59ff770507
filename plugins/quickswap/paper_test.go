package quickswap_test

import (
	"math"
	"reflect"
	"testing"

	"github.com/msjfarm/msjfarm/plugins/fcfs"
	"github.com/msjfarm/msjfarm/plugins/firstfit"
	"github.com/msjfarm/msjfarm/plugins/msf"
	"github.com/msjfarm/msjfarm/plugins/quickswap"
	"github.com/msjfarm/msjfarm/sim"
	"github.com/msjfarm/msjfarm/sim/simtest"
	"github.com/msjfarm/msjfarm/sim/stats"
)

func meanT(r *sim.Result) float64   { return r.Overall.MeanResponse }
func weightT(r *sim.Result) float64 { return r.WeightedMeanResponse }
func counter(name string) func(*sim.Result) float64 {
	return func(r *sim.Result) float64 { return counters(r)[name] }
}

// TestOneOrAllHeavyLoad reproduces Q Fig. 3–4 at λ = 7.5 on one-or-all
// (k = 32, p1 = 0.9, exponential mean 1; ρ = 0.961): MSFQ with ℓ = k−1 has
// a mean response time at least 10 times lower than MSF's (Q reports about
// two orders of magnitude at high λ), compared with 95% CIs over 10
// replications: upper bound of MSFQ × 10 < lower bound of MSF. MSF is run
// both as msf.MSF and as MSFQ with ℓ = 0, which must agree bit for bit, so
// that MSF's phase durations can be read (Q Fig. 4: MSFQ's phases 1 and 2
// are much shorter than MSF's). FCFS, whose saturation throughput is about
// 3 there, is flagged unstable in every replication.
func TestOneOrAllHeavyLoad(t *testing.T) {
	w := simtest.Named(t, "one-or-all", 7.5)
	cfg := sim.Config{Warmup: 100000, Arrivals: 1000000}
	q := simtest.Replicate(t, w, func() sim.Policy { return quickswap.NewMSFQ(31) }, 10, cfg)
	m := simtest.Replicate(t, w, func() sim.Policy { return &msf.MSF{} }, 10, cfg)
	m0 := simtest.Replicate(t, w, func() sim.Policy { return quickswap.NewMSFQ(0) }, 10, cfg)
	for i := range m {
		if !reflect.DeepEqual(withoutCounters(m[i]), withoutCounters(m0[i])) {
			t.Fatalf("seed %d: MSF and MSFQ(ℓ=0) results differ", i+1)
		}
	}
	tq, tm := simtest.CI(q, meanT, 0.95), simtest.CI(m, meanT, 0.95)
	t.Logf("E[T]: MSFQ(31) %.2f ± %.2f, MSF %.2f ± %.2f (ratio %.1f)", tq.Mean, tq.HalfWidth, tm.Mean, tm.HalfWidth, tm.Mean/tq.Mean)
	if 10*(tq.Mean+tq.HalfWidth) >= tm.Mean-tm.HalfWidth {
		t.Errorf("MSFQ not 10× better than MSF: %.2f ± %.2f vs %.2f ± %.2f", tq.Mean, tq.HalfWidth, tm.Mean, tm.HalfWidth)
	}
	wq, wm := simtest.CI(q, weightT, 0.95), simtest.CI(m, weightT, 0.95)
	t.Logf("weighted E[T]: MSFQ(31) %.2f ± %.2f, MSF %.2f ± %.2f", wq.Mean, wq.HalfWidth, wm.Mean, wm.HalfWidth)
	if wq.Mean+wq.HalfWidth >= wm.Mean-wm.HalfWidth {
		t.Errorf("MSFQ's weighted mean response time not below MSF's")
	}
	for z := 1; z <= 2; z++ {
		name := "phase" + string(rune('0'+z)) + "_mean"
		pq, pm := simtest.CI(q, counter(name), 0.95), simtest.CI(m0, counter(name), 0.95)
		t.Logf("%s: MSFQ(31) %.2f ± %.2f, MSF %.2f ± %.2f", name, pq.Mean, pq.HalfWidth, pm.Mean, pm.HalfWidth)
		if pq.Mean+pq.HalfWidth >= pm.Mean-pm.HalfWidth {
			t.Errorf("%s: MSFQ's not shorter than MSF's", name)
		}
	}
	// Phase 4 drains at most ℓ light jobs with exponential(1) sizes, so its
	// mean is at most E[max of ℓ exponentials] = H_ℓ (Q Lemma 8, which
	// assumes exactly ℓ: with no heavy job waiting, phase 3 continues past
	// n1 = ℓ and a later heavy arrival starts phase 4 with fewer).
	h := 0.0
	for j := 1; j <= 31; j++ {
		h += 1 / float64(j)
	}
	p4 := simtest.CI(q, counter("phase4_mean"), 0.95)
	t.Logf("phase4_mean %.3f ± %.3f, H_31 = %.3f", p4.Mean, p4.HalfWidth, h)
	if p4.Mean-p4.HalfWidth > h {
		t.Errorf("phase 4 mean %.3f ± %.3f exceeds H_ℓ = %.3f", p4.Mean, p4.HalfWidth, h)
	}
	for _, r := range q {
		var sum float64
		for z := 1; z <= 4; z++ {
			sum += counters(r)["phase"+string(rune('0'+z))+"_fraction"]
		}
		if math.Abs(sum-1) > 1e-9 {
			t.Errorf("phase fractions sum to %v", sum)
		}
	}
	f := simtest.Replicate(t, w, func() sim.Policy { return &fcfs.FCFS{} }, 5, sim.Config{Warmup: 10000, Arrivals: 100000})
	for i, r := range f {
		if !r.Unstable {
			t.Errorf("FCFS seed %d at λ = 7.5 not flagged unstable", i+1)
		}
	}
}

// TestFourClass reproduces Q Fig. 5 at λ = 4.5 on four-class (k = 15, needs
// 1, 3, 5, 15; ρ = 0.9): Static and Adaptive Quickswap (defaults) have a
// lower weighted mean response time than MSF and First-Fit; the upper 95%
// CI bound of each Quickswap policy is below the lower bound of each
// competitor (10 replications). Q also reports Adaptive slightly better
// than Static: logged, not asserted.
func TestFourClass(t *testing.T) {
	w := simtest.Named(t, "four-class", 4.5)
	cfg := sim.Config{Warmup: 20000, Arrivals: 200000}
	qs := map[string]stats.Summary{
		"static":   simtest.CI(simtest.Replicate(t, w, func() sim.Policy { return quickswap.NewStatic(-1, "", "") }, 10, cfg), weightT, 0.95),
		"adaptive": simtest.CI(simtest.Replicate(t, w, func() sim.Policy { return &quickswap.Adaptive{} }, 10, cfg), weightT, 0.95),
	}
	others := map[string]stats.Summary{
		"msf":       simtest.CI(simtest.Replicate(t, w, func() sim.Policy { return &msf.MSF{} }, 10, cfg), weightT, 0.95),
		"first-fit": simtest.CI(simtest.Replicate(t, w, func() sim.Policy { return &firstfit.FirstFit{} }, 10, cfg), weightT, 0.95),
	}
	for n, s := range qs {
		t.Logf("%s: weighted E[T] %.2f ± %.2f", n, s.Mean, s.HalfWidth)
	}
	for n, s := range others {
		t.Logf("%s: weighted E[T] %.2f ± %.2f", n, s.Mean, s.HalfWidth)
	}
	for qn, q := range qs {
		for on, o := range others {
			if q.Mean+q.HalfWidth >= o.Mean-o.HalfWidth {
				t.Errorf("%s (%.2f ± %.2f) not below %s (%.2f ± %.2f)", qn, q.Mean, q.HalfWidth, on, o.Mean, o.HalfWidth)
			}
		}
	}
}

// TestUtilisation: for a stable non-preemptive policy the long-run
// utilisation equals the offered load, within the 95% CI over 10
// replications. MSFQ and Static Quickswap are throughput-optimal on
// one-or-all (Q Thm 1, Remark 1) and Static on four-class (all needs divide
// k, Remark 1); the loads are inside those regions (one-or-all λ = 7,
// ρ = 0.897; four-class λ = 4, ρ = 0.8). Adaptive has no stability proof
// (Q §6.3); it is checked at the same points, where it is stable in
// simulation. The engine's "growth" heuristic flags some of these bursty
// but stable runs, so stability is asserted as: every measured job left.
func TestUtilisation(t *testing.T) {
	for _, tc := range []struct {
		name string
		mk   func() sim.Policy
		wl   string
		rate float64
	}{
		{"msfq", func() sim.Policy { return quickswap.NewMSFQ(-1) }, "one-or-all", 7},
		{"msfq-l8", func() sim.Policy { return quickswap.NewMSFQ(8) }, "one-or-all", 7},
		{"static", func() sim.Policy { return quickswap.NewStatic(-1, "", "") }, "one-or-all", 7},
		{"static", func() sim.Policy { return quickswap.NewStatic(-1, "", "") }, "four-class", 4},
		{"static-seq", func() sim.Policy { return quickswap.NewStatic(-1, "", "sequential") }, "four-class", 4},
		{"adaptive", func() sim.Policy { return &quickswap.Adaptive{} }, "one-or-all", 7},
		{"adaptive", func() sim.Policy { return &quickswap.Adaptive{} }, "four-class", 4},
	} {
		w := simtest.Named(t, tc.wl, tc.rate)
		rs := simtest.Replicate(t, w, tc.mk, 10, sim.Config{Warmup: 20000, Arrivals: 200000})
		for i, r := range rs {
			if r.Instability != nil && r.Instability.Undeparted > 0 {
				t.Fatalf("%s %s seed %d: measured jobs never left: %+v", tc.name, tc.wl, i+1, r.Instability)
			}
		}
		u, rho := simtest.CI(rs, func(r *sim.Result) float64 { return r.Utilization }, 0.95), w.Load()
		t.Logf("%s %s λ=%v: utilisation %.4f ± %.4f, load %.4f", tc.name, tc.wl, tc.rate, u.Mean, u.HalfWidth, rho)
		if math.Abs(u.Mean-rho) > u.HalfWidth {
			t.Errorf("%s %s: utilisation %.4f ± %.4f, load %.4f", tc.name, tc.wl, u.Mean, u.HalfWidth, rho)
		}
	}
}

// TestInvariantsLong: the model's invariants on long random runs of every
// policy of the family (MSFQ on one-or-all only).
func TestInvariantsLong(t *testing.T) {
	cfg := sim.Config{Seed: 3, Warmup: 1000, Arrivals: 100000}
	for _, wl := range []struct {
		name string
		rate float64
	}{{"one-or-all", 7.5}, {"four-class", 4.5}, {"borg-b", 2}} {
		w := simtest.Named(t, wl.name, wl.rate)
		ps := []sim.Policy{
			quickswap.NewStatic(-1, "", ""), quickswap.NewStatic(3, "asc", "sequential"), &quickswap.Adaptive{},
		}
		if wl.name == "one-or-all" {
			ps = append(ps, quickswap.NewMSFQ(-1), quickswap.NewMSFQ(5))
		}
		for _, p := range ps {
			_, evs := simtest.Record(t, w, p, cfg)
			simtest.CheckInvariants(t, w, p, evs, false)
		}
	}
	w := many(2.5)
	for _, p := range []sim.Policy{quickswap.NewStatic(-1, "", ""), &quickswap.Adaptive{}} {
		_, evs := simtest.Record(t, w, p, cfg)
		simtest.CheckInvariants(t, w, p, evs, false)
	}
}

// TestReuse: a policy instance reused for the next replication gives the
// result of a fresh one (Init resets all state).
func TestReuse(t *testing.T) {
	cfg := sim.Config{Seed: 4, Warmup: 1000, Arrivals: 20000}
	for _, tc := range []struct {
		wl string
		mk func() sim.Policy
	}{
		{"one-or-all", func() sim.Policy { return quickswap.NewMSFQ(-1) }},
		{"four-class", func() sim.Policy { return quickswap.NewStatic(-1, "", "") }},
		{"four-class", func() sim.Policy { return &quickswap.Adaptive{} }},
	} {
		w := simtest.Named(t, tc.wl, 4.5)
		p := tc.mk()
		if _, err := sim.Run(w, p, sim.Config{Seed: 9, Warmup: 100, Arrivals: 5000}); err != nil {
			t.Fatal(err)
		}
		a, err := sim.Run(w, p, cfg)
		if err != nil {
			t.Fatal(err)
		}
		b, err := sim.Run(w, tc.mk(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(a, b) {
			t.Errorf("%s: reused instance differs from a fresh one", tc.wl)
		}
	}
}
