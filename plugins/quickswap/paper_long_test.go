//go:build long

package quickswap_test

import (
	"testing"

	"github.com/msjfarm/msjfarm/plugins/firstfit"
	"github.com/msjfarm/msjfarm/plugins/msf"
	"github.com/msjfarm/msjfarm/plugins/quickswap"
	"github.com/msjfarm/msjfarm/sim"
	"github.com/msjfarm/msjfarm/sim/simtest"
)

// TestOneOrAllSweepLong: Q Fig. 3 across arrival rates on one-or-all
// (k = 32): MSFQ (ℓ = k−1) has a lower mean and weighted mean response time
// than MSF and First-Fit at every λ from 6 to 7.7 (ρ = 0.77–0.99), upper
// 95% CI bound below the competitors' lower bounds (20 replications).
// Logged: the ratio MSF/MSFQ, which Q reports reaching two orders of
// magnitude at high λ.
func TestOneOrAllSweepLong(t *testing.T) {
	for _, rate := range []float64{6, 7, 7.5, 7.7} {
		w := simtest.Named(t, "one-or-all", rate)
		cfg := sim.Config{Warmup: 200000, Arrivals: 2000000}
		q := simtest.Replicate(t, w, func() sim.Policy { return quickswap.NewMSFQ(-1) }, 20, cfg)
		for name, mk := range map[string]func() sim.Policy{
			"msf":       func() sim.Policy { return &msf.MSF{} },
			"first-fit": func() sim.Policy { return &firstfit.FirstFit{} },
		} {
			o := simtest.Replicate(t, w, mk, 20, cfg)
			for _, m := range []struct {
				name string
				f    func(*sim.Result) float64
			}{{"E[T]", meanT}, {"weighted E[T]", weightT}} {
				a, b := simtest.CI(q, m.f, 0.95), simtest.CI(o, m.f, 0.95)
				t.Logf("λ=%v %s: MSFQ %.2f ± %.2f, %s %.2f ± %.2f (ratio %.1f)", rate, m.name, a.Mean, a.HalfWidth, name, b.Mean, b.HalfWidth, b.Mean/a.Mean)
				if a.Mean+a.HalfWidth >= b.Mean-b.HalfWidth {
					t.Errorf("λ=%v %s: MSFQ not below %s", rate, m.name, name)
				}
			}
		}
	}
}

// TestFourClassSweepLong: Q Fig. 5 across arrival rates on four-class
// (k = 15): Static and Adaptive Quickswap below MSF and First-Fit in
// weighted mean response time at λ = 4, 4.5, 4.8 (ρ = 0.8–0.96), 95% CIs
// over 20 replications.
func TestFourClassSweepLong(t *testing.T) {
	for _, rate := range []float64{4, 4.5, 4.8} {
		w := simtest.Named(t, "four-class", rate)
		cfg := sim.Config{Warmup: 100000, Arrivals: 1000000}
		qs := map[string]func() sim.Policy{
			"static":   func() sim.Policy { return quickswap.NewStatic(-1, "", "") },
			"adaptive": func() sim.Policy { return &quickswap.Adaptive{} },
		}
		others := map[string]func() sim.Policy{
			"msf":       func() sim.Policy { return &msf.MSF{} },
			"first-fit": func() sim.Policy { return &firstfit.FirstFit{} },
		}
		res := map[string][]*sim.Result{}
		for n, mk := range qs {
			res[n] = simtest.Replicate(t, w, mk, 20, cfg)
		}
		for n, mk := range others {
			res[n] = simtest.Replicate(t, w, mk, 20, cfg)
		}
		for n, rs := range res {
			s := simtest.CI(rs, weightT, 0.95)
			t.Logf("λ=%v %s: weighted E[T] %.2f ± %.2f", rate, n, s.Mean, s.HalfWidth)
		}
		for qn := range qs {
			for on := range others {
				a, b := simtest.CI(res[qn], weightT, 0.95), simtest.CI(res[on], weightT, 0.95)
				if a.Mean+a.HalfWidth >= b.Mean-b.HalfWidth {
					t.Errorf("λ=%v: %s (%.2f ± %.2f) not below %s (%.2f ± %.2f)", rate, qn, a.Mean, a.HalfWidth, on, b.Mean, b.HalfWidth)
				}
			}
		}
	}
}
