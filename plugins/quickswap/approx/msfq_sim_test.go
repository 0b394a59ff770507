package approx

import (
	"math"
	"sync"
	"testing"

	"github.com/msjfarm/msjfarm/model/workload"
	"github.com/msjfarm/msjfarm/plugins/quickswap"
	"github.com/msjfarm/msjfarm/sdk"
	"github.com/msjfarm/msjfarm/sim"
	"github.com/msjfarm/msjfarm/sim/stats"
)

// simStats are 95% CIs over replications of the simulated MSFQ.
type simStats struct {
	light, heavy, overall, weighted stats.Summary
	phase                           [4]stats.Summary // counters phase<i>_mean
}

// simMSFQ runs n replications (seeds 1..n, two at a time) of the msfq
// policy of plugins/quickswap with threshold ell on the one-or-all
// workload of Q §6.2 (k = 32, p1 = 0.9, μ1 = μk = 1) at rate lam.
func simMSFQ(t testing.TB, lam float64, ell, n int, cfg sim.Config) simStats {
	t.Helper()
	var spec sdk.Spec
	for _, s := range quickswap.Policies {
		if s.Name == "msfq" {
			spec = s
		}
	}
	if spec.New == nil {
		t.Fatal("plugins/quickswap exports no msfq spec")
	}
	wl, err := workload.Named("one-or-all")
	if err != nil {
		t.Fatal(err)
	}
	res := make([]*sim.Result, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	sem := make(chan struct{}, 2)
	for i := range res {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			w, err := wl.Build(lam)
			if err != nil {
				errs[i] = err
				return
			}
			c := cfg
			c.Seed = uint64(i + 1)
			res[i], errs[i] = spec.Run(w, map[string]any{"threshold": ell}, c)
		}()
	}
	wg.Wait()
	var xl, xh, xo, xw []float64
	var xp [4][]float64
	for i, r := range res {
		if errs[i] != nil {
			t.Fatal(errs[i])
		}
		if r.Unstable {
			t.Fatalf("λ = %v seed %d: run flagged unstable", lam, i+1)
		}
		for _, cl := range r.Classes {
			switch cl.Need {
			case 1:
				xl = append(xl, cl.MeanResponse)
			case 32:
				xh = append(xh, cl.MeanResponse)
			}
		}
		xo = append(xo, r.Overall.MeanResponse)
		xw = append(xw, r.WeightedMeanResponse)
		for _, ct := range r.Counters {
			for p := range xp {
				if ct.Name == "phase"+string(rune('1'+p))+"_mean" {
					xp[p] = append(xp[p], ct.Value)
				}
			}
		}
	}
	s := simStats{light: stats.MeanCI(xl, 0.95), heavy: stats.MeanCI(xh, 0.95),
		overall: stats.MeanCI(xo, 0.95), weighted: stats.MeanCI(xw, 0.95)}
	for p := range xp {
		s.phase[p] = stats.MeanCI(xp[p], 0.95)
	}
	return s
}

