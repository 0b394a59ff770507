package srpt_test

import (
	"testing"

	"github.com/msjfarm/msjfarm/plugins/fcfs"
	"github.com/msjfarm/msjfarm/plugins/maxweight"
	"github.com/msjfarm/msjfarm/plugins/srpt"
	"github.com/msjfarm/msjfarm/sim"
)

// TestS6Stability: S §6 reports GreedySRPT and FirstFitSRPT unstable for
// ρ >= 0.85 on the powers-of-two system while MaxWeight (throughput-optimal)
// is stable. At ρ = 0.9 the engine must flag both heuristics and not
// MaxWeight, on each of seeds 1..3. The heuristics saturate near
// utilisation 0.62 and 0.68 (see GreedySRPT), so their queues grow by
// thousands of jobs over the window and the growth and drain rules fire.
func TestS6Stability(t *testing.T) {
	w := powersOfTwo(t, "powers-of-two", 0.9)
	for seed := uint64(1); seed <= 3; seed++ {
		cfg := sim.Config{Seed: seed, Warmup: 20000, Arrivals: 200000}
		for _, p := range []sim.Policy{&srpt.GreedySRPT{}, &srpt.FirstFitSRPT{}, &maxweight.MaxWeight{}} {
			r, err := sim.Run(w, p, cfg)
			if err != nil {
				t.Fatal(err)
			}
			_, isMW := p.(*maxweight.MaxWeight)
			t.Logf("seed %d %T: %v", seed, p, r)
			if r.Unstable == isMW {
				t.Errorf("seed %d %T: unstable = %v, want %v (%+v)", seed, p, r.Unstable, !isMW, r.Instability)
			}
		}
	}
}

// TestS6Ratios logs E[T]/E[T_SRPT-1] on the powers-of-two system at
// ρ = 0.5, 0.8, 0.9 with common random numbers (one replication each; the
// long version, s6_long_test.go, gives CIs over replications) and checks
// the lower bound: every stable policy's ratio exceeds 1.
func TestS6Ratios(t *testing.T) {
	for _, rho := range []float64{0.5, 0.8, 0.9} {
		w := powersOfTwo(t, "powers-of-two", rho)
		cfg := sim.Config{Seed: 1, Warmup: 20000, Arrivals: 200000}
		ref, err := srpt.RunSRPT1(w, cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("ρ=%.2f SRPT-1: %v", rho, ref)
		for _, p := range []sim.Policy{&srpt.GreedySRPT{}, &srpt.FirstFitSRPT{}, &maxweight.MaxWeight{}, &maxweight.Myopic{}, &fcfs.FCFS{}} {
			r, err := sim.Run(w, p, cfg)
			if err != nil {
				t.Fatal(err)
			}
			ratio := r.Overall.MeanResponse / ref.Overall.MeanResponse
			t.Logf("ρ=%.2f %-22T ratio %8.3f unstable=%v", rho, p, ratio, r.Unstable)
			if !r.Unstable && !(ratio > 1) {
				t.Errorf("ρ=%.2f %T: ratio %v not above 1", rho, p, ratio)
			}
		}
	}
}
