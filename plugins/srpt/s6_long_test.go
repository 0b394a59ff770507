//go:build long

package srpt_test

import (
	"fmt"
	"testing"

	"github.com/msjfarm/msjfarm/plugins/fcfs"
	"github.com/msjfarm/msjfarm/plugins/maxweight"
	"github.com/msjfarm/msjfarm/plugins/srpt"
	"github.com/msjfarm/msjfarm/sim"
	"github.com/msjfarm/msjfarm/sim/stats"
)

// TestS6RatiosLong is S §6 (Fig. 2–4) at paper-like scale: the ratio
// E[T_π]/E[T_SRPT-1] on the powers-of-two systems (exponential and C² = 10
// durations), common random numbers, Student-t 95% CIs over 10 independent
// replications (seeds 1..10) of 10^6 measured arrivals. A policy is reported
// unstable at a load if any replication was flagged. Checks: GreedySRPT and
// FirstFitSRPT flagged at every ρ >= 0.85 (S §6), MaxWeight never, and every
// stable ratio above 1 (SRPT-1 is a lower bound).
func TestS6RatiosLong(t *testing.T) {
	const reps = 10
	policies := []struct {
		name string
		mk   func() sim.Policy
	}{
		{"greedy-srpt", func() sim.Policy { return &srpt.GreedySRPT{} }},
		{"firstfit-srpt", func() sim.Policy { return &srpt.FirstFitSRPT{} }},
		{"maxweight", func() sim.Policy { return &maxweight.MaxWeight{} }},
		{"maxweight-np", func() sim.Policy { return &maxweight.Myopic{} }},
		{"fcfs", func() sim.Policy { return &fcfs.FCFS{} }},
	}
	for _, wl := range []string{"powers-of-two", "powers-of-two-h2"} {
		for _, rho := range []float64{0.5, 0.6, 0.7, 0.8, 0.85, 0.9, 0.95} {
			w := powersOfTwo(t, wl, rho)
			ratios := make([][]float64, len(policies))
			unstable := make([]bool, len(policies))
			var refT []float64
			for seed := uint64(1); seed <= reps; seed++ {
				cfg := sim.Config{Seed: seed, Warmup: 100000, Arrivals: 1000000}
				ref, err := srpt.RunSRPT1(w, cfg)
				if err != nil {
					t.Fatal(err)
				}
				refT = append(refT, ref.Overall.MeanResponse)
				for i, p := range policies {
					r, err := sim.Run(w, p.mk(), cfg)
					if err != nil {
						t.Fatal(err)
					}
					ratios[i] = append(ratios[i], r.Overall.MeanResponse/ref.Overall.MeanResponse)
					unstable[i] = unstable[i] || r.Unstable
				}
			}
			s := stats.MeanCI(refT, 0.95)
			line := fmt.Sprintf("%-16s ρ=%.2f SRPT-1 E[T]=%.4f±%.4f |", wl, rho, s.Mean, s.HalfWidth)
			for i, p := range policies {
				c := stats.MeanCI(ratios[i], 0.95)
				if unstable[i] {
					line += fmt.Sprintf(" %s unstable |", p.name)
				} else {
					line += fmt.Sprintf(" %s %.3f±%.3f |", p.name, c.Mean, c.HalfWidth)
					if !(c.Mean-c.HalfWidth > 1) {
						t.Errorf("%s ρ=%.2f %s: ratio %.4f ± %.4f not above 1", wl, rho, p.name, c.Mean, c.HalfWidth)
					}
				}
				heuristic := i < 2
				if wl == "powers-of-two" && rho >= 0.85 && heuristic && !unstable[i] {
					t.Errorf("%s ρ=%.2f: %s not flagged unstable", wl, rho, p.name)
				}
				if p.name == "maxweight" && unstable[i] {
					t.Errorf("%s ρ=%.2f: maxweight flagged unstable", wl, rho)
				}
			}
			t.Log(line)
		}
	}
}

// TestSRPT1MM1Long: SRPT-1 on k = 1 is M/M/1-SRPT; at ρ = 0.5, 0.9 and
// 0.95 the Schrage–Miller value must lie in the 95% CI over 30 replications
// of 10^6 arrivals.
func TestSRPT1MM1Long(t *testing.T) {
	for _, rho := range []float64{0.5, 0.9, 0.95} {
		exact := mm1SRPT(rho)
		var ts []float64
		for seed := uint64(1); seed <= 30; seed++ {
			r, err := srpt.RunSRPT1(oneClass(1, 1, rho), sim.Config{Seed: seed, Warmup: 100000, Arrivals: 1000000})
			if err != nil {
				t.Fatal(err)
			}
			ts = append(ts, r.Overall.MeanResponse)
		}
		s := stats.MeanCI(ts, 0.95)
		t.Logf("ρ=%.2f: E[T] = %.5f ± %.5f, Schrage–Miller %.5f, FCFS %.5f", rho, s.Mean, s.HalfWidth, exact, 1/(1-rho))
		if s.Mean-s.HalfWidth > exact || s.Mean+s.HalfWidth < exact {
			t.Errorf("ρ=%.2f: exact %.5f outside the CI", rho, exact)
		}
	}
}