// TestMSFQAgainstSimulation compares the approximation with the simulated
// msfq policy (plugins/quickswap) on Q §6.2's one-or-all system with ℓ =
// k−1 = 31, the setting of Q Fig. 3: 10 replications per rate.
//
// Tolerances. Q gives no number: it says the approximation is "highly
// accurate at a wide range of arrival rates" (§6.2, Fig. 3) because the
// no-skipped-phase assumption of §5.2 holds with high probability at high
// load. Where that assumption holds in the mean (Result.Consistent) we
// require |approx − sim| <= tol·sim + the simulation's 95% CI half-width:
//
//   - λ = 7 (load 0.90): tol = 5% for all four metrics ("highly
//     accurate"); measured within 1.3%.
//   - λ = 6 (load 0.77): tol = 5% for the heavy class and the weighted
//     mean, 15% for the light class and the overall mean. The light-class
//     gap (measured +9.7%) comes from phases 3 and 4, which the
//     approximation fixes at H3 = 0 (ℓ = k−1) and H4 = Σ_{j<=31} 1/j ≈ 4.03
//     (phase 4 always starts with ℓ light jobs), while simulation measures
//     H3 ≈ 1.07 and H4 ≈ 3.37: phase 3 goes on while no heavy job is
//     present, and phase 4 then starts with fewer than ℓ light jobs.
//   - ℓ = 0 at λ = 6, ℓ = 4 and 16 at λ = 7: tol = 5% (measured within
//     1.5%: -1.0%, +0.2%, +0.9% overall; phase 3 is then long enough that
//     the model's phase-3 chain, Lemmas 4 and 7, dominates the switch).
//
// At λ = 2 and 4 the assumption fails (E[N2L] < k: the formulas give a
// negative E[H2]) and the approximation overestimates the light class
// badly (measured +145% and +48%); the test asserts that this is what
// happens (Consistent is false and the overall mean lies above the CI), so
// a change in either the analysis or the policy that alters it is noticed.
func TestMSFQAgainstSimulation(t *testing.T) {
	type tolerances struct{ light, heavy, overall, weighted float64 }
	for _, c := range []struct {
		ell int
		lam float64
		cfg sim.Config
		tol *tolerances // nil: the approximation is outside its domain
	}{
		{31, 2, sim.Config{Warmup: 20000, Arrivals: 200000}, nil},
		{31, 4, sim.Config{Warmup: 20000, Arrivals: 200000}, nil},
		{31, 6, sim.Config{Warmup: 100000, Arrivals: 1000000}, &tolerances{0.15, 0.05, 0.15, 0.05}},
		{31, 7, sim.Config{Warmup: 100000, Arrivals: 1000000}, &tolerances{0.05, 0.05, 0.05, 0.05}},
		// Thresholds below k−1 exercise phase 3 (Lemmas 4 and 7); ℓ = 0 is MSF.
		{0, 6, sim.Config{Warmup: 100000, Arrivals: 1000000}, &tolerances{0.05, 0.05, 0.05, 0.05}},
		{4, 7, sim.Config{Warmup: 100000, Arrivals: 1000000}, &tolerances{0.05, 0.05, 0.05, 0.05}},
		{16, 7, sim.Config{Warmup: 100000, Arrivals: 1000000}, &tolerances{0.05, 0.05, 0.05, 0.05}},
	} {
		a, err := MSFQ(32, c.ell, c.lam, 0.9, 1, 1)
		if err != nil {
			t.Fatal(err)
		}
		s := simMSFQ(t, c.lam, c.ell, 10, c.cfg)
		for _, m := range []struct {
			name   string
			approx float64
			sim    stats.Summary
			tol    func(*tolerances) float64
		}{
			{"overall", a.Overall, s.overall, func(x *tolerances) float64 { return x.overall }},
			{"weighted", a.Weighted, s.weighted, func(x *tolerances) float64 { return x.weighted }},
			{"light", a.Light, s.light, func(x *tolerances) float64 { return x.light }},
			{"heavy", a.Heavy, s.heavy, func(x *tolerances) float64 { return x.heavy }},
		} {
			rel := (m.approx - m.sim.Mean) / m.sim.Mean
			t.Logf("ℓ = %2d λ = %v %-8s approx %8.4f  sim %8.4f ± %.4f (±%.1f%%)  diff %+6.1f%%",
				c.ell, c.lam, m.name, m.approx, m.sim.Mean, m.sim.HalfWidth, 100*m.sim.RelHalfWidth(), 100*rel)
			if c.tol != nil {
				if tol := m.tol(c.tol); math.Abs(m.approx-m.sim.Mean) > tol*m.sim.Mean+m.sim.HalfWidth {
					t.Errorf("ℓ = %d λ = %v %s: approximation %.4f vs simulation %.4f ± %.4f: off by %+.1f%%, more than %.0f%% + CI",
						c.ell, c.lam, m.name, m.approx, m.sim.Mean, m.sim.HalfWidth, 100*rel, 100*tol)
				}
			}
		}
		for p := range s.phase {
			t.Logf("ℓ = %2d λ = %v E[H%d] approx %7.4f  sim %7.4f ± %.4f", c.ell, c.lam, p+1, a.Phases[p].Mean, s.phase[p].Mean, s.phase[p].HalfWidth)
		}
		if c.tol == nil {
			if a.Consistent || a.Overall <= s.overall.Mean+s.overall.HalfWidth {
				t.Errorf("λ = %v: Consistent = %v, approximation %.4f vs simulation %.4f ± %.4f: expected the documented light-load overestimate",
					c.lam, a.Consistent, a.Overall, s.overall.Mean, s.overall.HalfWidth)
			}
		} else if !a.Consistent {
			t.Errorf("λ = %v: the §5.2 assumption should hold in the mean (E[N1H] = %v, E[N2L] = %v)", c.lam, a.N1H, a.N2L)
		}
	}
}
