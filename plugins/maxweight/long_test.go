//go:build long

package maxweight_test

import (
	"math"
	"testing"

	"github.com/msjfarm/msjfarm/plugins/maxweight"
	"github.com/msjfarm/msjfarm/sim"
	"github.com/msjfarm/msjfarm/sim/simtest"
	"github.com/msjfarm/msjfarm/sim/stats"
)

// TestStableLong: MaxWeight is throughput-optimal, so on the powers-of-two
// systems it must be stable at every ρ < 1: at ρ = 0.95 and 0.98 no
// replication of 10^6 arrivals (seeds 1..10) may be flagged, and the
// utilisation must equal the load within its 95% CI over the replications.
func TestStableLong(t *testing.T) {
	for _, wl := range []string{"powers-of-two", "powers-of-two-h2"} {
		for _, rho := range []float64{0.95, 0.98} {
			w := simtest.Named(t, wl, rho/0.46875)
			var us, ts []float64
			for seed := uint64(1); seed <= 10; seed++ {
				r, err := sim.Run(w, &maxweight.MaxWeight{}, sim.Config{Seed: seed, Warmup: 100000, Arrivals: 1000000})
				if err != nil {
					t.Fatal(err)
				}
				if r.Unstable {
					t.Errorf("%s ρ=%.2f seed %d: flagged %+v", wl, rho, seed, r.Instability)
				}
				us = append(us, r.Utilization)
				ts = append(ts, r.Overall.MeanResponse)
			}
			u, e := stats.MeanCI(us, 0.95), stats.MeanCI(ts, 0.95)
			t.Logf("%s ρ=%.2f: E[T] = %.3f ± %.3f, utilisation %.4f ± %.4f", wl, rho, e.Mean, e.HalfWidth, u.Mean, u.HalfWidth)
			if math.Abs(u.Mean-rho) > u.HalfWidth {
				t.Errorf("%s ρ=%.2f: utilisation %.4f ± %.4f", wl, rho, u.Mean, u.HalfWidth)
			}
		}
	}
}
